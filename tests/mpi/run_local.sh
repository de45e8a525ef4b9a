#!/usr/bin/env bash
# Runs an MPI program on this machine the way ctest needs it: N ranks on however few cores there are
# (--oversubscribe), shared memory only (no network, no ssh, no ptrace needed: containers included),
# and as root when the machine runs as root.
#   run_local.sh MPIEXEC N pass|fail|abort PROGRAM [ARGS...]
# pass: the program must exit 0, and no rank's vkgmm may report Vulkan objects left alive at teardown (the
# validation layer's report, printed where nothing can be thrown). fail: it must exit 1 and say "FAIL:
# some rank differs" (the example's verdict on a wrong result), so that a crash or an abort does not pass
# for a detected mismatch. abort: a rank's error must end the whole job with the example's MPI_Abort code
# (3) and the rank's "FAIL: vkgmm:" line.
set -uo pipefail
mpiexec=$1 ranks=$2 expect=$3
shift 3

flags=(--oversubscribe --mca plm isolated --mca pml ob1 --mca btl self,vader
       --mca btl_vader_single_copy_mechanism none)
if [ "$(id -u)" -eq 0 ]; then flags+=(--allow-run-as-root); fi

out=$("$mpiexec" "${flags[@]}" -n "$ranks" "$@" 2>&1)
status=$?
printf '%s\n' "$out"
case $expect in
  pass)
    if grep -q "vkgmm: at Context teardown" <<<"$out"; then
      echo "run_local.sh: a rank left Vulkan objects alive (above)" >&2
      exit 1
    fi
    exit $status ;;
  fail) want_status=1 want_line="FAIL: some rank differs" ;;
  abort) want_status=3 want_line="FAIL: vkgmm:" ;;
  *) echo "run_local.sh: expect must be pass, fail or abort, not '$expect'" >&2; exit 2 ;;
esac
if [ $status -eq $want_status ] && grep -q "$want_line" <<<"$out"; then
  echo "run_local.sh: exit $status with '$want_line', as expected"
  exit 0
fi
echo "run_local.sh: expected exit $want_status with '$want_line', got exit $status" >&2
exit 1
