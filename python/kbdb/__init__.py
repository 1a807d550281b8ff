"""kbdb: a searchable second brain for AI agents and the people who work with them."""
