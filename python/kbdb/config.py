"""The configuration of a knowledge base: ``.kbdb/worker.toml`` (SPEC §7).

One table of :class:`ConfigKey` rows is the single source of truth: the dataclasses validate
against it, ``default_config_text()`` writes it out, and ``set_value()`` parses command-line
strings with it. Anything unknown, mistyped or impossible raises
:class:`~kbdb.errors.ConfigInvalidError` naming the file, the key and what is allowed.

Reading uses ``tomllib``, except for a file of the plain shape that kbdb itself writes, which
``_simple_toml`` reads the same way without loading it; ``tomlkit`` (comment-preserving
edits) is imported lazily by ``set_value``. So a plain search pays for neither.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Literal

from kbdb.errors import ConfigInvalidError
from kbdb.languages import language_list, language_name

Provider = Literal["none", "onnx", "api"]
POOLINGS = ("mean", "cls", "max", "lasttoken")  # kbdb.embedding.sbert runs these
DEVICES = ("cpu", "cuda", "coreml", "directml", "auto")
MAX_MODEL_TOKENS = 8192
Fusion = Literal["rrf", "linear", "adaptive"]
Mode = Literal["lexical", "vector", "hybrid"]
Kind = Literal["int", "float", "bool", "str", "path"]

# Ranking defaults, chosen by leave-one-collection-out over SciFact, Cranfield, MEDLINE,
# LISA, TIME and LoCoMo (the docker CLI navigation queries reported beside them) with
# benches/tune_ranking.py (docs/search.md, "Defaults, chosen across collections"). Change
# them here only.
DEFAULT_K1 = 1.2
DEFAULT_B_HEADING = 0.3
DEFAULT_B_BODY = 0.85
DEFAULT_B_CODE = 0.75
DEFAULT_W_HEADING = 2.0
DEFAULT_W_BODY = 1.0
DEFAULT_W_CODE = 1.0
DEFAULT_B_PATH = 1.0
DEFAULT_W_PATH = 3.0
# Anchor text: short labels, repeated once per incoming link. Empty (inert) in a knowledge
# base without links, where it changes no score. The weight was chosen on the collections
# with links (the Rust book in four languages, the docker reference, an Obsidian vault):
# the worst margin over bm25s first (docs/search.md, "The anchor field").
DEFAULT_B_ANCHOR = DEFAULT_B_HEADING
DEFAULT_W_ANCHOR = 4.0
DEFAULT_QUERY_TF_K3 = 8.0
DEFAULT_COMMON_CUTOFF = 0.5
DEFAULT_NAME_BOOST = 0.5
DEFAULT_HEADING_BOOST = 0.1
# The engine refuses larger field weights: scores could overflow to NaN (MAX_FIELD_WEIGHT in
# rust/src/lexical/bm25f.rs).
MAX_FIELD_WEIGHT = 1_000_000
DEFAULT_SIBLING_BOOST = 0.1
DEFAULT_LIMIT = 10
MAX_LIMIT = 100
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_BATCH_SIZE = 64  # SPEC §6.1: "batches of up to 64"
MAX_DIMENSIONS = 65535  # vectors.idx stores dimensions as u16 (SPEC §6.3)

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_INT_TEXT = re.compile(r"[+-]?[0-9](?:_?[0-9])*\Z")
_HINT = "edit the file, or run 'kbdb config set KEY VALUE'"


def _show(value: object) -> str:
    """``value`` as it would read in TOML, for error messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + '…"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


def _anything(_: Any) -> bool:
    return True


class _Rule:
    """What a value must satisfy beyond its type, and how to say so; ``canonical`` spells
    an accepted value the one way it is stored. A plain class, as is ``ConfigKey``: every
    command reads the configuration, and creating a dataclass costs more than reading
    ``worker.toml`` (benches/bench_cold_start.py)."""

    __slots__ = ("canonical", "check", "phrase")

    def __init__(
        self,
        phrase: str,
        check: Callable[[Any], bool] = _anything,
        canonical: Callable[[Any], Any] | None = None,
    ) -> None:
        self.phrase = phrase
        self.check = check
        self.canonical = canonical


