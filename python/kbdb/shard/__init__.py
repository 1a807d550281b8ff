"""Sharded collections: one knowledge base split into several, searched as one with the
collection's statistics (``layout`` on disk, ``server`` per shard, ``coordinator``)."""
