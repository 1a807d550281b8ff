"""Cold start (SPEC §11): a lexical search loads none of the heavy optional dependencies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import cli_env

HEAVY = ("onnxruntime", "mcp", "httpx", "numpy")

PROBE = """
import sys
from kbdb.cli import main
code = main(sys.argv[1:])
roots = sorted({m.split(".")[0] for m in sys.modules})
sys.stderr.write("\\nMODULES=" + ",".join(roots) + "\\n")
sys.exit(code)
"""


def loaded(cwd: Path, *args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        cwd=cwd,
        env=cli_env(),
        timeout=120,
        check=False,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("MODULES=")
    return set(line.removeprefix("MODULES=").split(","))


def test_lexical_search_imports_nothing_heavy(learned: Path) -> None:
    for args in (("--json", "search", "pool"), ("search", "connection", "pool")):
        modules = loaded(learned, *args)
        assert not modules & set(HEAVY), (args, modules & set(HEAVY))


def test_json_search_does_not_load_rich_or_tomlkit(learned: Path) -> None:
    modules = loaded(learned, "--json", "search", "pool")
    assert "rich" not in modules and "tomlkit" not in modules


def test_importing_the_cli_is_light(tmp_path: Path) -> None:
    watched = ("kbdb.kb", "kbdb._core", "rich", "tomlkit", *HEAVY)
    code = (
        "import sys, kbdb.cli, kbdb.cli.app\n"
        f"print(','.join(m for m in {watched!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=cli_env(),
        timeout=60,
        check=True,
    )
    assert proc.stdout.strip() == ""
