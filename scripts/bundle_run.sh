#!/usr/bin/env bash
# run.sh of a vkgmm bundle (made by scripts/bundle.sh): vkgmm's CLI and test programs with the libraries
# a machine that has only a GPU driver lacks (lib/: the Vulkan loader, the GL dispatch libraries NVIDIA's
# driver loads, ...; layers/: the validation layer). glibc, libstdc++ and libgcc_s are the machine's
# (BUNDLE_INFO.txt says which versions the programs need). Works from wherever the bundle is unpacked.
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$here/bin

usage() {
  cat <<'EOF'
usage: run.sh info                  vkgmm info: the device, its limits, its measured FMA and copy rates
       run.sh bench [ARGS]          vkgmm bench ARGS (run.sh vkgmm bench --help)
       run.sh test [GTEST ARGS]     the test programs, validation on; JSON results in $VKGMM_OUT
                                    (default ./vkgmm-results). With no --gtest_filter, also the variant
                                    runs ctest makes (variants.txt: packed32, sync, ...), the C API and
                                    the examples; with one, only the gtest programs, each filtered
       run.sh all OUTDIR [ARGS] [-- GTEST ARGS]
                                    info, bench --json ARGS and test GTEST ARGS into OUTDIR, going on
                                    past failures; every step's exit code in OUTDIR/exit_codes.txt
       run.sh vkgmm ARGS            the CLI itself (run, gpu-report, quantize, ...)
environment: VK_DRIVER_FILES or VK_ICD_FILENAMES: the Vulkan driver's manifest (default: NVIDIA's,
  else the first other one that shows vkgmm a device, CPU drivers last); VKGMM_STEP_TIMEOUT=SECONDS:
  ends any one program after that long (exit 124); VKGMM_DEVICE, VKGMM_VALIDATE: as for vkgmm.
EOF
}
note() { echo "run.sh: $*" >&2; }

# The bundle's libraries before the machine's: its loader is the one that was tested, even where the
# machine has another. The validation layer is found through its manifest in layers/.
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export VK_LAYER_PATH="$here/layers${VK_LAYER_PATH:+:$VK_LAYER_PATH}"
# test_host replays the fuzzers' corpora, which its build named by their path in the source tree.
export VKGMM_FUZZ_CORPUS_DIR="$here/share/fuzz/corpus"

# Runs a program, for at most $VKGMM_STEP_TIMEOUT seconds when that is set (a hung GPU ends a step only).
limited() {
  if [ -n "${VKGMM_STEP_TIMEOUT:-}" ]; then timeout -k 10 "$VKGMM_STEP_TIMEOUT" "$@"; else "$@"; fi
}

# --- the Vulkan driver: exactly one manifest (ICD file), so that nothing else is enumerated beside it.
# Where drivers put theirs: NVIDIA's container setups use /usr/local/nvidia; the rest are the loader's.
icd_dirs="/usr/local/nvidia/share/vulkan/icd.d /etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d"
pick_icd() {
  if [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then  # the user's choice stands
    note "Vulkan driver (given): ${VK_DRIVER_FILES:-$VK_ICD_FILENAMES}"; return
  fi
  # RADV_FORCE_FAMILY turns RADV's manifest into null (compile-only) GPUs, which the search below could
  # take for the machine's GPU. (With VK_DRIVER_FILES set, the loader reads no other manifest: not the
  # standard folders', not VK_ADD_DRIVER_FILES'.)
  unset RADV_FORCE_FAMILY
  local d f icd="" hw=() sw=()
  for d in $icd_dirs; do
    for f in "$d"/nvidia*.json; do [ -f "$f" ] && { icd=$f; break 2; }; done
  done
  if [ -z "$icd" ]; then
    # No NVIDIA driver: the first other manifest whose driver shows vkgmm a device (a machine has
    # manifests of every Mesa driver, most for hardware it lacks), CPU drivers (lavapipe) last.
    for d in $icd_dirs; do
      for f in "$d"/*.json; do
        [ -f "$f" ] || continue
        case ${f##*/} in lvp_*|swiftshader*) sw+=("$f") ;; *) hw+=("$f") ;; esac
      done
    done
    for f in "${hw[@]}" "${sw[@]}"; do
      if VK_DRIVER_FILES=$f VK_ICD_FILENAMES=$f limited env -u VKGMM_VALIDATE "$bin/vkgmm" info >/dev/null 2>&1; then
        icd=$f; break
      fi
    done
  fi
  [ -n "$icd" ] || { note "no Vulkan driver with a device in $icd_dirs (set VK_DRIVER_FILES)"; exit 1; }
  note "Vulkan driver: $icd"
  export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd  # the second for loaders older than the first
}

# NVIDIA's driver keeps thread-local data in static TLS (libnvidia-tls). glibc reserves that anew each
# time a process loads the driver (each VkInstance; the test programs make hundreds) and never takes it
# back on unload, until the loader reports "cannot allocate memory in static TLS block" and finds no
# driver. Loaded once at the start, the library stays and the driver's loads share it.
preload_nvidia_tls() {
  case ${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}} in */nvidia*) ;; *) return ;; esac
  local d f
  for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
    for f in "$d"/libnvidia-tls.so.*; do
      [ -f "$f" ] || continue
      export LD_PRELOAD="$f${LD_PRELOAD:+:$LD_PRELOAD}"
      note "preloading $f (the driver's static TLS, reserved once)"
      return
    done
  done
}

