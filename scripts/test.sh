#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite on the Vulkan device the Context picks
# (Mesa lavapipe on a machine without a GPU), with the validation layer on. Prints ctest's summary.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
"$root/scripts/build.sh"
build="${VKGMM_BUILD_DIR:-$root/build}"
# lavapipe's worker threads: one per core of this machine.
export LP_NUM_THREADS="${LP_NUM_THREADS:-$(nproc)}"
cd "$build"
ctest -j"$(nproc)" --output-on-failure --timeout 900
