"""A small Obsidian-style vault whose notes link to each other, for the tests of the link
surfaces (the API's ``related`` and ``search_context``, ``kbdb links``/``backlinks``, the
MCP ``links`` and ``context`` tools).

The links: Home links to Databases, to Caching with a label, and (from its Operations
section) to Runbook's Rollback heading; Databases (alias "DB notes") links from its
Connection pool section to Caching; Caching links to "DB notes", the alias; Runbook's
Rollback links to Home and its Checklist to its own Deploy heading; Glossary's one link
names no note (dangling).
"""

from __future__ import annotations

from pathlib import Path

CACHING_TEXT = (
    "Redis caches sessions for 15 minutes. Keys carry the user id and expire on their own; "
    "a cold cache costs one database read per request until it warms up again. Eviction is "
    "least recently used, and the instance is sized for a day of peak traffic. Its settings "
    "sit with the [[DB notes]]."
)

NOTES = {
    "Home.md": (
        "# Home\n"
        "\n"
        "Start with [[Databases]] and [[Caching|the cache notes]].\n"
        "\n"
        "## Operations\n"
        "\n"
        "Deploys follow the [[Runbook#Rollback]] steps when they fail.\n"
    ),
    "Databases.md": (
        "---\n"
        "aliases: [DB notes]\n"
        "---\n"
        "# Databases\n"
        "\n"
        "We chose Postgres because of JSONB.\n"
        "\n"
        "## Connection pool\n"
        "\n"
        "The pool has 10 slots; sessions live in [[Caching]].\n"
        "\n"
        "## Backups\n"
        "\n"
        "Nightly backups go to object storage.\n"
    ),
    "Caching.md": f"# Caching\n\n{CACHING_TEXT}\n",
    "Runbook.md": (
        "# Runbook\n"
        "\n"
        "How we ship.\n"
        "\n"
        "## Deploy\n"
        "\n"
        "Deploy on Tuesdays after the freeze.\n"
        "\n"
        "## Rollback\n"
        "\n"
        "Roll back to the previous image, then tell [[Home]].\n"
        "\n"
        "## Checklist\n"
        "\n"
        "Before anything, read [[#Deploy]].\n"
    ),
    "Glossary.md": "# Glossary\n\nJSONB is binary JSON. See [[Missing note]].\n",
}

OPERATIONS_LINK_LINE = 7
"""The line of ``[[Runbook#Rollback]]`` in Home.md."""


def write_vault(root: Path) -> Path:
    """Write the vault into ``root/vault`` and return that folder."""
    vault = root / "vault"
    vault.mkdir(parents=True)
    for name, text in NOTES.items():
        (vault / name).write_text(text, encoding="utf-8")
    return vault