# --- the tests. Each step's exit code goes to $codes ("name code" lines); the run fails if any is not 0.
record() { echo "$1 $2" >>"$codes"; [ "$2" -eq 0 ] || note "$1: exit $2"; }
# gtest NAME PROGRAM FILTER "VAR=VALUE ..." [GTEST ARGS]: JSON results in $out/NAME.json
gtest() {
  local name=$1 prog=$2 filter=$3 envs=()
  read -ra envs <<<"$4"  # (read, not word splitting: no globbing of the values)
  shift 4
  [ -x "$bin/$prog" ] || { note "$prog is not in the bundle: $name skipped"; return; }
  note "--- $name"
  limited env "${envs[@]}" "$bin/$prog" "$@" ${filter:+"--gtest_filter=$filter"} \
    "--gtest_output=json:$out/$name.json"
  record "$name" $?
}
plain() {  # plain NAME PROGRAM "VAR=VALUE ...": a program that is not a gtest one
  local envs=()
  read -ra envs <<<"$3"
  [ -x "$bin/$2" ] || { note "$2 is not in the bundle: $1 skipped"; return; }
  note "--- $1"
  limited env "${envs[@]}" "$bin/$2"
  record "$1" $?
}
# The runs ctest makes again with a switch: the bundle's copy of tests/variants.txt, suffix|filter|env.
variants=()
if [ -f "$here/variants.txt" ]; then
  while IFS= read -r line; do
    [[ $line =~ ^[a-z0-9]+\| ]] && variants+=("test_device.$line")
  done <"$here/variants.txt"
fi
run_tests() {
  mkdir -p "$out"
  export VKGMM_VALIDATE=${VKGMM_VALIDATE:-1}  # as ctest runs them: any validation message fails a test
  local filtered=0 a v name filter envs
  for a in "$@"; do case $a in --gtest_filter=*) filtered=1 ;; esac; done
  gtest test_host test_host "" "" "$@"
  gtest test_device test_device "" "" "$@"
  gtest test_embedding test_embedding "" "" "$@"
  [ $filtered = 0 ] || return 0
  for v in ${variants[@]+"${variants[@]}"}; do
    IFS='|' read -r name filter envs <<<"$v"
    gtest "$name" test_device "$filter" "$envs" "$@"
  done
  plain c_api test_c_api ""
  plain c_api.packed32 test_c_api "VKGMM_DISABLE_16BIT_STORAGE=1"
  plain examples_app vkgmm_example_app ""
  plain examples_moe vkgmm_example_moe "VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT"
}
failed() { awk '$2 != 0 { bad = 1 } END { exit !bad }' "$codes"; }

machine() {  # what the results were measured on
  date -u +%FT%TZ; uname -a
  (. /etc/os-release && echo "$PRETTY_NAME")
  echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null)"
  local icd=${VK_DRIVER_FILES:-${VK_ICD_FILENAMES:-}}
  echo "Vulkan driver: $icd"; cat "${icd%%:*}"
  command -v nvidia-smi >/dev/null && nvidia-smi
  cat "$here/BUNDLE_INFO.txt"
}

cmd=${1:-help}
[ $# -eq 0 ] || shift
case $cmd in
  info | bench | test | all | vkgmm) ;;
  help | -h | --help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac
pick_icd
preload_nvidia_tls
case $cmd in
  info) limited "$bin/vkgmm" info "$@" ;;
  bench) limited "$bin/vkgmm" bench "$@" ;;
  vkgmm) limited "$bin/vkgmm" "$@" ;;
  test)
    out=${VKGMM_OUT:-$PWD/vkgmm-results}
    mkdir -p "$out" && out=$(cd "$out" && pwd) && codes=$out/exit_codes.txt && : >"$codes" || exit 1
    run_tests "$@"
    note "exit codes ($codes):"; cat "$codes" >&2
    ! failed ;;
  all)
    [ $# -ge 1 ] || { usage >&2; exit 2; }
    mkdir -p "$1" && dir=$(cd "$1" && pwd) || exit 1
    shift
    bench_args=()  # ARGS up to a "--" go to the bench, the rest to the test programs
    while [ $# -gt 0 ] && [ "$1" != -- ]; do bench_args+=("$1"); shift; done
    [ $# -eq 0 ] || shift
    codes=$dir/exit_codes.txt; : >"$codes"
    machine >"$dir/machine.txt" 2>&1
    note "--- info"
    limited "$bin/vkgmm" info >"$dir/info.txt" 2>&1; record info $?
    note "--- bench --json ${bench_args[*]}"
    limited "$bin/vkgmm" bench --json "${bench_args[@]}" >"$dir/bench.json" 2>"$dir/bench.log"; record bench $?
    out=$dir/tests
    run_tests "$@" 2>&1 | tee "$dir/tests.log"
    note "exit codes ($codes):"; cat "$codes" >&2
    ! failed ;;
esac
