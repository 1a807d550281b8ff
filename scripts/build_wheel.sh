#!/usr/bin/env bash
# Build the wheel users install: one abi3 wheel (cp310-abi3: any CPython >= 3.10).
#
# On Linux the wheel is manylinux2014 (manylinux_2_17): zig, from PyPI's ziglang package,
# links the extension against glibc 2.17's symbol versions, so the wheel runs on any
# distribution with glibc >= 2.17 and not only on ones as new as the build machine. Linked by
# the system's cc instead, the extension needs the build machine's glibc (2.34 on Debian 12)
# and maturin's check below refuses it. `--auditwheel check` fails the build if the extension
# needs a too-recent symbol or any shared library outside the manylinux set, instead of
# quietly retagging or bundling.
#
# Elsewhere (macOS, Windows) it is a plain `maturin build --release` for the machine's own
# platform tag; release wheels for every platform come from .github/workflows/wheels.yml.
#
# `make wheel` installs maturin and ziglang into .venv and calls this script;
# tests/test_wheel.py runs `make wheel`, so the tested wheel is the one this recipe builds.
#
# Usage: scripts/build_wheel.sh [OUT_DIR]        (default: dist)
# Env:   PYTHON  interpreter of the venv that has maturin and ziglang (default: .venv/bin/python)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-dist}"
py="${PYTHON:-$root/.venv/bin/python}"
bindir="$(cd "$(dirname "$py")" && pwd)"
cd "$root"

flags=(--release --out "$out")
if [ "$(uname -s)" = Linux ]; then
  # maturin runs `python3 -m ziglang` (the python3 found on PATH), else a `zig` on PATH:
  # the venv's bin goes first on PATH so that the venv's ziglang is the one used.
  if ! "$py" -m ziglang version >/dev/null 2>&1; then
    echo "build_wheel.sh: no ziglang in $py's environment (make wheel installs it)" >&2
    exit 1
  fi
  flags+=(--zig --compatibility manylinux2014 --auditwheel check)
fi

# maturin builds for the venv's interpreter; the abi3 tag makes the wheel good for 3.10+.
VIRTUAL_ENV="$(dirname "$bindir")" PATH="$bindir:$PATH" "$bindir/maturin" build "${flags[@]}"