def _range(lo: int, hi: float = math.inf, *, lo_open: bool = False) -> _Rule:
    if hi == math.inf:
        return _Rule(f"> {lo}" if lo_open else f">= {lo}", lambda v: v > lo if lo_open else v >= lo)
    if lo_open:
        return _Rule(f"> {lo} and <= {hi}", lambda v: lo < v <= hi)
    return _Rule(f"from {lo} to {hi}", lambda v: lo <= v <= hi)


def _one_of(*choices: str) -> _Rule:
    return _Rule("one of " + ", ".join(f'"{c}"' for c in choices), lambda v: v in choices)


DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([mhdw])\s*\Z")
"""A duration: a number and a unit, ``m`` (minutes), ``h``, ``d`` or ``w`` (``30d``)."""
DURATION_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration_seconds(text: str) -> float | None:
    """The seconds of a duration (``DURATION``), or None when ``text`` is not one."""
    m = DURATION.match(text)
    return None if m is None else float(m.group(1)) * DURATION_SECONDS[m.group(2)]


_ANY = _Rule("")
_UNIT = _range(0, 1)
_THRESHOLD = _range(0, 1, lo_open=True)
_NON_EMPTY = _Rule("a non-empty string", bool)
_HALF_LIFE = _Rule(
    'a duration such as "30d" (a number > 0 and m, h, d or w), or "" for off',
    lambda v: v == "" or bool((d := duration_seconds(v)) and d > 0),
)
_HTTP_URL = _Rule(
    'an http:// or https:// URL, or ""', lambda v: v == "" or v.startswith(("http://", "https://"))
)


_LANGUAGE = _Rule(
    f"a language name or ISO 639-1 code: {language_list()}",
    lambda v: language_name(v) is not None,
    language_name,
)
_ENV_VAR = _Rule(
    "an environment variable name (letters, digits, _)", lambda v: bool(_ENV_NAME.match(v))
)


class ConfigKey:
    """One key of ``worker.toml``: its type, default, what is allowed and what it does.
    ``active``: written uncommented by ``default_config_text()``."""

    __slots__ = ("active", "default", "name", "rule", "section")

    def __init__(
        self, section: str, name: str, default: Any, rule: _Rule = _ANY, *, active: bool = False
    ) -> None:
        self.section = section
        self.name = name
        self.default = default
        self.rule = rule
        self.active = active

    def __repr__(self) -> str:
        return f"ConfigKey({self.dotted}, default={self.default!r})"

    @property
    def dotted(self) -> str:
        """The key as ``section.name``."""
        return f"{self.section}.{self.name}"

    @property
    def kind(self) -> Kind:
        """The value's type, taken from the default (None: an optional path)."""
        kinds: dict[type, Kind] = {bool: "bool", int: "int", float: "float", str: "str"}
        return "path" if self.default is None else kinds[type(self.default)]

    @property
    def doc(self) -> str:
        """One line on what the key does."""
        return _DOCS[self.dotted]

    @property
    def allowed(self) -> str:
        """What a value must be, as in ``must be <allowed>``."""
        lead = {"int": "an integer ", "float": "a number "}.get(self.kind)
        if self.kind == "bool":
            return "true or false"
        if self.kind == "path":
            return 'a folder path, or "" for the default'
        return lead + self.rule.phrase if lead else self.rule.phrase

    def normalize(self, value: object) -> Any:
        """Return ``value`` in this key's Python type, or raise ConfigInvalidError."""
        out: Any = value
        kind = self.kind
        if kind == "int":
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif kind == "float":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            try:
                out = float(value) if ok else value  # type: ignore[arg-type]
            except OverflowError:
                ok = False
            ok = ok and math.isfinite(out)
        elif kind == "bool":
            ok = isinstance(value, bool)
        elif kind == "path":
            ok = value is None or isinstance(value, str)
            out = value or None
        else:
            ok = isinstance(value, str)
        if not ok or (out is not None and not self.rule.check(out)):
            raise ConfigInvalidError(f"{self.dotted} must be {self.allowed} (got {_show(value)})")
        if self.rule.canonical is not None:
            out = self.rule.canonical(out)
        return out

    def parse(self, text: str) -> Any:
        """Parse a command-line string (``kbdb config set``) to this key's type, validated."""
        value: object = text
        word = text.strip()
        if self.kind in ("int", "float") and _INT_TEXT.match(word):
            value = int(word)
        elif self.kind == "float" and word.isascii():
            with contextlib.suppress(ValueError):
                value = float(word)
        elif self.kind == "bool" and word.lower() in ("true", "false"):
            value = word.lower() == "true"
        return self.normalize(value)


