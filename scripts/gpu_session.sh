#!/usr/bin/env bash
# One run of everything a borrowed GPU machine is for, within a time budget: vkgmm's info, its bench
# presets as JSON, the peers (ggml's Vulkan backend, torch, JAX) on the same shapes, and the device test
# suite; each step's output and exit code under OUT, going on past failures; a summary at the end.
#
# usage: scripts/gpu_session.sh [--quick] OUT [BUDGET_S]
#   OUT        where everything is written (created; results only: the bundle unpacks elsewhere)
#   BUDGET_S   the whole run's wall-clock budget, default 480: each step gets at most what is left (less
#              a reserve for the summary), so the run ends before a 600 s command limit
#   --quick    a smoke run of every step with small shapes (--quick peers, one preset per bench step, a
#              test subset): the dry run on lavapipe
# environment:
#   VKGMM_BUNDLE       the bundle (scripts/bundle.sh): a .tar.gz or an unpacked vkgmm-bundle/; default
#                      build/vkgmm-bundle.tar.gz, else ./vkgmm-bundle.tar.gz
#   VKGMM_GGML_PEER    the ggml peer (bench/peers/fetch_ggml.sh): DIR.tar.gz or DIR; default
#                      build/peers/ggml.tar.gz, else build/peers/ggml (absent: that step is skipped)
#   VKGMM_STEP_TIMEOUT the most any one step may take, seconds (default 150; tests_matrix at most 60);
#                      also passed to run.sh, which ends any one test program after that long
#   VKGMM_GPU_STEPS    the steps and their order (default below); TMPDIR where the bundle unpacks
#
# On the device tool (a copy of this working tree; $OUT an empty folder that comes back, at most 8 files,
# so the results travel as one archive), after `scripts/build.sh && bench/peers/fetch_ggml.sh &&
# VKGMM_GPU_SUITE=sid scripts/gpu_compilers.sh fetch && scripts/bundle.sh -v build/gpu-compilers-sid/usr`
# here (sid's validation layer: Debian 12's fails every validated test on NVIDIA's driver, bundle.sh says why):
#   run  command:  scripts/gpu_session.sh /tmp/res 480; tar -C /tmp -czf "$OUT/res.tgz" res
#        carry:    ["build/vkgmm-bundle.tar.gz", "build/peers/ggml.tar.gz"]
#        timeout_s: 600
# On any other machine: copy vkgmm-bundle.tar.gz, ggml.tar.gz, this script and
# bench/peers/torch_jax_peers.py there, then
#   VKGMM_BUNDLE=vkgmm-bundle.tar.gz VKGMM_GGML_PEER=ggml.tar.gz ./gpu_session.sh results 480
# (the torch/JAX peer is looked for at ../bench/peers/ from this script, else beside it).
#
# OUT holds: steps.tsv (step, exit code, seconds; 124 = timed out, "skip" = no time or no input),
# machine.txt, STEP.out / STEP.err per step (bench_*.out are vkgmm bench's JSON, *_peer*.out JSON
# lines), tests_matrix/ and tests/ (gtest JSON and exit_codes.txt), summary.txt (what the run printed at
# the end).
set -u
quick=0
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
[ $# -ge 1 ] || { sed -n '6,12p' "$0" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd) || exit 2
budget=${2:-480}
start=$(date +%s)
deadline=$((start + budget))
reserve=15  # seconds kept for the summary
step_limit=${VKGMM_STEP_TIMEOUT:-150}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
say() { echo "gpu_session: $*" >&2; }
: >"$out/steps.tsv"

# --- inputs
find_first() { local f; for f in "$@"; do [ -e "$f" ] && { echo "$f"; return 0; }; done; return 1; }
bundle_src=${VKGMM_BUNDLE:-$(find_first "$root/build/vkgmm-bundle.tar.gz" "$PWD/vkgmm-bundle.tar.gz" "$here/vkgmm-bundle.tar.gz")}
peer_src=${VKGMM_GGML_PEER:-$(find_first "$root/build/peers/ggml.tar.gz" "$root/build/peers/ggml" "$PWD/ggml.tar.gz" "$here/ggml.tar.gz")}
pypeer=$(find_first "$root/bench/peers/torch_jax_peers.py" "$here/torch_jax_peers.py")
work=$(mktemp -d "${TMPDIR:-/tmp}/vkgmm-gpu-session.XXXXXX")
trap 'rm -rf "$work"' EXIT

unpack() {  # unpack SRC (a .tar.gz or a folder) into $work; prints the folder it gives
  local src=$1 name=$2
  if [ -d "$src" ]; then (cd "$src" && pwd); return; fi
  [ -f "$src" ] || return 1
  tar -xzf "$src" -C "$work" || return 1
  [ -d "$work/$name" ] && echo "$work/$name"
}
bundle=""
if [ -n "$bundle_src" ]; then bundle=$(unpack "$bundle_src" vkgmm-bundle) || bundle=""; fi
[ -n "$bundle" ] && [ -x "$bundle/run.sh" ] || { say "no bundle (VKGMM_BUNDLE, build/vkgmm-bundle.tar.gz): vkgmm steps skipped"; bundle=""; }
peer=""
if [ -n "$peer_src" ]; then peer=$(unpack "$peer_src" ggml) || peer=""; fi
[ -n "$peer" ] && [ -x "$peer/ggml_mul_mat_id" ] || { say "no ggml peer (VKGMM_GGML_PEER, build/peers/ggml.tar.gz): its step skipped"; peer=""; }
say "bundle: ${bundle_src:-none}; ggml peer: ${peer_src:-none}; torch/JAX peer: ${pypeer:-none}; budget ${budget} s"

# --- steps
# step NAME COMMAND...: runs COMMAND with stdout to NAME.out and stderr to NAME.err, for at most the step
# limit (or $cap when set) or what the budget has left; "NAME CODE SECONDS" into steps.tsv. run.sh gets
# the step limit as VKGMM_STEP_TIMEOUT: what any one of its programs may take.
cap=""
step() {
  local name=$1 left t0 rc limit inner
  shift
  left=$((deadline - reserve - $(date +%s)))
  limit=$((left < ${cap:-$step_limit} ? left : ${cap:-$step_limit}))
  inner=$((limit < step_limit ? limit : step_limit))
  if [ "$limit" -lt 10 ]; then
    say "--- $name: skipped (${left} s of the budget left)"
    printf '%s\tskip\t0\n' "$name" >>"$out/steps.tsv"
    return
  fi
  say "--- $name (at most ${limit} s)"
  t0=$(date +%s)
  VKGMM_STEP_TIMEOUT=$inner timeout -k 5 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
  rc=$?
  printf '%s\t%s\t%s\n' "$name" "$rc" "$(($(date +%s) - t0))" >>"$out/steps.tsv"
  [ "$rc" -eq 0 ] || say "$name: exit $rc$([ "$rc" -eq 124 ] && echo ' (timed out)')"
}
skip() { say "--- $1: skipped ($2)"; printf '%s\tskip\t0\n' "$1" >>"$out/steps.tsv"; }

machine() {
  date -u +%FT%TZ; uname -a
  (. /etc/os-release && echo "$PRETTY_NAME")
  echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null)"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,pstate --format=csv
    nvidia-smi
  fi
  echo "Vulkan driver: ${VK_DRIVER_FILES:-?}"
  [ -z "${VK_DRIVER_FILES:-}" ] || { cat "$VK_DRIVER_FILES"; echo; }
  [ -z "$bundle" ] || cat "$bundle/BUNDLE_INFO.txt"
  [ -z "$peer" ] || cat "$peer/PEER_INFO.txt"
  echo "python: $(command -v python3) $(python3 --version 2>&1)"
  nproc; free -g 2>/dev/null | head -2
}

