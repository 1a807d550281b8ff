"""What gets indexed for a section: the ``heading``, ``body`` and ``code`` fields (SPEC §3).

Fenced code blocks stay in a section's content but are indexed as the separate ``code``
field. A section's title and description count as heading text.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def split_code(content: str) -> tuple[str, str]:
    """Split Markdown into (text outside fences, inner text of the fences)."""
    # No fence can open: the line walk would return the content unchanged. A one-character
    # test first (memchr-fast), since most sections have no backtick or tilde at all.
    if ("`" not in content or "```" not in content) and (
        "~" not in content or "~~~" not in content
    ):
        return content, ""
    body: list[str] = []
    code: list[str] = []
    fence: str | None = None
    for line in content.split("\n"):
        m = _FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end() :]):
                fence = m.group(1)
                continue
            body.append(line)
        else:
            if (
                m
                and m.group(1)[0] == fence[0]
                and len(m.group(1)) >= len(fence)
                and (line[m.end() :].strip() == "")
            ):
                fence = None
                continue
            code.append(line)
    return "\n".join(body), "\n".join(code)


def index_fields(
    heading: str, content: str, type: str, title: str | None, description: str | None
) -> tuple[str, str, str]:
    """The (heading, body, code) texts the lexical index sees for one section."""
    head = " ".join(p for p in (heading, title if title and title != heading else None) if p)
    return (head, *body_fields(content, type, description))


def body_fields(content: str, type: str, description: str | None) -> tuple[str, str]:
    """The (body, code) texts of ``index_fields``: what a snippet is cut from is the body."""
    if type.startswith("image/"):
        return description or "", ""
    if type == "text/markdown":
        body, code = split_code(content)
    elif type == "application/json":
        # Here, not at the top: kbdb.ingest loads the whole ingest package (pathspec, the
        # HTML parser), which a search never needs.
        from kbdb.ingest.content import json_index_text

        body, code = json_index_text(content), ""
    else:
        body, code = content, ""
    if description:
        body = f"{description}\n{body}"
    return body, code