_ALL_KEYS = (
    ConfigKey("embedding", "provider", "none", _one_of("none", "onnx", "api"), active=True),
    ConfigKey("embedding", "model", "all-MiniLM-L6-v2", _NON_EMPTY, active=True),
    ConfigKey("embedding", "dimensions", 384, _range(1, MAX_DIMENSIONS), active=True),
    ConfigKey("embedding", "rrf_k", 60, _range(1), active=True),
    ConfigKey("embedding", "api_url", "", _HTTP_URL, active=True),
    ConfigKey("embedding", "api_key_env", "KBDB_API_KEY", _ENV_VAR, active=True),
    ConfigKey("embedding", "model_path", None),
    ConfigKey("embedding", "threads", 0, _range(0)),
    ConfigKey("embedding", "quantized", False),
    ConfigKey("embedding", "quantized_scan", False),
    ConfigKey("embedding", "batch_size", MAX_BATCH_SIZE, _range(1, MAX_BATCH_SIZE)),
    ConfigKey("embedding", "daemon", True),
    ConfigKey("embedding", "daemon_idle", 600, _range(1, 86400)),
    ConfigKey("embedding", "pooling", "auto", _one_of("auto", *POOLINGS)),
    ConfigKey("embedding", "max_tokens", 0, _range(0, MAX_MODEL_TOKENS)),
    ConfigKey("embedding", "query_prompt", ""),
    ConfigKey("embedding", "document_prompt", ""),
    ConfigKey("embedding", "device", "cpu", _one_of(*DEVICES)),
    ConfigKey("search", "k1", DEFAULT_K1, _range(0, lo_open=True)),
    ConfigKey("search", "b_heading", DEFAULT_B_HEADING, _UNIT),
    ConfigKey("search", "b_body", DEFAULT_B_BODY, _UNIT),
    ConfigKey("search", "b_code", DEFAULT_B_CODE, _UNIT),
    ConfigKey("search", "w_heading", DEFAULT_W_HEADING, _range(0, MAX_FIELD_WEIGHT)),
    ConfigKey("search", "w_body", DEFAULT_W_BODY, _range(0, MAX_FIELD_WEIGHT)),
    ConfigKey("search", "w_code", DEFAULT_W_CODE, _range(0, MAX_FIELD_WEIGHT)),
    ConfigKey("search", "b_path", DEFAULT_B_PATH, _UNIT),
    ConfigKey("search", "w_path", DEFAULT_W_PATH, _range(0, MAX_FIELD_WEIGHT)),
    ConfigKey("search", "b_anchor", DEFAULT_B_ANCHOR, _UNIT),
    ConfigKey("search", "w_anchor", DEFAULT_W_ANCHOR, _range(0, MAX_FIELD_WEIGHT)),
    ConfigKey("search", "query_tf_k3", DEFAULT_QUERY_TF_K3, _range(0)),
    ConfigKey("search", "common_cutoff", DEFAULT_COMMON_CUTOFF, _UNIT),
    ConfigKey("search", "name_boost", DEFAULT_NAME_BOOST, _range(0, 10)),
    ConfigKey("search", "heading_boost", DEFAULT_HEADING_BOOST, _range(0, 10)),
    ConfigKey("search", "default_limit", DEFAULT_LIMIT, _range(1, MAX_LIMIT)),
    ConfigKey("search", "default_mode", "lexical", _one_of("lexical", "vector", "hybrid")),
    ConfigKey("search", "fusion", "adaptive", _one_of("rrf", "linear", "adaptive")),
    ConfigKey("search", "linear_weight", 0.5, _UNIT),
    ConfigKey("search", "adaptive_gate_low", 0.6, _range(0, 2)),
    ConfigKey("search", "adaptive_gate_high", 0.75, _range(0, 2)),
    ConfigKey("search", "adaptive_vector_weight", 0.35, _UNIT),
    ConfigKey("search", "adaptive_agreement_slope", 0.5, _range(0, 2)),
    ConfigKey("search", "adaptive_rank_mix", 0.5, _UNIT),
    ConfigKey("search", "synonyms", True),
    ConfigKey("search", "sibling_boost", DEFAULT_SIBLING_BOOST, _UNIT),
    ConfigKey("search", "recency_half_life", "", _HALF_LIFE),
    ConfigKey("learn", "max_file_bytes", DEFAULT_MAX_FILE_BYTES, _range(0, lo_open=True)),
    ConfigKey("learn", "near_duplicate_jaccard", 0.85, _THRESHOLD),
    ConfigKey("learn", "near_duplicate_cosine", 0.92, _THRESHOLD),
    ConfigKey("learn", "workers", 1, _range(0, 64)),
    ConfigKey("learn", "links", True),
    ConfigKey("index", "language", "english", _LANGUAGE, active=True),
)
_DOCS = {
    "embedding.provider": '"none" (lexical only), "onnx" (local model) or "api" (HTTP service)',
    "embedding.model": "model name given to the provider; changing it marks vectors stale",
    "embedding.dimensions": "length of the model's embedding vectors",
    "embedding.rrf_k": 'hybrid search: the k of fusion "rrf" and "adaptive", sum of w / (k + rank)',
    "embedding.api_url": 'provider "api": endpoint ("/embeddings" is appended when missing)',
    "embedding.api_key_env": 'provider "api": environment variable holding the key (never stored)',
    "embedding.model_path": 'provider "onnx": folder with model.onnx and tokenizer.json',
    "embedding.threads": 'provider "onnx": inference threads, 0 = automatic',
    "embedding.quantized": 'provider "onnx": embed with an int8 model built from the fp32 one',
    "embedding.quantized_scan": "vector search scans an int8 copy, then rescores exactly",
    "embedding.batch_size": "texts per embedding call",
    "embedding.daemon": 'provider "onnx": the kbdb command embeds queries in a warm daemon',
    "embedding.daemon_idle": "seconds without a query after which the embedding daemon exits",
    "embedding.pooling": (
        'provider "onnx": "auto" (what the model folder says), "mean", "cls", "max" or "lasttoken"'
    ),
    "embedding.max_tokens": 'provider "onnx": tokens per text, 0 = what the model folder says',
    "embedding.query_prompt": 'provider "onnx": text put before queries, "" = the model\'s own',
    "embedding.document_prompt": (
        'provider "onnx": text put before sections, "" = the model\'s own'
    ),
    "embedding.device": (
        'provider "onnx": "cpu", "cuda", "coreml", "directml", or "auto" (the best available)'
    ),
    "search.k1": "BM25F term-frequency saturation",
    "search.b_heading": "BM25F length normalization of headings (0 = none, 1 = full)",
    "search.b_body": "BM25F length normalization of body text (0 = none, 1 = full)",
    "search.b_code": "BM25F length normalization of code blocks (0 = none, 1 = full)",
    "search.w_heading": "BM25F weight of the heading field",
    "search.w_body": "BM25F weight of the body field",
    "search.w_code": "BM25F weight of the code field (fenced code blocks)",
    "search.b_path": "BM25F length normalization of the path field (0 = none, 1 = full)",
    "search.w_path": "BM25F weight of the path field (file name, document title, headings above)",
    "search.b_anchor": "BM25F length normalization of the anchor field (0 = none, 1 = full)",
    "search.w_anchor": (
        "BM25F weight of the anchor field (labels of the links to a section; empty without links)"
    ),
    "search.query_tf_k3": (
        "weight of a word repeated in the query: 0 counts it once, large values count each"
    ),
    "search.default_limit": "results per page when no limit is given",
    "search.common_cutoff": (
        "strict matching: a query word in more than this share of sections is optional (0 = off)"
    ),
    "search.name_boost": (
        "boost of the sections of a page whose name (file name or alias) the query is"
    ),
    "search.heading_boost": "boost of a section whose whole heading the query is",
    "search.default_mode": (
        'mode of a search that names none (lexical while embedding.provider is "none")'
    ),
    "search.fusion": (
        'hybrid search: "adaptive" (RRF weighted per query), "rrf" or "linear" (weighted sum)'
    ),
    "search.linear_weight": 'fusion "linear": weight of the vector score, lexical gets the rest',
    "search.adaptive_gate_low": (
        'fusion "adaptive": lexical weight 0 up to this coverage + agreement (0 to 2)'
    ),
    "search.adaptive_gate_high": 'fusion "adaptive": full lexical weight from this sum on',
    "search.adaptive_vector_weight": (
        'fusion "adaptive": the vector share when half the vector top 10 is in the lexical list'
    ),
    "search.adaptive_agreement_slope": (
        'fusion "adaptive": vector share added per unit of agreement above one half'
    ),
    "search.adaptive_rank_mix": (
        'fusion "adaptive": the share of the rank (RRF) part beside the normalized scores'
    ),
    "search.synonyms": "expand queries with built-in and .kbdb/synonyms.toml synonyms",
    "search.sibling_boost": "bounded boost when other sections of the same document match",
    "search.recency_half_life": ('scores decay with age, x 0.5 per half-life ("30d"; "" = off)'),
    "learn.max_file_bytes": "larger files are skipped and reported",
    "learn.near_duplicate_jaccard": "report near duplicates at token-shingle Jaccard >= this",
    "learn.near_duplicate_cosine": "report near duplicates at embedding cosine >= this",
    "learn.workers": "processes that read and split files (1: this one; 0: one per core)",
    "learn.links": "keep the links between notes: backlinks, anchor text, link checks",
    "index.language": (
        "the analyzer's language (stemmer, stop words); changing it needs 'kbdb rebuild'"
    ),
}
_SCHEMA: dict[str, tuple[ConfigKey, ...]] = {
    s: tuple(k for k in _ALL_KEYS if k.section == s)
    for s in ("embedding", "search", "learn", "index")
}
_KEYS = {k.dotted: k for keys in _SCHEMA.values() for k in keys}