bench_args() {  # the vkgmm bench arguments of step $1
  case $quick:$1 in
    0:bench) echo "" ;;  # the default presets
    0:bench_ids) echo "--presets ids" ;;
    # Every block format's decode (FMT-ids-decode) beside the f32 peer, and q8_0's and q4_K's prefill beside bf16's.
    0:bench_quant) echo "--presets quant --reps 20" ;;
    0:bench_models) echo "--model all --scale 8 --train" ;;
    # f16 (block-format weights with f16 activations): on the matrix units (bench_matrix, VKGMM_SCHEDULE=matrix:
    # also where the automatic schedule keeps off them, DeviceInfo::matrix_automatic), and the same calls on
    # the FMA schedule (bench_fma16, VKGMM_SCHEDULE=shared) for the ratio in one run.
    # bench_matrix2: the same matrix calls on two stage buffers (VKGMM_STAGE_BUFFERS=2), which no device
    # class takes untimed, beside bench_matrix's one.
    0:bench_matrix | 0:bench_fma16 | 0:bench_matrix2)
      echo "--preset moe-prefill --preset moe-fine --preset moe-grad --preset q8_0-prefill --preset q4_K-prefill --dtype f16 --reps 30" ;;
    1:bench) echo "--preset decode --reps 2 --metadata host" ;;
    1:bench_ids) echo "--preset ids-decode --reps 2" ;;
    1:bench_quant) echo "--preset q4_K-ids-decode --reps 2" ;;
    1:bench_models) echo "--model qwen3-30b-a3b --tokens 1 --reps 2 --train" ;;
    1:bench_matrix | 1:bench_fma16 | 1:bench_matrix2) echo "--preset moe-fine --reps 2 --metadata host --dtype f16" ;;
    # The FMA presets with two stage buffers (VKGMM_STAGE_BUFFERS=2), which NVIDIA's device class does not
    # take untimed: beside bench's one-buffer figures of the same presets.
    0:bench_stages2) echo "--preset moe-prefill --preset moe-fine --preset moe-grad --reps 30" ;;
    # The decode-sized routed calls with their ids read in the kernel (VKGMM_ROUTE_IN_KERNEL=1), which no
    # device takes untimed: beside bench_ids' routing build of the same presets.
    0:bench_ids_in_kernel) echo "--preset qwen3-ids-t1 --preset qwen3-ids-t8 --reps 30" ;;
    1:bench_ids_in_kernel) echo "--preset qwen3-ids-t1 --reps 2" ;;
    1:bench_stages2) echo "--preset moe-fine --reps 2 --metadata host" ;;
    # decode with group sizes on the device, beside the host path (dev/host): where the device path's cost
    # shows most. Its kernel reads the sizes itself; bench_device_build times the metadata build instead
    # (VKGMM_SIZES_IN_KERNEL=0), on both of its grids.
    0:bench_device) echo "--preset decode --metadata both --device-grid both --reps 30" ;;
    0:bench_device_build) bench_args bench_device ;;
    # decode's tilings swept on the direct schedule (the host path, each tiling timed alternately): its
    # 32-column GPU tiles of 1, 2, 4 and 8 rows among them, whose curve measures what a visit costs beside
    # its rows (kGpuDecodeVisitOverheadRows, which picks the rows per visit, device group sizes' estimate too).
    0:bench_decode_tiles) echo "--preset decode --sweep-tiling --metadata host --reps 20" ;;
    1:bench_decode_tiles) echo "--preset decode --sweep-tiling --metadata host --reps 1" ;;
    1:bench_device_build) bench_args bench_device ;;
    # tgmm alone at moe-fine's shape and zipf groups (its longest groups' reductions split over
    # workgroups), the sizes on the host and, timed alternately, on the device (the split decided by the
    # metadata build: dev/host); a preset always runs its own op, so the shape is given.
    0:bench_tgmm) echo "--op tgmm --m 4096 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata both --reps 20" ;;
    1:bench_tgmm) echo "--op tgmm --m 4096 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata both --reps 2" ;;
    # gmm on zipf groups at twice moe-fine's rows: tile heights per group, where the plan takes them (its plan
    # text: heights=), against one height of 128 rows for every group.
    0:bench_heights) echo "--op gmm --m 8192 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata host --reps 30" ;;
    0:bench_one_height)
      echo "--op gmm --m 8192 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata host --tiling 128,16,128 --reps 30" ;;
    1:bench_heights) echo "--op gmm --m 8192 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata host --reps 2" ;;
    1:bench_one_height)
      echo "--op gmm --m 8192 --k 512 --n 512 --groups 64 --dist zipf --empty-groups 8 --metadata host --tiling 128,16,128 --reps 2" ;;
    1:bench_device) echo "--preset decode --metadata both --device-grid both --reps 2" ;;
    # qwen3-ids-t512 at one height of 64 rows (the work's pick), beside bench_ids' same preset, whose plan
    # takes tile heights per group from its estimate of the rows per expert and the routing build divides
    # the rows (its plan text: heights=).
    0:bench_ids_one_height) echo "--preset qwen3-ids-t512 --tiling 64,16,128 --reps 30" ;;
    1:bench_ids_one_height) echo "--preset qwen3-ids-t512 --tiling 64,16,128 --reps 2" ;;
    # The tile-height passes of bench_heights and of bench_ids' qwen3-ids-t512 with a barrier before each
    # later pass (VKGMM_PASS_BARRIER=1), beside the same calls whose passes run side by side.
    0:bench_heights_barrier) bench_args bench_heights ;;
    1:bench_heights_barrier) bench_args bench_heights ;;
    0:bench_ids_barrier) echo "--preset qwen3-ids-t512 --reps 30" ;;
    1:bench_ids_barrier) echo "--preset qwen3-ids-t512 --reps 2" ;;
  esac
}
peer_quick=()
[ $quick = 0 ] || peer_quick=(--quick)

