#!/usr/bin/env bash
# Build the libFuzzer targets with clang (-DVKGMM_FUZZ=ON, into build-fuzz/) and run each one for a number
# of executions from its checked-in corpus (fuzz/corpus/<target>/). New inputs go to a scratch directory,
# not the repository; with --merge, those that add coverage are folded back into the corpus.
#
# usage: scripts/fuzz.sh [--runs N] [--merge] [npy] [gguf] [metadata]   (default: 1000000 runs, every target)
# Prints one line per target: executions, seconds, and whether anything was found. A finding (crash,
# sanitizer report, violated invariant) is kept as build-fuzz/fuzz_<target>-crash-*; the exit status is 1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${VKGMM_FUZZ_BUILD_DIR:-$root/build-fuzz}"
runs=1000000
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    npy|gguf|metadata) targets+=("$1"); shift ;;
    *) echo "usage: $0 [--runs N] [--merge] [npy] [gguf] [metadata]" >&2; exit 2 ;;
  esac
done
[ ${#targets[@]} -gt 0 ] || targets=(npy gguf metadata)

# clang and its libFuzzer runtime (Debian packages), only when missing. The rest is scripts/install_deps.sh.
"$root/scripts/install_deps.sh"
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKGMM_FUZZ=ON \
  -DVKGMM_BUILD_TESTS=OFF -DVKGMM_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

# The npy and gguf targets write each input to a scratch file (their readers take paths): on a tmpfs that
# costs nothing, on a disk-backed /tmp it caps them at a few hundred executions a second.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi

status=0
for t in "${targets[@]}"; do
  scratch="$(mktemp -d)"
  log="$build/fuzz_$t.log"
  start=$(date +%s)
  if "$build/fuzz/fuzz_$t" -runs="$runs" -print_final_stats=1 -artifact_prefix="$build/fuzz_$t-" \
       "$scratch" "$root/fuzz/corpus/$t" >"$log" 2>&1; then
    result="no finding"
  else
    result="FINDING: see $log and $build/fuzz_$t-*"
    status=1
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  echo "fuzz_$t: ${execs:-?} executions in ${secs} s, $result"
  if [ "$merge" = 1 ] && [ "$status" = 0 ]; then
    "$build/fuzz/fuzz_$t" -merge=1 "$root/fuzz/corpus/$t" "$scratch" >>"$log" 2>&1
  fi
  rm -rf "$scratch"
done
exit $status