def config_keys() -> tuple[ConfigKey, ...]:
    """Every key of ``worker.toml``, in file order."""
    return tuple(_KEYS.values())


class _Validated:
    """Runs every field through its :class:`ConfigKey` after ``__init__``."""

    _section: ClassVar[str]

    def __post_init__(self) -> None:
        for key in _SCHEMA[self._section]:
            object.__setattr__(self, key.name, key.normalize(getattr(self, key.name)))
        self._check_together()

    def _check_together(self) -> None:
        """Rules across keys of one section."""


@dataclass(frozen=True)
class EmbeddingConfig(_Validated):
    """``[embedding]``: the provider and its settings (SPEC §6)."""

    _section: ClassVar[str] = "embedding"
    provider: Provider = "none"
    model: str = "all-MiniLM-L6-v2"
    dimensions: int = 384
    rrf_k: int = 60
    api_url: str = ""
    api_key_env: str = "KBDB_API_KEY"
    model_path: str | None = None
    threads: int = 0
    quantized: bool = False
    quantized_scan: bool = False
    batch_size: int = MAX_BATCH_SIZE
    daemon: bool = True
    daemon_idle: int = 600
    pooling: str = "auto"
    max_tokens: int = 0
    query_prompt: str = ""
    document_prompt: str = ""
    device: str = "cpu"

    def _check_together(self) -> None:
        if self.provider == "api" and not self.api_url:
            raise ConfigInvalidError(
                "embedding.api_url must be an http:// or https:// URL when embedding.provider "
                'is "api" (got "")'
            )


