#!/usr/bin/env bash
# Configure and build vkgmm (Release) into build/ (or $VKGMM_BUILD_DIR). `--target T` (anywhere among the
# arguments) builds target T and what it needs only (scripts/bench.sh: the CLI, vkgmm_cli); the other
# arguments go to cmake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${VKGMM_BUILD_DIR:-$root/build}"
build_args=()
cmake_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = "--target" ]; then
    [ $# -ge 2 ] || { echo "build.sh: --target needs a target name" >&2; exit 2; }
    build_args+=(--target "$2")
    shift 2
  else
    cmake_args+=("$1")
    shift
  fi
done
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${cmake_args[@]+"${cmake_args[@]}"} >/dev/null
cmake --build "$build" -j"$(nproc)" ${build_args[@]+"${build_args[@]}"}
