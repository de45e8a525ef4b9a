#!/usr/bin/env bash
# vkgmm on Debian sid's Mesa of the day (scripts/gpu_compilers.sh's sid suite, fetched here first):
#   - the matrix tests of BUILD/tests/test_device on lavapipe (target lvp), with sid's validation layer, on
#     one stage buffer and on two, and with the subgroups numbered from the last (tests/variants.txt's
#     .reversed runs, for the matrix builds);
#   - `vkgmm gpu-report` under tests/gpu_report/check_gpu_report.py (f16 on the matrix units, main-loop
#     FMA share 0.80) on NVK for Ampere, Ada and Blackwell (nvk-ga102, nvk-ad102, nvk-gb202).
# One summary line per check; exit 1 if any fails. The first run needs the network to Debian's archive
# (deb.debian.org). sid moves daily and is not pinned, so a failure may be sid's (a new Mesa, a
# transition), not vkgmm's: the versions fetch printed, in the folder's versions.txt, say which sid ran.
#
#   scripts/gpu_compilers_sid_check.sh [BUILD_DIR]   (default build; needs BUILD_DIR/vkgmm and tests/test_device)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[ -d "$build" ] || { echo "gpu_compilers_sid_check.sh: no build folder $build" >&2; exit 2; }
build="$(cd "$build" && pwd)"
for f in vkgmm tests/test_device; do
  [ -x "$build/$f" ] || { echo "gpu_compilers_sid_check.sh: no $build/$f (build vkgmm_cli and test_device)" >&2; exit 2; }
done

export VKGMM_GPU_SUITE=sid
gc="$root/scripts/gpu_compilers.sh"
# gpu_compilers.sh's folder for sid, where fetch records the versions.
sid_dir="${VKGMM_GPU_COMPILERS:-$root/build/gpu-compilers-sid}"
"$gc" fetch

# Each check's output goes to a log that is kept, so a failure can be read in full afterwards.
logs="$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-sid-check.XXXXXX")"
summary=()
failed=0

# (a) The environment is ctest's for test_device (validation on, two lavapipe threads), and again with
# the stage of two buffers (ctest's .stages2 run, which lavapipe 22 skips) and with the subgroups reversed
# (ctest's .reversed runs, whose filter the matrix tests are not in: lavapipe 22 skips them).
for run in "0 0" "2 0" "0 1"; do
  read -r buffers reversed <<<"$run"
  log="$logs/lvp-matrix-stages$buffers-reversed$reversed.log"
  label="test_device Matrix*:MatrixTest*"
  [ "$buffers" = 0 ] || label="$label, VKGMM_STAGE_BUFFERS=$buffers"
  [ "$reversed" = 0 ] || label="$label, VKGMM_REVERSE_SUBGROUPS=1"
  echo "lvp: $label"
  if VKGMM_STAGE_BUFFERS=$buffers VKGMM_REVERSE_SUBGROUPS=$reversed VKGMM_VALIDATE=1 LP_NUM_THREADS=2 \
      "$gc" run lvp -- "$build/tests/test_device" --gtest_filter='Matrix*:MatrixTest*' >"$log" 2>&1; then
    rc=0
  else
    rc=$?
  fi
  passed="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\.$/\1/p' "$log")"
  # A filter that matches nothing passes too, so a pass must have run tests.
  if [ "$rc" = 0 ] && [ "${passed:-0}" -gt 0 ]; then
    summary+=("pass  lvp        $label ($passed tests)")
  else
    failed=1
    summary+=("FAIL  lvp        $label (exit $rc; $log)")
    lines="$(grep -E '^\[  FAILED  \]|Failure$|error' "$log" | head -40)" || true
    echo "${lines:-$(tail -20 "$log")}"
  fi
done

# (b) As ctest's gpu_report tests call the check (tests/CMakeLists.txt), at the 0.80 share.
for target in nvk-ga102 nvk-ad102 nvk-gb202; do
  log="$logs/$target-gpu-report.log"
  echo "$target: check_gpu_report.py --matrix NVK 0.80"
  if python3 "$root/tests/gpu_report/check_gpu_report.py" --run "$gc run $target --" --matrix \
      "$build/vkgmm" NVK 0.80 >"$log" 2>&1; then
    summary+=("pass  $target  gpu-report --matrix, FMA share 0.80")
  else
    rc=$?
    failed=1
    summary+=("FAIL  $target  gpu-report --matrix, FMA share 0.80 (exit $rc; $log)")
    grep '^FAIL' "$log" || tail -20 "$log"
  fi
done

echo "sid check of $build on $(grep '^mesa-vulkan-drivers=' "$sid_dir/versions.txt") (logs in $logs):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