steps=${VKGMM_GPU_STEPS:-info bench bench_matrix tests_matrix tests bench_fma16 bench_device bench_tgmm bench_ids \
  bench_ids_in_kernel bench_quant ggml torch jax bench_models ggml_perf gpu_report bench_heights bench_one_height bench_stages2 \
  bench_matrix2 bench_ids_one_height bench_heights_barrier bench_ids_barrier bench_device_build bench_decode_tiles}
for s in $steps; do
  case $s in
    info)
      if [ -z "$bundle" ]; then skip info "no bundle"; continue; fi
      step info "$bundle/run.sh" info
      # The driver run.sh picked (NVIDIA's where present, else one that shows a device): the same for
      # the steps after, the ggml peer's included.
      icd=$(sed -n 's/^run.sh: Vulkan driver[^:]*: //p' "$out/info.err" | tail -1)
      if [ -n "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; fi
      machine >"$out/machine.txt" 2>&1 ;;
    bench | bench_ids | bench_quant | bench_models | bench_device | bench_tgmm | bench_heights | bench_one_height | \
      bench_ids_one_height)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046  # the arguments are words
      step "$s" "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_decode_tiles)
      # Every candidate on the direct schedule: with a fixed tiling a GPU's automatic schedule is the
      # shared one, which would not run the decode tiles at all.
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_SCHEDULE=direct "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_matrix)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_SCHEDULE=matrix "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_matrix2)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_SCHEDULE=matrix VKGMM_STAGE_BUFFERS=2 "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_fma16)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_SCHEDULE=shared "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_stages2)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_STAGE_BUFFERS=2 "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_ids_in_kernel)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_ROUTE_IN_KERNEL=1 "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_heights_barrier | bench_ids_barrier)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_PASS_BARRIER=1 "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    bench_device_build)
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      # shellcheck disable=SC2046
      step "$s" env VKGMM_SIZES_IN_KERNEL=0 "$bundle/run.sh" bench --json $(bench_args "$s") ;;
    gpu_report)
      # What the driver's compiler made of every pipeline (registers, spills, shared memory; the
      # disassembly where it gives one): compile-only, the first device; the f16 cases in a quick run.
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      only=()
      [ $quick = 0 ] || only=(--only "moe-prefill f16")
      cap=60 step "$s" "$bundle/run.sh" vkgmm gpu-report --device 0 --json "${only[@]}" ;;
    ggml | ggml_perf)
      if [ -z "$peer" ]; then skip "$s" "no ggml peer"; continue; fi
      # The bundle's loader (and the GL dispatch libraries NVIDIA's driver loads); ggml skips CPU devices
      # unless told: one driver is enumerated, so device 0 is it.
      ld=${bundle:+$bundle/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      if [ "$s" = ggml ]; then
        step ggml env LD_LIBRARY_PATH="${ld#:}" GGML_VK_VISIBLE_DEVICES=0 \
          "$peer/ggml_mul_mat_id" "${peer_quick[@]}"
      else
        # ggml's own timestamps per op (stderr, at exit): the device time of the small calls, whose wall
        # time is mostly submission.
        presets=(--preset decode --preset ids-decode --preset qwen3-ids-t1 --preset qwen3-ids-t8)
        step ggml_perf env LD_LIBRARY_PATH="${ld#:}" GGML_VK_VISIBLE_DEVICES=0 \
          GGML_VK_PERF_LOGGER=1 GGML_VK_PERF_LOGGER_FREQUENCY=1000000 "$peer/ggml_mul_mat_id" "${peer_quick[@]}" "${presets[@]}"
      fi ;;
    torch | jax)
      if [ -z "$pypeer" ]; then skip "$s" "no torch_jax_peers.py"; continue; fi
      routing=()
      for f in "$out/bench.out" "$out/bench_ids.out" "$out/ggml.out"; do [ -s "$f" ] && routing+=("$f"); done
      step "$s" python3 "$pypeer" --only "$s" "${peer_quick[@]}" ${routing[@]:+--routing "${routing[@]}"} ;;
    tests_matrix)
      # The matrix schedule's own tests (not its sweeps), at most 60 s: each extension's build against the
      # reference (MatrixTest.EachExtensionItsOwnBuildSameProducts: KHR and NV where the driver has both);
      # and the gated activations at NaN and infinities (isnan and min of a NaN, as the driver compiles them).
      if [ -z "$bundle" ]; then skip "$s" "no bundle"; continue; fi
      cap=60 step "$s" env VKGMM_OUT="$out/tests_matrix" "$bundle/run.sh" test \
        "--gtest_filter=MatrixTest.*:Embedding.*:DeviceTest.GatedActivationsAtSpecialValues" ;;
    tests)
      if [ -z "$bundle" ]; then skip tests "no bundle"; continue; fi
      filter=()
      [ $quick = 0 ] || filter=("--gtest_filter=CDefaults.*:Teardown.*:GrowingStructs.*")
      # At most the step limit, as each program; the gtest JSON is written when a program ends, tests.out
      # has every case's line as it ran.
      step tests env VKGMM_OUT="$out/tests" "$bundle/run.sh" test "${filter[@]}" ;;
    *) skip "$s" "unknown step" ;;
  esac
