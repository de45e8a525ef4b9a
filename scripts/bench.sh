#!/usr/bin/env bash
# Install what is missing, build the CLI, and run `vkgmm bench` (all presets unless arguments say otherwise).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
# The CLI alone: its first figure should not wait for the test binaries (scripts/test.sh builds those).
"$root/scripts/build.sh" --target vkgmm_cli
build="${VKGMM_BUILD_DIR:-$root/build}"
export LP_NUM_THREADS="${LP_NUM_THREADS:-$(nproc)}"
exec "$build/vkgmm" bench "$@"