@dataclass(frozen=True)
class SearchConfig(_Validated):
    """``[search]``: BM25F and fusion knobs (SPEC §4)."""

    _section: ClassVar[str] = "search"
    k1: float = DEFAULT_K1
    b_heading: float = DEFAULT_B_HEADING
    b_body: float = DEFAULT_B_BODY
    b_code: float = DEFAULT_B_CODE
    w_heading: float = DEFAULT_W_HEADING
    w_body: float = DEFAULT_W_BODY
    w_code: float = DEFAULT_W_CODE
    b_path: float = DEFAULT_B_PATH
    w_path: float = DEFAULT_W_PATH
    b_anchor: float = DEFAULT_B_ANCHOR
    w_anchor: float = DEFAULT_W_ANCHOR
    query_tf_k3: float = DEFAULT_QUERY_TF_K3
    common_cutoff: float = DEFAULT_COMMON_CUTOFF
    name_boost: float = DEFAULT_NAME_BOOST
    heading_boost: float = DEFAULT_HEADING_BOOST
    default_limit: int = DEFAULT_LIMIT
    default_mode: Mode = "lexical"
    fusion: Fusion = "adaptive"
    linear_weight: float = 0.5
    adaptive_gate_low: float = 0.6
    adaptive_gate_high: float = 0.75
    adaptive_vector_weight: float = 0.35
    adaptive_agreement_slope: float = 0.5
    adaptive_rank_mix: float = 0.5
    synonyms: bool = True
    sibling_boost: float = DEFAULT_SIBLING_BOOST
    recency_half_life: str = ""

    def _check_together(self) -> None:
        if self.w_heading == self.w_body == self.w_code == self.w_path == self.w_anchor == 0:
            raise ConfigInvalidError(
                "search.w_heading, search.w_body, search.w_code, search.w_path and"
                " search.w_anchor must not all be 0"
            )


