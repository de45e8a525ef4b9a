#!/usr/bin/env bash
# The Python package as a Python user installs it from a clone: `pip install --no-build-isolation .` into a
# fresh virtual environment (--system-site-packages: Debian's numpy; --no-index: no package index), then,
# from a directory away from the tree, scripts/check_python_package.py: imported from the venv, the
# project's version, the README's Python example. It builds the library and the extension in Release in
# build-pip/ (about 2 minutes on 2 cores); ctest runs it as python_pip_install.
# Needs python3-venv, python3-pip, python3-setuptools and python3-wheel (scripts/install_deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-pip.XXXXXX")
trap 'rm -rf "$work"' EXIT
# A user's build: none of the flags a sanitizer run (scripts/test.sh --sanitize) exports for the programs
# its tests build against that build, which would instrument the extension for an interpreter that is not.
unset CFLAGS CXXFLAGS LDFLAGS
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --no-build-isolation --no-index "$root" >"$work/pip.log" 2>&1 ||
  { tail -40 "$work/pip.log"; exit 1; }
cd "$work"
"$work/venv/bin/python" "$root/scripts/check_python_package.py" "$root" "$work/venv"
