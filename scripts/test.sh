#!/usr/bin/env bash
# Install what is missing, build, and run the whole test suite on the Vulkan device the Context picks
# (Mesa lavapipe on a machine without a GPU), with the validation layer on. Prints ctest's summary.
#
# scripts/test.sh --sanitize: the same suite built with AddressSanitizer and UndefinedBehaviorSanitizer
# (into build-sanitize/, or $VKGMM_SANITIZE_BUILD_DIR). Any report fails the test that caused it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install_deps.sh"
# lavapipe's worker threads: one per core of this machine.
export LP_NUM_THREADS="${LP_NUM_THREADS:-$(nproc)}"

if [ "${1:-}" = "--sanitize" ]; then
  build="${VKGMM_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
  flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
  cmake --build "$build" -j"$(nproc)"
  # Leaks inside the Vulkan loader, Mesa and the validation layer are theirs: suppressed by library name
  # (scripts/lsan.supp), never for vkgmm's own code. So that the names are known when LeakSanitizer runs
  # at exit, dlclose() is made a no-op (scripts/keep_loaded.c, preloaded; hence verify_asan_link_order=0).
  # Every sanitizer report makes its process exit non-zero.
  cc -shared -fPIC -O2 -o "$build/libvkgmm_keep_loaded.so" "$root/scripts/keep_loaded.c"
  export LD_PRELOAD="$build/libvkgmm_keep_loaded.so${LD_PRELOAD:+:$LD_PRELOAD}"
  export ASAN_OPTIONS="detect_leaks=1:verify_asan_link_order=0:exitcode=23:strict_string_checks=1:detect_stack_use_after_return=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
  export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
  # Programs the tests build against the installed library (tests/install) link its sanitized objects.
  export CFLAGS="$flags" CXXFLAGS="$flags" LDFLAGS="-fsanitize=address,undefined"
  cd "$build"
  ctest -j"$(nproc)" --output-on-failure --timeout 1800
  exit
fi

"$root/scripts/build.sh"
build="${VKGMM_BUILD_DIR:-$root/build}"
cd "$build"
ctest -j"$(nproc)" --output-on-failure --timeout 900
