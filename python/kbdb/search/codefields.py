"""What the index sees of a source-code section (docs/code.md, "How code is indexed").

A code section's comments and docstrings are prose: they are the ``body`` field, whole,
and snippets are cut from them. Its code is the ``code`` field, each word once: a name a
function calls ten times says no more about that function than a name it calls once, and
without the repeats the section that *defines* a name (which holds it in its heading)
ranks above the tests and callers that use it many times (benches/bench_code_navigation.py).

Only the section's text and MIME type decide the split, since index fields are
recomputed from stored rows. Comments are found line by line, by each language's comment
markers; a comment that shares a line with code stays with the code.
"""

from __future__ import annotations

import re

CODE_TYPES: dict[str, str] = {
    "text/x-python": "python",
    "text/x-rust": "c",
    "text/x-go": "c",
    "text/javascript": "c",
    "text/typescript": "c",
    "text/x-java": "c",
    "text/x-c": "c",
    "text/x-c++": "c",
}
"""MIME type of each source-code format → its comment syntax (``kbdb.ingest.formats``)."""

_WORD = re.compile(r"\w+")
_DOCSTRING = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|''')")


def code_fields(content: str, type: str) -> tuple[str, str]:
    """The (body, code) texts of a source-code section: its comments and docstrings, and
    the distinct words of the rest."""
    prose, code = (_python if CODE_TYPES.get(type) == "python" else _c_like)(content)
    words = dict.fromkeys(_WORD.findall("\n".join(code)))
    return "\n".join(prose), " ".join(words)


def _python(content: str) -> tuple[list[str], list[str]]:
    prose: list[str] = []
    code: list[str] = []
    quote: str | None = None  # the closing quotes of the docstring being read
    for line in content.split("\n"):
        text = line.strip()
        if quote is not None:
            prose.append(line)
            if quote in text:
                quote = None
            continue
        if text.startswith("#"):
            prose.append(line)
            continue
        m = _DOCSTRING.match(text)
        if m:
            prose.append(line)
            rest = text[m.end() :]
            if m.group(1) not in rest:
                quote = m.group(1)
            continue
        code.append(line)
    return prose, code


def _c_like(content: str) -> tuple[list[str], list[str]]:
    prose: list[str] = []
    code: list[str] = []
    in_block = False
    for line in content.split("\n"):
        text = line.strip()
        if in_block:
            prose.append(line)
            if "*/" in text:
                in_block = False
            continue
        if text.startswith("//"):
            prose.append(line)
            continue
        if text.startswith("/*"):
            prose.append(line)
            in_block = "*/" not in text[2:]
            continue
        code.append(line)
    return prose, code