@dataclass(frozen=True)
class LearnConfig(_Validated):
    """``[learn]``: limits and near-duplicate thresholds (SPEC §3)."""

    _section: ClassVar[str] = "learn"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    near_duplicate_jaccard: float = 0.85
    near_duplicate_cosine: float = 0.92
    workers: int = 1
    links: bool = True


@dataclass(frozen=True)
class IndexConfig(_Validated):
    """``[index]``: how text is analyzed into the lexical index (docs/languages.md)."""

    _section: ClassVar[str] = "index"
    language: str = "english"


@dataclass(frozen=True)
class Config:
    """The whole ``worker.toml``. ``Config()`` is the default configuration."""

    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    learn: LearnConfig = field(default_factory=LearnConfig)
    index: IndexConfig = field(default_factory=IndexConfig)

    @property
    def effective_default_mode(self) -> Mode:
        """The mode a search that names none runs: ``search.default_mode``, except that
        ``vector`` and ``hybrid`` run ``lexical`` while ``embedding.provider`` is ``none``."""
        if self.embedding.provider == "none":
            return "lexical"
        return self.search.default_mode


_SECTIONS: dict[str, type[_Validated]] = {
    c._section: c for c in (EmbeddingConfig, SearchConfig, LearnConfig, IndexConfig)
}


# Keys of earlier versions whose setting no longer exists: a file that still holds one
# loads, with a notice on stderr naming what replaced it, instead of failing.
RETIRED_KEYS = {
    "search.adaptive_coverage_low": "search.adaptive_gate_low",
    "search.adaptive_coverage_high": "search.adaptive_gate_high",
    "search.adaptive_gap_low": "search.adaptive_vector_weight",
    "search.adaptive_gap_high": "search.adaptive_agreement_slope",
}


def _retired(dotted: str, where: str) -> bool:
    """True (after a notice on stderr) for a retired key, which is then ignored."""
    new = RETIRED_KEYS.get(dotted)
    if new is None:
        return False
    print(
        f"kbdb: {where}: {dotted} is no longer used and is ignored (the adaptive fusion's"
        f" signals changed; see {new}); remove it to silence this notice",
        file=sys.stderr,
    )
    return True


