"""Maintenance (SPEC §8): the integrity check, garbage collection, export and import.

``KnowledgeBase.check``/``gc``/``export``/``import_snapshot`` call into this package;
``rebuild`` lives with the indexes it regenerates (``search/``).
"""
