"""The analyzer's language (``index.language``, ``kbdb init --language``; docs/languages.md):
the names it accepts, a knowledge base in another language, and a change of language,
which needs ``kbdb rebuild``. What each language's analyzer does to words is tested in the
Rust core (``rust/src/text/language.rs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import kbdb
from kbdb import _core
from kbdb.config import load_config, set_value
from kbdb.errors import ConfigInvalidError, IndexStaleError, InvalidArgumentError
from kbdb.languages import LANGUAGES

GERMAN = {
    "katzen": "# Katzen\n\nDie Häuser der Katzen stehen im Garten. Eine Katze schläft gern.",
    "hunde": "# Hunde\n\nDer Hund bellt laut, wenn der Briefträger kommt.",
}


def headings(kb: kbdb.KnowledgeBase, query: str) -> list[str]:
    return [i.heading for i in kb.search(query, mode="lexical").items]


def test_the_python_table_is_the_engines() -> None:
    assert dict(_core.languages()) == LANGUAGES


def test_english_is_the_default_and_keeps_its_analyzer_id(tmp_path: Path) -> None:
    assert _core.Analyzer().id == "en-snowball-v1"
    assert _core.Analyzer().language == "english"
    with kbdb.KnowledgeBase.init(tmp_path) as kb:
        assert kb.context.config.index.language == "english"
        kb.learn("# Pools\n\nThe pool keeps connections open.", docid="p")
        assert kb.stats().analyzer == "en-snowball-v1"


@pytest.mark.parametrize("name", ["de", "DE", "german", "German", " GERMAN "])
def test_codes_and_names_are_accepted_in_any_case(name: str) -> None:
    assert _core.Analyzer(name).language == "german"
    assert _core.Analyzer(name).id == "de-snowball-v1"


def test_an_unknown_language_lists_the_valid_ones(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"unknown language 'klingon'.*german \(de\)"):
        _core.Analyzer("klingon")
    with pytest.raises(InvalidArgumentError) as err:
        kbdb.KnowledgeBase.init(tmp_path, language="klingon")
    assert err.value.code == "INVALID_ARGUMENT"
    assert "german (de)" in (err.value.hint or "")
    assert not (tmp_path / ".kbdb").exists()


def test_config_set_stores_the_name_and_refuses_unknown_ones(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path):
        pass
    path = tmp_path / ".kbdb" / "worker.toml"
    assert set_value(path, "index.language", "FR").index.language == "french"
    assert 'language = "french"' in path.read_text(encoding="utf-8")
    with pytest.raises(ConfigInvalidError, match=r"index.language must be .*spanish \(es\)"):
        set_value(path, "index.language", "xx")
    assert load_config(path).index.language == "french"


def test_a_german_knowledge_base_finds_inflected_forms(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path, language="de") as kb:
        for docid, text in GERMAN.items():
            kb.learn(text, docid=docid)
        assert kb.stats().analyzer == "de-snowball-v1"
        assert headings(kb, "Haus") == ["Katzen"]  # Häuser
        assert headings(kb, "Katze")[0] == "Katzen"
        assert headings(kb, "Hunden") == ["Hunde"]  # Hund
        # Stop words drop: "der" alone finds nothing, and does not block a match.
        assert headings(kb, "der") == []
        assert headings(kb, "der Briefträger") == ["Hunde"]


def test_init_refuses_another_language_for_an_existing_knowledge_base(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path, language="de"):
        pass
    with kbdb.KnowledgeBase.init(tmp_path, language="german"):
        pass
    with pytest.raises(InvalidArgumentError, match="exists with index.language german") as err:
        kbdb.KnowledgeBase.init(tmp_path, language="fr")
    assert "kbdb config set index.language french" in (err.value.hint or "")


def test_a_language_change_asks_for_a_rebuild_and_the_rebuild_fixes_it(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path, language="de") as kb:
        for docid, text in GERMAN.items():
            kb.learn(text, docid=docid)
    set_value(tmp_path / ".kbdb" / "worker.toml", "index.language", "english")
    with kbdb.KnowledgeBase.open(tmp_path) as kb:
        with pytest.raises(IndexStaleError) as err:
            kb.search("Katzen", mode="lexical")
        assert err.value.code == "INDEX_STALE"
        assert "de-snowball-v1 (german)" in err.value.message
        assert "en-snowball-v1 (english)" in err.value.message
        assert "kbdb rebuild" in (err.value.hint or "")
        with pytest.raises(IndexStaleError):  # no terms of two analyzers in one index
            kb.learn("# Vögel\n\nDie Vögel singen.", docid="voegel")
        assert kb.stats().analyzer == "de-snowball-v1"  # stats reports, not refuses
        check = kb.check()
        assert check.ok
        assert any("kbdb rebuild" in w.detail for w in check.warnings), check
        kb.rebuild()
        assert kb.stats().analyzer == "en-snowball-v1"
        assert headings(kb, "Katzen")[0] == "Katzen"
        assert headings(kb, "Haus") == []  # English does not stem Häuser to haus
        assert headings(kb, "Vögel") == ["Vögel"]  # stored before the error; indexed now


def test_an_empty_index_follows_the_language_without_a_rebuild(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path):
        pass
    set_value(tmp_path / ".kbdb" / "worker.toml", "index.language", "de")
    with kbdb.KnowledgeBase.open(tmp_path) as kb:
        assert headings(kb, "Katzen") == []
        kb.learn(GERMAN["katzen"], docid="katzen")
        assert headings(kb, "Haus") == ["Katzen"]
        assert kb.stats().analyzer == "de-snowball-v1"


def test_cjk_text_is_bigrams_in_a_french_knowledge_base(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path, language="fr") as kb:
        kb.learn("# Serveurs\n\nLe serveur de l'entreprise est à 東京都.", docid="serveurs")
        kb.learn("# Voyage\n\nNous partons pour 京都 demain.", docid="voyage")
        assert headings(kb, "東京") == ["Serveurs"]
        assert sorted(headings(kb, "京都")) == ["Serveurs", "Voyage"]
        assert headings(kb, "entreprises") == ["Serveurs"]  # l' elided, plural stemmed
    terms = _core.Analyzer("fr").terms("東京都")
    assert terms == ["東京", "京都"]


def test_accents_fold_in_a_spanish_knowledge_base(tmp_path: Path) -> None:
    with kbdb.KnowledgeBase.init(tmp_path, language="es") as kb:
        kb.learn("# Canciones\n\nLa canción habla del código y de la programación.", docid="c")
        assert headings(kb, "cancion") == ["Canciones"]
        assert headings(kb, "codigos") == ["Canciones"]
        assert headings(kb, "programaciones") == ["Canciones"]
