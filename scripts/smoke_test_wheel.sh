#!/usr/bin/env bash
# Install the one kbdb wheel in a folder into a fresh virtual environment, away from any
# checkout, and use it: kbdb --version, init, learn a note, search for it. The wheels workflow
# runs it on each wheel its runner can execute; after `make wheel` it checks dist/ by hand.
#
# Usage: scripts/smoke_test_wheel.sh [WHEEL_DIR]   (default: dist)
# Env:   PYTHON  the interpreter to make the venv with (default: python3)
# Linux and macOS only: kbdb's store locks with fcntl, which Windows lacks.
set -euo pipefail

dist="$(cd "${1:-dist}" && pwd)"
py="${PYTHON:-python3}"
shopt -s nullglob
wheels=("$dist"/kbdb-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "smoke_test_wheel.sh: want one kbdb wheel in $dist, found ${#wheels[@]}" >&2
  exit 1
fi

work="$(cd "$(mktemp -d)" && pwd -P)"  # physical path: macOS has /var -> /private/var
trap 'rm -rf "$work"' EXIT
cd "$work"
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV
"$py" -m venv venv
venv/bin/python -m pip install -q --disable-pip-version-check "${wheels[0]}"
export PATH="$work/venv/bin:$PATH" HOME="$work"

kbdb --version
mkdir notes
printf '# Wheels\n\nInstalled from a wheel, not a checkout.\n' > notes/a.md
kbdb init >/dev/null
kbdb --quiet learn notes
hits="$(kbdb --json search checkout)"
grep -q '"heading": "Wheels"' <<<"$hits" || { echo "no hit for the learned note: $hits" >&2; exit 1; }
where="$(venv/bin/python -c 'import kbdb._core as c; print(c.__file__)')"
case "$where" in
  "$work"/venv/*) ;;
  *) echo "kbdb._core came from $where, not the wheel" >&2; exit 1 ;;
esac
echo "smoke test passed: ${wheels[0]##*/}"
