"""The ``possible_secret`` learn warning (SPEC §3): content that looks like a credential.

The content is still stored (the user decides); the warning names nothing but the kind of
secret, so it never repeats the secret itself in logs or JSON.

The patterns, each anchored on a vendor prefix or a structure that ordinary prose,
checksums and kbids do not have (docs/lifecycle.md has the same list as a table):

- ``aws_access_key``: ``AKIA``, ``ASIA``, ``AGPA``, ``AIDA``, ``AROA``, ``ANPA``, ``ANVA``
  or ``AIPA`` + 16 upper-case letters or digits;
- ``aws_secret_key``: ``aws_secret_access_key`` (starting aws, AWS or Aws) ``=``/``:`` 40 chars;
- ``github_token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36 or more letters and
  digits, or ``github_pat_`` + 22 or more;
- ``openai_key``: ``sk-`` or ``sk-proj-`` + 20 or more of letters, digits, ``-``, ``_``;
- ``anthropic_key``: ``sk-ant-`` + 20 or more of letters, digits, ``-``, ``_``;
- ``slack_token``: ``xoxb-``/``xoxp-``/``xoxa-``/``xoxr-``/``xoxs-``/``xoxe-`` + 10 more;
- ``google_api_key``: ``AIza`` + 35 of letters, digits, ``-``, ``_``;
- ``jwt``: three dot-separated base64url parts, the first two starting ``eyJ``;
- ``private_key``: a PEM ``-----BEGIN ... PRIVATE KEY-----`` line (any algorithm);
- ``assigned_secret``: ``password``, ``passwd``, ``pwd``, ``secret``, ``token``,
  ``api_key``, ``access_key``, ``auth_token`` or ``client_secret`` (any case, a word or
  an identifier's end) assigned with ``=`` or ``:`` a value of 16+ characters that mixes
  letters and digits, is not all hex, and has Shannon entropy >= 3.5 bits per character.

Deliberately not matched: bare hex strings (SHA-256 checksums, git hashes, kbids), UUIDs,
placeholders like ``password=changeme`` or ``api_key=<your key here>``, and words such as
"token" in prose.
"""

from __future__ import annotations

import math
import re
from collections import Counter

POSSIBLE_SECRET = "possible_secret"

# (name, literal triggers, pattern). The regex runs only from the first trigger found:
# ``str.find`` is ~100x faster than a regex scan, and almost no text holds any trigger.
# Triggers are matched case-sensitively, like their patterns.
_PATTERNS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    (
        "aws_access_key",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
        re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"),
    ),
    (
        "aws_secret_key",
        ("aws", "AWS", "Aws"),
        re.compile(r"(?i)aws_?secret_?access_?key\W{0,3}[=:]\s*[\"']?[A-Za-z0-9/+]{40}\b"),
    ),
    (
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ),
    ("anthropic_key", ("sk-ant-",), re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_key", ("sk-",), re.compile(r"\bsk-(?!ant-)(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("slack_token", ("xox",), re.compile(r"\bxox[baprse]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", ("AIza",), re.compile(r"\bAIza[A-Za-z0-9_-]{35}")),
    (
        "jwt",
        ("eyJ",),
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    ),
    (
        "private_key",
        ("-----BEGIN",),
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ),
)

_KEYWORDS = ("pass", "pwd", "secret", "token", "key")
"""Lower-case stems that start every name ``_ASSIGNED`` matches (``api_key`` and
``access_key`` are found from ``key``'s position by looking back)."""
_ASSIGNED = re.compile(
    r"(?i)(?:password|passwd|pwd|secret|token|api_?key|access_?key|auth_?token"
    r"|client_?secret)\b[\"']?\s*[:=]\s*[\"']?([^\s\"'`,;]{16,})"
)
_MIN_ENTROPY = 3.5


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value``'s own character distribution."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _looks_random(value: str) -> bool:
    if value.startswith(("<", "$", "{", "%")) or "..." in value:
        return False  # a placeholder or a template variable, not a value
    if re.fullmatch(r"[0-9a-f]+", value, re.IGNORECASE):
        return False  # a checksum or an id, not a credential
    has_letter = any(c.isalpha() for c in value)
    has_digit = any(c.isdigit() for c in value)
    return has_letter and has_digit and shannon_entropy(value) >= _MIN_ENTROPY


def find_secrets(text: str) -> tuple[str, ...]:
    """The names of the patterns that ``text`` matches (see the module docstring), in
    table order, each once."""
    found: list[str] = []
    for name, triggers, pattern in _PATTERNS:
        starts = [i for i in (text.find(t) for t in triggers) if i >= 0]
        if starts and pattern.search(text, max(0, min(starts) - 1)):
            found.append(name)
    lower = text.lower()
    if len(lower) != len(text):  # a few characters lower-case to two ("İ"): keep offsets
        lower = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    if _assigned_secret(text, lower):
        found.append("assigned_secret")
    return tuple(found)


def _assigned_secret(text: str, lower: str) -> bool:
    """A credential-like name assigned a random-looking value. The regex is tried only
    where a keyword occurs, starting a few characters before it (``api_`` of ``api_key``),
    at the start of a name: the start of the text, or after a non-alphanumeric character
    (``DB_PASSWORD`` counts, ``bypass`` does not)."""
    for kw in _KEYWORDS:
        at = lower.find(kw)
        while at >= 0:
            for start in range(max(0, at - 7), at + 1):
                if start > 0 and lower[start - 1].isalnum():
                    continue
                m = _ASSIGNED.match(text, start)
                if m and _looks_random(m.group(1)):
                    return True
            at = lower.find(kw, at + 1)
    return False


def looks_secret(text: str) -> bool:
    return bool(find_secrets(text))
