"""Production users install wheels, not checkouts: build the abi3 wheel, install it into a
fresh virtual environment, and run the installed ``kbdb``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo to build the wheel")
def test_wheel_installs_into_fresh_venv_and_runs(tmp_path: Path) -> None:
    maturin = Path(sys.executable).with_name("maturin")
    dist = tmp_path / "dist"
    subprocess.run(
        [str(maturin), "build", "--release", "--quiet", "--out", str(dist)],
        cwd=ROOT,
        check=True,
    )
    wheels = list(dist.glob("kbdb-*.whl"))
    assert len(wheels) == 1, wheels
    assert "abi3" in wheels[0].name and "cp310" in wheels[0].name

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheels[0])], check=True)
    kbdb = venv / "bin" / "kbdb"
    out = subprocess.run([str(kbdb), "--version"], capture_output=True, text=True, check=True)
    assert "0.1.0" in out.stdout

    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "a.md").write_text("# Wheels\n\nInstalled from a wheel, not a checkout.\n")
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([str(kbdb), "init"], cwd=work, env=env, check=True, capture_output=True)
    subprocess.run(
        [str(kbdb), "--quiet", "learn", "notes"], cwd=work, env=env, check=True, capture_output=True
    )
    res = subprocess.run(
        [str(kbdb), "--json", "search", "checkout"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert '"heading": "Wheels"' in res.stdout
    # The installed module is the wheel's, not this checkout's.
    where = subprocess.run(
        [str(py), "-c", "import kbdb, sys; print(kbdb.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    assert str(venv) in where.stdout
