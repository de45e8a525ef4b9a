#!/usr/bin/env bash
# Install what is missing, build, and run `vkgmm bench` (all presets unless arguments say otherwise).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
"$root/scripts/build.sh"
build="${VKGMM_BUILD_DIR:-$root/build}"
export LP_NUM_THREADS="${LP_NUM_THREADS:-$(nproc)}"
exec "$build/vkgmm" bench "$@"