done

# --- summary (python3 when there is one: the medians side by side)
{
  echo "gpu_session: $(($(date +%s) - start)) s of ${budget}; steps (exit code, seconds):"
  column -t "$out/steps.tsv" 2>/dev/null || cat "$out/steps.tsv"
  grep -h '^Vulkan driver:' "$out/machine.txt" 2>/dev/null
  for t in tests_matrix tests; do
    [ ! -s "$out/$t/exit_codes.txt" ] || { echo "$t: test programs (exit codes):"; sed 's/^/  /' "$out/$t/exit_codes.txt"; }
  done
  if command -v python3 >/dev/null; then
    python3 - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
rows = []
def lines(name):
    try:
        text = open(os.path.join(out, name)).read()
    except OSError:
        return []
    objs = []
    try:
        objs = [json.loads(text)]
    except ValueError:
        for l in text.splitlines():
            try:
                objs.append(json.loads(l))
            except ValueError:
                pass
    return [o for o in objs if isinstance(o, dict)]
for f in ("bench.out", "bench_matrix.out", "bench_fma16.out", "bench_device.out", "bench_tgmm.out", "bench_heights.out",
          "bench_one_height.out", "bench_ids.out", "bench_quant.out", "bench_models.out", "bench_stages2.out",
          "bench_matrix2.out", "bench_ids_in_kernel.out", "bench_ids_one_height.out", "bench_heights_barrier.out",
          "bench_ids_barrier.out", "bench_device_build.out", "bench_decode_tiles.out"):
    for o in lines(f):
        for w in o.get("sweep", []):  # --sweep-tiling: each tiling's time, the default's first
            for t in w.get("tried", []):
                rows.append(("vkgmm", f"{w.get('name')} (tiling {t.get('tiling')})", "", "sweep", t.get("gpu_ms_median"),
                             None, None))
        if o.get("device"):
            print(f"vkgmm ({f}) device: {o['device']}: read {o.get('read_gbps')} GB/s, copy {o.get('copy_gbps')} GB/s,"
                  f" FMA ceiling {o.get('ceiling_gflops')} GFLOP/s")
        for w in o.get("workloads", []):
            # A custom workload is named by its step (bench_tgmm, bench_heights, bench_one_height).
            name = w.get("name") if w.get("name") != "custom" else f"custom ({f[:-4]})"
            if f in ("bench_stages2.out", "bench_matrix2.out"):
                name += " (2 stage buffers)"
            if f == "bench_ids_in_kernel.out":
                name += " (ids in the kernel)"
            if f == "bench_ids_one_height.out":
                name += " (one height)"
            if f in ("bench_heights_barrier.out", "bench_ids_barrier.out"):
                name += " (a barrier between passes)"
            if f == "bench_device_build.out":
                name += " (device sizes: the metadata build)"
            rows.append(("vkgmm", name, w.get("dtype", ""), "gpu", w.get("gpu_ms_median"), w.get("gflops"), w.get("gbps")))
            if w.get("device_gpu_ms_median") is not None:  # --metadata both: the sizes on the device, alternated
                rows.append(("vkgmm", name, w.get("dtype", ""), f"device sizes {w.get('device_ratio') or 0:.2f}x",
                             w["device_gpu_ms_median"], None, None))
            t = w.get("train")
            if t and t.get("backward_ms") is not None:  # --train: the layer's backward, its ratio in the op column
                rows.append(("vkgmm", w.get("name"), w.get("dtype", ""), f"train bwd {t.get('backward_over_forward', 0):.2f}x fwd",
                             t["backward_ms"], None, None))
for f in ("ggml.out", "torch.out", "jax.out"):
    for o in lines(f):
        if "workload" not in o:
            if o.get("device"):
                print(f"{o.get('peer')} device: {o['device']}")
            continue
        rows.append((o.get("peer"), o["workload"], o.get("weights", o.get("dtype", "")), o.get("op"),
                     o.get("median_ms"), o.get("gflops"), o.get("gbps") if "error" not in o else o["error"][:60]))
if rows:
    print(f"{'who':12} {'workload':28} {'type':6} {'op':22} {'median ms':>10} {'GFLOP/s':>10} {'GB/s':>9}")
    for who, wl, t, op, ms, gf, gb in rows:
        ms = f"{ms:.4f}" if isinstance(ms, (int, float)) else "-"
        gf = f"{gf:.1f}" if isinstance(gf, (int, float)) else "-"
        gb = f"{gb:.1f}" if isinstance(gb, (int, float)) else str(gb or "-")
        print(f"{str(who):12} {str(wl):28} {str(t):6} {str(op):22} {ms:>10} {gf:>10} {gb:>9}")
EOF
    # The model of docs/gpu-results.md against this run's own rates and times.
    estimates=$(find_first "$root/scripts/gpu_estimates.py" "$here/gpu_estimates.py") || estimates=""
    jsons=()
    for f in "$out/bench.out" "$out/bench_ids.out" "$out/bench_matrix.out" "$out/bench_tgmm.out"; do [ -s "$f" ] && jsons+=("$f"); done
    if [ -n "$estimates" ] && [ ${#jsons[@]} -gt 0 ]; then
      echo "the model (scripts/gpu_estimates.py) against this run:"
      python3 "$estimates" --bench-json "${jsons[@]}" || echo "gpu_estimates.py failed"
    fi
  fi
} 2>&1 | tee "$out/summary.txt"