def _from_mapping(raw: Mapping[str, Any], where: str) -> Config:
    """Validate parsed TOML into a Config; errors are prefixed with ``where`` (the file)."""
    parts: dict[str, Any] = {}
    try:
        for name, table in raw.items():
            if name not in _SECTIONS:
                allowed = ", ".join(f"[{s}]" for s in _SECTIONS)
                raise ConfigInvalidError(f"unknown section [{name}] (allowed: {allowed})")
            if not isinstance(table, dict):
                raise ConfigInvalidError(f"[{name}] must be a table (got {_show(table)})")
            table = {k: v for k, v in table.items() if not _retired(f"{name}.{k}", where)}
            for key in table:
                if f"{name}.{key}" not in _KEYS:
                    allowed = ", ".join(k.name for k in _SCHEMA[name])
                    raise ConfigInvalidError(f"unknown key {name}.{key} (allowed: {allowed})")
            parts[name] = _SECTIONS[name](**table)
        return Config(**parts)
    except ConfigInvalidError as exc:
        raise ConfigInvalidError(f"{where}: {exc.message}", hint=_HINT) from None


def _read(path: Path) -> str | None:
    """The file's text, None when it does not exist."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigInvalidError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigInvalidError(f"{path}: not valid UTF-8 (at byte {exc.start})") from None


# The TOML that worker.toml is made of (what `kbdb init` and `kbdb config set` write):
# `[section]` headers, `key = value` lines whose value is a basic string without escapes,
# a boolean, a decimal integer or a float, comments and blank lines.
_BARE = r"[A-Za-z0-9_-]+"
_INT = r"[+-]?(?:0|[1-9](?:_?[0-9])*)"
_DIGITS = r"[0-9](?:_?[0-9])*"
_SIMPLE_LINE = re.compile(
    rf"""[ \t]*(?:
        \[(?P<section>{_BARE})\]
      | (?P<key>{_BARE})[ \t]*=[ \t]*(?:
            "(?P<str>[^"\\]*)"
          | (?P<bool>true|false)
          | (?P<float>{_INT}(?:\.{_DIGITS}(?:[eE][+-]?{_DIGITS})?|[eE][+-]?{_DIGITS}))
          | (?P<int>{_INT})
        )
    )?[ \t]*(?:\#.*)?""",
    re.VERBOSE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def _simple_toml(text: str) -> dict[str, Any] | None:
    """``text`` parsed, when it is only what ``_SIMPLE_LINE`` reads, in sections, with no
    key or section given twice: then the result is what ``tomllib`` returns, without
    loading it (importing tomllib is a few per cent of a cold ``kbdb search``). None for
    anything else, valid or not, which ``tomllib`` then reads or reports."""
    data: dict[str, dict[str, Any]] = {}
    table: dict[str, Any] | None = None
    for line in text.split("\n"):
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None or _CONTROL.search(line):
            return None
        section, key = m.group("section", "key")
        if section is not None:
            if section in data:
                return None
            table = data[section] = {}
        elif key is not None:
            if table is None or key in table:
                return None
            if m.group("str") is not None:
                table[key] = m.group("str")
            elif m.group("bool") is not None:
                table[key] = m.group("bool") == "true"
            elif m.group("float") is not None:
                table[key] = float(m.group("float").replace("_", ""))
            else:
                table[key] = int(m.group("int").replace("_", ""))
    return data


def _parse(text: str, where: str) -> dict[str, Any]:
    simple = _simple_toml(text)
    if simple is not None:
        return simple
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found, no-redef, unused-ignore]
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        raise ConfigInvalidError(f"{where}: invalid TOML: {msg[:1].lower()}{msg[1:]}") from None


def load_config(path: Path) -> Config:
    """Read and validate ``worker.toml``.

    Args:
        path: the file. A missing file gives the defaults; a missing ``[embedding]`` means
            provider ``"none"``.

    Returns:
        The validated configuration.

    Raises:
        ConfigInvalidError: syntax error (with line), unknown section or key, wrong type or
            impossible value. The message names the file, the key and what is allowed.
    """
    text = _read(path)
    if text is None:
        return Config()
    return _from_mapping(_parse(text, str(path)), str(path))


