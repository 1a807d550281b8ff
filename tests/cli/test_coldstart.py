"""Cold start (SPEC §11): a lexical search loads none of the heavy optional
dependencies, and none of the kbdb modules that only learning or maintenance need.

These check which modules load, not how long they take: the time is measured by
``benches/bench_cold_start.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import cli_env, python_c

HEAVY = ("onnxruntime", "mcp", "httpx", "numpy", "tokenizers", "ray")
# kbdb modules a lexical search must not import: learning, near-duplicates, the lifecycle,
# contradictions, skills, fusion, maintenance, the embedding providers, the result classes
# of other commands (the lazy modules of kbdb.types), and every command module but search.
NOT_FOR_SEARCH = (
    "kbdb.learn",
    "kbdb.ingest",
    "kbdb.knowledge.neardup",
    "kbdb.knowledge.lifecycle",
    "kbdb.knowledge.contradictions",
    "kbdb.knowledge.skills",
    "kbdb.search.hybrid",
    "kbdb.maintenance",
    "kbdb.embedding",
    "kbdb.store.documents",
    "kbdb.types.read",
    "kbdb.types.learn",
    "kbdb.types.lifecycle",
    "kbdb.types.knowledge",
    "kbdb.types.maintenance",
    "kbdb.cli.commands.learn",
    "kbdb.cli.commands.maintain",
    "kbdb.cli.commands.mcp",
    "kbdb.cli.commands.config",
    "pathspec",
)

PROBE = """
import sys
from kbdb.cli import main
code = main(sys.argv[1:])
sys.stderr.write("\\nMODULES=" + ",".join(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""


def loaded(cwd: Path, *args: str) -> set[str]:
    """Every module name in ``sys.modules`` after ``kbdb ARGS`` in a fresh process."""
    proc = python_c(PROBE, *args, cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("MODULES=")
    return set(line.removeprefix("MODULES=").split(","))


def roots(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def under(modules: set[str], prefixes: tuple[str, ...]) -> set[str]:
    """The modules that are one of ``prefixes`` or inside one of them."""
    return {m for m in modules for p in prefixes if m == p or m.startswith(p + ".")}


def test_lexical_search_imports_nothing_heavy(learned: Path) -> None:
    for args in (("--json", "search", "pool"), ("search", "connection", "pool")):
        modules = loaded(learned, *args)
        assert "kbdb.kb" in modules  # the probe did run a search
        assert not roots(modules) & set(HEAVY), (args, roots(modules) & set(HEAVY))
        assert not under(modules, NOT_FOR_SEARCH), (args, under(modules, NOT_FOR_SEARCH))


def test_search_does_not_load_rich_or_tomlkit(learned: Path) -> None:
    """The table is drawn by kbdb.cli.table (DESIGN.md: not rich's heavy parts), and the
    worker.toml that init wrote is read without tomllib (kbdb.config._simple_toml)."""
    for args in (("--json", "search", "pool"), ("search", "pool"), ("search", "pool", "-n", "1")):
        modules = roots(loaded(learned, *args))
        assert "rich" not in modules and "tomlkit" not in modules, args
        assert "tomllib" not in modules, args


def test_help_loads_no_command_module(learned: Path) -> None:
    """``kbdb --help`` lists every command from the table in kbdb.cli.app."""
    modules = loaded(learned, "--help")
    assert not under(modules, ("kbdb.cli.commands.search", "kbdb.cli.commands.learn"))
    assert not under(modules, ("rich", *HEAVY))


def test_a_command_loads_only_its_own_module(learned: Path) -> None:
    modules = loaded(learned, "--json", "search", "pool")
    commands = {m for m in modules if m.startswith("kbdb.cli.commands.")}
    assert commands == {"kbdb.cli.commands.search"}


def test_importing_the_cli_is_light(tmp_path: Path) -> None:
    watched = ("kbdb.kb", "kbdb._core", "rich", "tomlkit", "logging", *HEAVY)
    code = (
        "import sys, kbdb.cli, kbdb.cli.app\n"
        f"print(','.join(m for m in {watched!r} if m in sys.modules))\n"
        "print(','.join(m for m in sys.modules if m.startswith('kbdb.cli.commands.')))\n"
    )
    proc = python_c(code, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["", ""]


def test_lazy_names_still_import() -> None:
    """``from kbdb.types import X``, ``from kbdb.store import X`` and ``kbdb.LearnItem``
    keep working for the names that now load on first access."""
    code = (
        "import kbdb, kbdb.kb, kbdb.store, kbdb.types\n"
        "from kbdb.types import LearnReport, CheckReport, Skill, TagList, Section, CheckCode\n"
        "from kbdb.store import NewSection, apply_document\n"
        "from kbdb.kb import LearnItem, LearnProgress\n"
        "assert kbdb.LearnItem is LearnItem and LearnReport.__module__ == 'kbdb.types.learn'\n"
        "names = set(kbdb.types.__all__)\n"
        "missing = [n for n in names if getattr(kbdb.types, n, None) is None]\n"
        "assert not missing, missing\n"
        "assert set(kbdb.types._LAZY) <= names and set(kbdb.types._LAZY) <= set(dir(kbdb.types))\n"
        "try:\n"
        "    kbdb.types.Nope\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('kbdb.types.Nope did not raise')\n"
    )
    subprocess.run([sys.executable, "-c", code], env=cli_env(), timeout=60, check=True)


def test_the_lazy_logger_imports_logging_only_when_it_could_print() -> None:
    """kbdb._log drops debug/info while logging was never imported (nothing could have
    enabled them), and imports logging for a warning, which reaches stderr as before."""
    code = (
        "import sys\n"
        "from kbdb._log import log\n"
        "log.debug('quiet %s', 1); log.info('quiet')\n"
        "assert 'logging' not in sys.modules\n"
        "log.warning('loud %s', 2)\n"
        "assert 'logging' in sys.modules\n"
        "import logging\n"
        "logging.getLogger('kbdb').setLevel(logging.DEBUG)\n"
        "logging.basicConfig(stream=sys.stderr, format='%(message)s')\n"
        "log.debug('now shown')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=60,
        check=True,
    )
    assert "loud 2" in proc.stderr and "now shown" in proc.stderr
    assert "quiet" not in proc.stderr
