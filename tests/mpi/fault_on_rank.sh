#!/usr/bin/env sh
# Runs PROGRAM with a vkgmm fault injected on one MPI rank only (VKGMM_INJECT_FAULT, the library's test
# switch): the job must end, not leave the healthy ranks waiting in a collective.
#   fault_on_rank.sh RANK FAULT PROGRAM [ARGS...]      (under mpirun; Open MPI's or MPICH's rank variable)
rank=$1 fault=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-}}" = "$rank" ]; then
  VKGMM_INJECT_FAULT=$fault
  export VKGMM_INJECT_FAULT
fi
exec "$@"