def config_to_dict(cfg: Config) -> dict[str, dict[str, Any]]:
    """``{"embedding": {...}, "search": {...}, "learn": {...}, "index": {...}}``; an unset
    model_path is None."""
    return {
        section: {f.name: getattr(getattr(cfg, section), f.name) for f in fields(cls)}  # type: ignore[arg-type]
        for section, cls in _SECTIONS.items()
    }


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def default_config_text() -> str:
    """The ``worker.toml`` that ``kbdb init`` writes: every key, its default and one line on
    what it does. Keys beyond the seed's ``[embedding]`` are commented out, so that they
    follow future tuned defaults until a user sets them."""
    lines = [
        "# kbdb configuration. Every key is listed with its default.",
        "# A commented-out key uses its default: uncomment it, or run",
        "# 'kbdb config set SECTION.KEY VALUE' (keeps these comments).",
    ]
    for section, keys in _SCHEMA.items():
        lines += ["", f"[{section}]"]
        for key in keys:
            default = "" if key.default is None else key.default
            lines.append(f"# {key.doc}")
            prefix = "" if key.active else "# "
            lines.append(f"{prefix}{key.name} = {_toml_value(default)}")
    return "\n".join(lines) + "\n"


def _edit(text: str, key: ConfigKey, value: Any, where: str) -> str:
    """``text`` with ``key`` set to ``value``; comments kept. A commented-out ``# key = …``
    line is replaced in place. ``value`` None removes the key."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import Comment, Table

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:  # tomllib accepted it; tomlkit is stricter on rare inputs
        raise ConfigInvalidError(f"{where}: cannot edit while keeping comments: {exc}") from None
    if key.section not in doc:
        if value is None:
            return text
        doc[key.section] = tomlkit.table()
    table: Any = doc[key.section]
    if key.name in table:
        if value is None:
            del table[key.name]
        else:
            table[key.name] = value
        return tomlkit.dumps(doc)
    if value is None:
        return text
    commented = re.compile(rf"\s*#\s*{re.escape(key.name)}\s*=")
    if isinstance(table, Table):
        new = tomlkit.table()
        found = False
        for name, item in table.value.body:
            if name is not None:
                new.add(name, item)
            elif not found and isinstance(item, Comment) and commented.match(item.as_string()):
                found = True
                entry = tomlkit.item(value)
                if key.default is not None:
                    entry.comment(f"default: {_toml_value(key.default)}")
                new.add(key.name, entry)
            else:
                new.append(None, item)
        if found:
            new.trivia.comment = table.trivia.comment
            new.trivia.comment_ws = table.trivia.comment_ws
            doc[key.section] = new
            return tomlkit.dumps(doc)
    table[key.name] = value
    return tomlkit.dumps(doc)


def _write_atomic(path: Path, text: str) -> None:
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    import tempfile  # writing only: reading the configuration is on every command's path

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def set_value(path: Path, key: str, value: str) -> Config:
    """Set one key in ``worker.toml``, keeping its comments, and return the new config.

    Args:
        path: the file; a missing file starts from :func:`default_config_text`.
        key: dotted, such as ``"search.k1"``.
        value: the command-line text, parsed to the key's type (``"1.5"``, ``"true"``,
            ``"onnx"``). For ``embedding.model_path``, ``""`` removes the key.

    Returns:
        The whole configuration after the change.

    Raises:
        ConfigInvalidError: unknown key, a value of the wrong type or out of range, or a
            resulting file that would not validate. The file is then left untouched.
    """
    spec = _KEYS.get(key)
    if spec is None:
        section = key.partition(".")[0]
        if section in _SCHEMA:
            allowed = ", ".join(k.dotted for k in _SCHEMA[section])
        else:
            allowed = "keys of " + ", ".join(f"[{s}]" for s in _SCHEMA) + " as SECTION.KEY"
        raise ConfigInvalidError(f"{path}: unknown key {_show(key)} (allowed: {allowed})")
    try:
        parsed = spec.parse(value)
    except ConfigInvalidError as exc:
        raise ConfigInvalidError(f"{path}: {exc.message}") from None
    text = _read(path)
    if text is None:
        text = default_config_text()
    _parse(text, str(path))  # a syntax error is reported as such, with its line
    new_text = _edit(text, spec, parsed, str(path))
    cfg = _from_mapping(_parse(new_text, str(path)), str(path))
    _write_atomic(path, new_text)
    return cfg
