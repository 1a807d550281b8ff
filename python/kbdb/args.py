"""Argument checks that more than one surface of the API shares."""

from __future__ import annotations

from collections.abc import Sequence

from kbdb.errors import InvalidArgumentError


def check_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """``tags`` stripped and deduplicated in order; a lone string or an empty tag is an
    INVALID_ARGUMENT (a string is a sequence of one-letter tags, never what was meant)."""
    if isinstance(tags, str):
        raise InvalidArgumentError("tags must be a list of strings, not one string")
    out = []
    for t in tags:
        if not isinstance(t, str) or not t.strip():
            raise InvalidArgumentError(f"tags must be non-empty strings (got {t!r})")
        out.append(t.strip())
    return tuple(dict.fromkeys(out))
