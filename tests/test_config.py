"""kbdb.config: worker.toml loading, validation, defaults and comment-keeping edits."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import string
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kbdb.config import (
    Config,
    EmbeddingConfig,
    IndexConfig,
    LearnConfig,
    SearchConfig,
    config_keys,
    config_to_dict,
    default_config_text,
    load_config,
    set_value,
)
from kbdb.errors import ConfigInvalidError
from kbdb.languages import LANGUAGES

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

SECTIONS = {
    "embedding": EmbeddingConfig,
    "search": SearchConfig,
    "learn": LearnConfig,
    "index": IndexConfig,
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "worker.toml"
    path.write_text(text, encoding="utf-8")
    return path


def invalid(path: Path) -> str:
    with pytest.raises(ConfigInvalidError) as info:
        load_config(path)
    assert info.value.code == "CONFIG_INVALID"
    assert str(path) in info.value.message
    return info.value.message


# --- defaults ------------------------------------------------------------------------------


def test_missing_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(tmp_path / "worker.toml") == Config()


def test_missing_embedding_section_means_provider_none(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, "[search]\nk1 = 1.5\n"))
    assert cfg.embedding.provider == "none"
    assert cfg.search.k1 == 1.5


def test_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "")) == Config()


def test_defaults_are_the_documented_ones() -> None:
    cfg = Config()
    assert (cfg.embedding.provider, cfg.embedding.model, cfg.embedding.dimensions) == (
        "none",
        "all-MiniLM-L6-v2",
        384,
    )
    assert cfg.embedding.rrf_k == 60
    assert cfg.embedding.api_key_env == "KBDB_API_KEY"
    assert cfg.embedding.model_path is None
    assert cfg.embedding.batch_size == 64
    assert (cfg.search.w_heading, cfg.search.w_body, cfg.search.w_code) == (2.0, 1.0, 1.0)
    assert cfg.search.default_limit == 10
    assert cfg.search.fusion == "adaptive"
    assert cfg.search.synonyms is True
    assert cfg.learn == LearnConfig(10485760, 0.85, 0.92)


def test_the_anchor_weight_counts_in_the_all_zero_rule() -> None:
    zero = {"w_heading": 0.0, "w_body": 0.0, "w_code": 0.0, "w_path": 0.0}
    assert SearchConfig(**zero, w_anchor=0.5).w_anchor == 0.5
    with pytest.raises(ConfigInvalidError, match="search.w_anchor must not all be 0"):
        SearchConfig(**zero, w_anchor=0.0)
    assert SearchConfig(w_anchor=0.0).w_heading == 2.0  # the anchor field alone may be off


def test_default_text_parses_to_the_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, default_config_text())) == Config()


def test_default_text_lists_every_key_with_an_explanation() -> None:
    lines = default_config_text().splitlines()
    for key in config_keys():
        at = [i for i, line in enumerate(lines) if line.lstrip("# ").startswith(f"{key.name} =")]
        assert len(at) == 1, key.dotted
        assert lines[at[0] - 1].startswith("# "), key.dotted


def test_schema_matches_the_dataclasses() -> None:
    for section, cls in SECTIONS.items():
        names = [k.name for k in config_keys() if k.section == section]
        assert names == [f.name for f in dataclasses.fields(cls)]
        defaults = cls()
        for key in config_keys():
            if key.section == section:
                assert getattr(defaults, key.name) == key.default, key.dotted


def test_config_to_dict_round_trips() -> None:
    cfg = Config(search=SearchConfig(k1=2.0, fusion="linear"))
    data = config_to_dict(cfg)
    assert set(data) == {"embedding", "search", "learn", "index"}
    assert data["embedding"]["model_path"] is None
    assert Config(**{s: SECTIONS[s](**d) for s, d in data.items()}) == cfg


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[search]\nk1 = -1\n", "search.k1 must be a number > 0 (got -1)"),
        ("[search]\nk1 = 0\n", "search.k1 must be a number > 0 (got 0)"),
        ("[search]\nk1 = nan\n", "search.k1 must be a number > 0 (got nan)"),
        ("[search]\nk1 = inf\n", "search.k1 must be a number > 0 (got inf)"),
        ("[search]\nk1 = true\n", "search.k1 must be a number > 0 (got true)"),
        ("[search]\nk1 = '1'\n", 'search.k1 must be a number > 0 (got "1")'),
        ("[search]\nb_body = 1.5\n", "search.b_body must be a number from 0 to 1"),
        ("[search]\nb_code = -0.1\n", "search.b_code must be a number from 0 to 1"),
        ("[search]\nw_body = -1\n", "search.w_body must be a number from 0 to 1000000"),
        ("[search]\nw_code = 3e38\n", "search.w_code must be a number from 0 to 1000000"),
        ("[search]\ndefault_limit = 0\n", "search.default_limit must be an integer from 1 to 100"),
        ("[search]\ndefault_limit = 101\n", "from 1 to 100 (got 101)"),
        ("[search]\ndefault_limit = 10.0\n", "search.default_limit must be an integer"),
        ("[search]\ndefault_limit = true\n", "search.default_limit must be an integer"),
        ("[search]\nfusion = 'max'\n", 'search.fusion must be one of "rrf", "linear", "adaptive"'),
        ("[search]\nsynonyms = 1\n", "search.synonyms must be true or false (got 1)"),
        (
            "[search]\nw_heading = 0\nw_body = 0\nw_code = 0\nw_path = 0\nw_anchor = 0\n",
            "must not all be 0",
        ),
        ("[embedding]\nprovider = 'openai'\n", 'must be one of "none", "onnx", "api"'),
        ("[embedding]\ndimensions = 0\n", "embedding.dimensions must be an integer from 1"),
        ("[embedding]\ndimensions = 70000\n", "from 1 to 65535"),
        ("[embedding]\nrrf_k = 0\n", "embedding.rrf_k must be an integer >= 1"),
        ("[embedding]\nmodel = ''\n", "embedding.model must be a non-empty string"),
        ("[embedding]\napi_url = 'ftp://x'\n", "embedding.api_url must be an http://"),
        ("[embedding]\nprovider = 'api'\n", "embedding.api_url must be an http:// or https://"),
        ("[embedding]\napi_key_env = 'MY-KEY'\n", "embedding.api_key_env must be an environment"),
        ("[embedding]\nbatch_size = 65\n", "embedding.batch_size must be an integer from 1 to 64"),
        ("[embedding]\nthreads = -1\n", "embedding.threads must be an integer >= 0"),
        ("[embedding]\nquantized = 'yes'\n", "embedding.quantized must be true or false"),
        ("[embedding]\nmodel_path = 3\n", "embedding.model_path must be a folder path"),
        ("[learn]\nmax_file_bytes = 0\n", "learn.max_file_bytes must be an integer > 0"),
        ("[learn]\nnear_duplicate_jaccard = 0\n", "must be a number > 0 and <= 1 (got 0)"),
        ("[learn]\nnear_duplicate_cosine = 1.01\n", "must be a number > 0 and <= 1 (got 1.01)"),
        ("[learn]\nnear_duplicate_cosine = [1]\n", "(got an array)"),
        ("[learn]\nworkers = -1\n", "must be an integer from 0 to 64 (got -1)"),
        ("[search]\nk2 = 1\n", "unknown key search.k2 (allowed: k1, b_heading"),
        (
            "[indexing]\n",
            "unknown section [indexing] (allowed: [embedding], [search], [learn], [index])",
        ),
        ("search = 3\n", "[search] must be a table (got 3)"),
        ("[search]\nk1 = \n", "invalid TOML"),
        ("[search\n", "line 1"),
    ],
)
def test_invalid_values_name_file_key_and_what_is_allowed(
    tmp_path: Path, text: str, expected: str
) -> None:
    assert expected in invalid(write(tmp_path, text))


def test_message_format_matches_the_spec_example(tmp_path: Path) -> None:
    path = write(tmp_path, "[search]\nk1 = -1\n")
    message = invalid(path)
    assert message == f"{path}: search.k1 must be a number > 0 (got -1)"
    assert message.endswith("worker.toml: search.k1 must be a number > 0 (got -1)")


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    assert "line 3" in invalid(write(tmp_path, "[search]\nk1 = 1.0\nb_body = = 1\n"))


def test_invalid_utf8_is_config_invalid(tmp_path: Path) -> None:
    path = tmp_path / "worker.toml"
    path.write_bytes(b"[search]\nk1 = 1.0 # \xff\n")
    assert "not valid UTF-8" in invalid(path)


def test_direct_construction_validates_too() -> None:
    with pytest.raises(ConfigInvalidError, match="search.k1 must be a number > 0"):
        SearchConfig(k1=0)
    with pytest.raises(ConfigInvalidError, match="embedding.provider"):
        EmbeddingConfig(provider="bogus")  # type: ignore[arg-type]
    assert SearchConfig(k1=2).k1 == 2.0 and isinstance(SearchConfig(k1=2).k1, float)


# --- set_value -----------------------------------------------------------------------------


def test_set_value_uncomments_in_place_and_keeps_comments(tmp_path: Path) -> None:
    path = write(tmp_path, default_config_text())
    cfg = set_value(path, "search.k1", "1.5")
    assert cfg.search.k1 == 1.5
    text = path.read_text(encoding="utf-8")
    assert "k1 = 1.5 # default: 1.2" in text
    assert "# k1 = " not in text
    before = default_config_text().splitlines()
    after = text.splitlines()
    assert len(before) == len(after)
    assert [b for b, a in zip(before, after, strict=True) if b != a] == ["# k1 = 1.2"]
    assert load_config(path).search.k1 == 1.5


def test_set_value_replaces_an_active_key_keeping_its_comment(tmp_path: Path) -> None:
    path = write(tmp_path, '# mine\n[embedding]\nprovider = "none" # who embeds\n')
    set_value(path, "embedding.provider", "onnx")
    assert (
        path.read_text(encoding="utf-8") == '# mine\n[embedding]\nprovider = "onnx" # who embeds\n'
    )


def test_set_value_adds_a_missing_section(tmp_path: Path) -> None:
    path = write(tmp_path, "# keep me\n")
    set_value(path, "learn.max_file_bytes", "2048")
    assert path.read_text(encoding="utf-8").startswith("# keep me\n")
    assert load_config(path).learn.max_file_bytes == 2048


def test_set_value_creates_a_missing_file_from_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "worker.toml"
    set_value(path, "search.synonyms", "false")
    assert load_config(path) == Config(search=SearchConfig(synonyms=False))
    assert "# k1 = 1.2" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("search.k1", "-1", "search.k1 must be a number > 0 (got -1)"),
        ("search.k1", "abc", 'search.k1 must be a number > 0 (got "abc")'),
        ("search.k1", "1e999", "search.k1 must be a number > 0"),
        ("search.default_limit", "1.5", "must be an integer from 1 to 100"),
        ("search.default_limit", "١٢", "must be an integer from 1 to 100"),
        ("search.synonyms", "yes", "search.synonyms must be true or false"),
        ("search.fusion", "max", 'search.fusion must be one of "rrf", "linear", "adaptive"'),
        ("embedding.provider", "api", "embedding.api_url must be an http://"),
        ("search.k2", "1", 'unknown key "search.k2" (allowed: search.k1,'),
        ("k1", "1", 'unknown key "k1" (allowed: keys of [embedding], [search], [learn]'),
    ],
)
def test_set_value_rejects_and_leaves_the_file_untouched(
    tmp_path: Path, key: str, value: str, expected: str
) -> None:
    path = write(tmp_path, default_config_text())
    with pytest.raises(ConfigInvalidError) as info:
        set_value(path, key, value)
    assert expected in info.value.message
    assert str(path) in info.value.message
    assert path.read_text(encoding="utf-8") == default_config_text()
    assert [p.name for p in tmp_path.iterdir()] == ["worker.toml"]


def test_set_value_validates_the_whole_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[search]\nb_body = 7\n")
    with pytest.raises(ConfigInvalidError, match="search.b_body"):
        set_value(path, "search.k1", "1.0")
    assert path.read_text(encoding="utf-8") == "[search]\nb_body = 7\n"


def test_set_value_can_fix_the_broken_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[search]\nb_body = 7 # oops\n")
    assert set_value(path, "search.b_body", "0.5").search.b_body == 0.5
    assert path.read_text(encoding="utf-8") == "[search]\nb_body = 0.5 # oops\n"


def test_set_value_refuses_to_edit_a_syntax_error(tmp_path: Path) -> None:
    path = write(tmp_path, "[search\n")
    with pytest.raises(ConfigInvalidError, match="invalid TOML"):
        set_value(path, "search.k1", "1.0")


def test_model_path_empty_string_unsets(tmp_path: Path) -> None:
    path = write(tmp_path, default_config_text())
    assert set_value(path, "embedding.model_path", "/models/mini").embedding.model_path == (
        "/models/mini"
    )
    assert set_value(path, "embedding.model_path", "").embedding.model_path is None
    assert "model_path" not in tomllib.loads(path.read_text(encoding="utf-8"))["embedding"]


def test_api_provider_after_its_url(tmp_path: Path) -> None:
    path = write(tmp_path, default_config_text())
    set_value(path, "embedding.api_url", "https://example.test/v1")
    cfg = set_value(path, "embedding.provider", "api")
    assert (cfg.embedding.provider, cfg.embedding.api_url) == ("api", "https://example.test/v1")


def test_set_value_keeps_the_file_mode(tmp_path: Path) -> None:
    path = write(tmp_path, default_config_text())
    path.chmod(0o600)
    set_value(path, "search.k1", "1.1")
    assert path.stat().st_mode & 0o777 == 0o600


# --- properties ----------------------------------------------------------------------------

_FINITE = {"allow_nan": False, "allow_infinity": False}
_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "embedding.provider": st.sampled_from(["none", "onnx", "api"]),
    "embedding.model": st.text(min_size=1),
    "embedding.dimensions": st.integers(1, 65535),
    "embedding.rrf_k": st.integers(1, 10**9),
    "embedding.api_url": st.text().map(lambda s: "https://" + s),
    "embedding.api_key_env": st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True),
    "embedding.model_path": st.one_of(st.none(), st.text(min_size=1)),
    "embedding.threads": st.integers(0, 256),
    "embedding.quantized": st.booleans(),
    "embedding.quantized_scan": st.booleans(),
    "embedding.batch_size": st.integers(1, 64),
    "embedding.daemon": st.booleans(),
    "embedding.daemon_idle": st.integers(1, 86400),
    "embedding.pooling": st.sampled_from(["auto", "mean", "cls", "max", "lasttoken"]),
    "embedding.max_tokens": st.integers(0, 8192),
    "embedding.query_prompt": st.text(),
    "embedding.document_prompt": st.text(),
    "embedding.device": st.sampled_from(["cpu", "cuda", "coreml", "directml", "auto"]),
    "search.k1": st.floats(min_value=1e-6, max_value=1e6, **_FINITE),
    "search.b_heading": st.floats(0, 1),
    "search.b_body": st.floats(0, 1),
    "search.b_code": st.floats(0, 1),
    "search.w_heading": st.floats(0, 1e6, **_FINITE),
    "search.w_body": st.floats(0, 1e6, **_FINITE),
    "search.w_code": st.floats(0, 1e6, **_FINITE),
    "search.b_path": st.floats(0, 1),
    "search.w_path": st.floats(0, 1e6, **_FINITE),
    "search.b_anchor": st.floats(0, 1),
    "search.w_anchor": st.floats(0, 1e6, **_FINITE),
    "search.query_tf_k3": st.floats(0, 1e6, **_FINITE),
    "search.common_cutoff": st.floats(0, 1),
    "search.name_boost": st.floats(0, 10),
    "search.heading_boost": st.floats(0, 10),
    "search.default_limit": st.integers(1, 100),
    "search.default_mode": st.sampled_from(["lexical", "vector", "hybrid"]),
    "search.fusion": st.sampled_from(["rrf", "linear", "adaptive"]),
    "search.linear_weight": st.floats(0, 1),
    "search.adaptive_gate_low": st.floats(0, 2),
    "search.adaptive_gate_high": st.floats(0, 2),
    "search.adaptive_vector_weight": st.floats(0, 1),
    "search.adaptive_agreement_slope": st.floats(0, 2),
    "search.adaptive_rank_mix": st.floats(0, 1),
    "search.synonyms": st.booleans(),
    "search.sibling_boost": st.floats(0, 1),
    "search.recency_half_life": st.sampled_from(["", "30d", "12h", "1.5w", "90m"]),
    "learn.max_file_bytes": st.integers(1, 2**62),
    "learn.near_duplicate_jaccard": st.floats(0, 1, exclude_min=True),
    "learn.near_duplicate_cosine": st.floats(0, 1, exclude_min=True),
    "learn.workers": st.integers(0, 64),
    "learn.links": st.booleans(),
    "index.language": st.sampled_from(sorted(LANGUAGES)),
}


def _cli_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def test_the_strategies_cover_every_key() -> None:
    assert set(_VALUES) == {k.dotted for k in config_keys()}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.fixed_dictionaries({}, optional=_VALUES))
def test_random_valid_configs_round_trip(tmp_path: Path, values: dict[str, Any]) -> None:
    if values.get("embedding.provider") == "api":
        values.setdefault("embedding.api_url", "https://example.test")
    weights = [values.get(f"search.w_{f}", 1.0) for f in ("heading", "body", "code")]
    assume(any(w > 0 for w in weights))
    path = tmp_path / "worker.toml"
    path.write_text(default_config_text(), encoding="utf-8")
    # The URL goes before the provider that needs it; every other order is fine.
    for key in sorted(values, key=lambda k: k != "embedding.api_url"):
        set_value(path, key, _cli_text(values[key]))
    expected: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    for key, value in values.items():
        section, name = key.split(".")
        expected[section][name] = value
    want = Config(**{s: SECTIONS[s](**d) for s, d in expected.items()})
    assert load_config(path) == want
    assert "# kbdb configuration" in path.read_text(encoding="utf-8")


_JUNK_VALUES = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(),
    st.booleans(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
)
_JUNK_KEYS = st.one_of(st.sampled_from([k.name for k in config_keys()]), st.text(max_size=6))
_JUNK_DOCS = st.dictionaries(
    st.one_of(st.sampled_from(list(SECTIONS)), st.text(max_size=6)),
    st.one_of(st.dictionaries(_JUNK_KEYS, _JUNK_VALUES, max_size=4), _JUNK_VALUES),
    max_size=3,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_JUNK_DOCS)
def test_junk_documents_only_raise_config_invalid(tmp_path: Path, doc: dict[str, Any]) -> None:
    import tomlkit

    path = tmp_path / "worker.toml"
    path.write_text(tomlkit.dumps(doc), encoding="utf-8")
    try:
        cfg = load_config(path)
    except ConfigInvalidError as exc:
        assert str(path) in exc.message
    else:
        assert isinstance(cfg, Config)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.one_of(st.text(), st.binary().map(lambda b: b.decode("latin-1"))))
def test_junk_text_only_raises_config_invalid(tmp_path: Path, text: str) -> None:
    path = tmp_path / "worker.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    with contextlib.suppress(ConfigInvalidError):
        load_config(path)


_KEY_TEXT = st.one_of(
    st.sampled_from([k.dotted for k in config_keys()]), st.text(string.printable, max_size=12)
)
_VALUE_TEXT = st.one_of(
    st.text(max_size=12),
    st.floats().map(repr),
    st.integers().map(str),
    st.sampled_from(["true", "false", "nan", "-inf", "1e309", "", " 1 ", "0x10", "1_000"]),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(_KEY_TEXT, _VALUE_TEXT)
def test_junk_set_value_only_raises_config_invalid(tmp_path: Path, key: str, value: str) -> None:
    path = tmp_path / "worker.toml"
    path.write_text(default_config_text(), encoding="utf-8")
    try:
        cfg = set_value(path, key, value)
    except ConfigInvalidError:
        assert path.read_text(encoding="utf-8") == default_config_text()
    else:
        assert load_config(path) == cfg
        number = getattr(getattr(cfg, key.split(".")[0]), key.split(".")[1])
        assert not isinstance(number, float) or math.isfinite(number)


def test_every_key_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text(
        encoding="utf-8"
    )
    for key in config_keys():
        if key.default is None:
            shown = "unset"
        elif isinstance(key.default, bool):
            shown = str(key.default).lower()
        elif isinstance(key.default, str):
            shown = f'"{key.default}"'
        else:
            shown = str(key.default)
        assert f"| `{key.name}` | " in doc, key.dotted
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{key.name}` | "))
        assert str(shown) in row, key.dotted
        assert key.allowed in row, key.dotted
