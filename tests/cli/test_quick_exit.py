"""The ``kbdb`` process ends without the interpreter's teardown after a read-only command
(``kbdb.cli.app._quick_exit``), but only when that teardown had nothing to do: whatever
else the process registered still runs, and the output and exit code are those of a
normal exit."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.conftest import python_c

# Runs `kbdb ARGS` as the console script does (main() without argv), after SETUP.
PROBE = """
import sys
{setup}
from kbdb.cli import main
sys.exit(main())
"""


VERDICTS = ("answered", "partial", "unanswered")


def console(cwd: Path, setup: str, *args: str) -> subprocess.CompletedProcess[str]:
    return python_c(PROBE.format(setup=setup), *args, cwd=cwd)


def test_search_output_and_code_are_complete(learned: Path) -> None:
    proc = console(learned, "", "--json", "search", "connection", "pool")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["items"]  # the whole document was flushed
    table = console(learned, "", "search", "connection", "pool")
    # The table's last line, the verdict, came through.
    assert table.returncode == 0 and table.stdout.rstrip().endswith(VERDICTS)


def test_an_error_keeps_its_exit_code(tmp_path: Path) -> None:
    proc = console(tmp_path, "", "--json", "search", "x")
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["code"] == "KB_NOT_FOUND"


def test_atexit_callbacks_still_run(learned: Path) -> None:
    setup = "import atexit\natexit.register(lambda: print('ATEXIT-RAN', file=sys.stderr))"
    for args in (("search", "pool"), ("stats",), ("--json", "search", "nothing-matches-this")):
        proc = console(learned, setup, *args)
        assert proc.returncode == 0, proc.stderr
        assert "ATEXIT-RAN" in proc.stderr, args


def test_other_threads_are_still_joined(learned: Path) -> None:
    setup = (
        "import threading, time\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    print('THREAD-DONE', file=sys.stderr, flush=True)\n"
        "threading.Thread(target=late).start()"
    )
    proc = console(learned, setup, "search", "pool")
    assert proc.returncode == 0, proc.stderr
    assert "THREAD-DONE" in proc.stderr


def test_debug_logging_is_flushed(learned: Path) -> None:
    """--debug loads logging, whose atexit hook flushes its handlers: the normal exit."""
    proc = console(learned, "", "--debug", "search", "pool")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(VERDICTS)


def test_collection_is_paused_only_for_the_quick_commands(learned: Path) -> None:
    """kbdb.cli.main pauses the cyclic garbage collector while loading; every command but
    the short read-only ones (cli.app.QUICK) turns it back on."""
    setup = (
        "import atexit, gc\natexit.register(lambda: print('GC', gc.isenabled(), file=sys.stderr))"
    )
    for args, enabled in ((("search", "pool"), False), (("stats",), False), (("docs",), True)):
        proc = console(learned, setup, *args)
        assert proc.returncode == 0, proc.stderr
        assert f"GC {enabled}" in proc.stderr, args
    learn = console(learned, setup, "learn", "docs")
    assert learn.returncode == 0 and "GC True" in learn.stderr, learn.stderr


def test_a_closed_stdout_ends_as_before(learned: Path) -> None:
    """Started with stdout closed (``kbdb search x >&-``), Python has no sys.stdout: the
    quick exit must not trip over it (the search itself reports the problem, exit 1)."""
    closed = ("sh", "-c", 'exec "$0" "$@" >&-')
    proc = python_c(PROBE.format(setup=""), "search", "pool", cwd=learned, launcher=closed)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.startswith("kbdb: ")
