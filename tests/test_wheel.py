"""Production users install wheels, not checkouts: build the wheel with the release recipe
(``make wheel``: abi3, manylinux2014, linked by zig against glibc 2.17), install it into a
fresh virtual environment, and run the installed ``kbdb``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# What manylinux2014 promises: the extension needs no glibc symbol newer than 2.17.
MAX_GLIBC = (2, 17)


def _glibc_versions(so: bytes) -> set[tuple[int, int]]:
    """Every GLIBC_x.y version name in the shared object. The names its symbols require are
    strings in its dynamic string table, so this over-approximates the needed versions: it can
    only fail a good library, never pass a bad one."""
    return {(int(m[1]), int(m[2])) for m in re.finditer(rb"GLIBC_(\d+)\.(\d+)", so)}


def _wheel_tags(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/WHEEL"))
        lines = z.read(meta).decode().splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]


@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo to build the wheel")
@pytest.mark.skipif(shutil.which("make") is None, reason="needs make: the recipe is make wheel")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the manylinux recipe is Linux's")
def test_wheel_installs_into_fresh_venv_and_runs(tmp_path: Path) -> None:
    # The same command a release uses; only the output folder differs. The zig build has its
    # own cargo folder (target/<triple>/release), so after the first build this is incremental.
    dist = tmp_path / "dist"
    subprocess.run(
        ["make", "--no-print-directory", "wheel", f"WHEEL_DIR={dist}"], cwd=ROOT, check=True
    )
    wheels = list(dist.glob("kbdb-*.whl"))
    assert len(wheels) == 1, wheels
    wheel = wheels[0]
    assert "-cp310-abi3-" in wheel.name and "manylinux" in wheel.name, wheel.name
    tags = _wheel_tags(wheel)
    assert tags, wheel
    for tag in tags:
        interpreter, abi, platform = tag.split("-")
        assert (interpreter, abi) == ("cp310", "abi3"), tag
        assert platform.startswith(("manylinux2014_", "manylinux_2_17_")), tag

    with zipfile.ZipFile(wheel) as z:
        sos = [n for n in z.namelist() if n.endswith(".so")]
        assert sos == ["kbdb/_core.abi3.so"], sos
        needed = _glibc_versions(z.read(sos[0]))
    assert needed, "no versioned glibc symbols found: not a glibc extension?"
    assert max(needed) <= MAX_GLIBC, f"needs GLIBC_{max(needed)[0]}.{max(needed)[1]}"

    # Nothing of this checkout may leak into the fresh venv: no PYTHONPATH, no active venv.
    outside = {
        k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
    }
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], env=outside, check=True)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        env=outside,
        check=True,
    )
    kbdb = venv / "bin" / "kbdb"
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(
        [str(kbdb), "--version"], env=env, capture_output=True, text=True, check=True
    )
    assert "0.1.0" in out.stdout

    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "a.md").write_text("# Wheels\n\nInstalled from a wheel, not a checkout.\n")
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
    # The installed package and its extension are the wheel's, not this checkout's.
    where = subprocess.run(
        [str(py), "-c", "import kbdb, kbdb._core as c; print(kbdb.__file__); print(c.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    )
    files = where.stdout.split()
    assert len(files) == 2 and all(f.startswith(str(venv)) for f in files), files
