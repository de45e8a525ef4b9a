#!/usr/bin/env bash
# Configure and build vkgmm (Release) into build/ (or $VKGMM_BUILD_DIR). `--target T` builds target T and
# what it needs only (scripts/bench.sh: the CLI, vkgmm_cli); other arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${VKGMM_BUILD_DIR:-$root/build}"
target=()
if [ "${1:-}" = "--target" ]; then
  [ $# -ge 2 ] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
  target=(--target "$2")
  shift 2
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j"$(nproc)" "${target[@]}"
