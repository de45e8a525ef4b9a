#!/usr/bin/env python3
"""What vkgmm's kernels should take on an H100/H200, from waves, bytes and FLOPs, beside the last measured
times (docs/gpu-results.md): the table the next GPU run checks, the model as well as the kernels.

    scripts/gpu_estimates.py                       the table for the H200 run of 2026-11-28 (markdown)
    scripts/gpu_estimates.py --bench-json F [F...]  the same for a new run: the device's FMA ceiling and
                                                   streaming read, and the measured times, from its
                                                   `vkgmm bench --json` files (scripts/gpu_session.sh's
                                                   bench_*.out); presets it did not run show "-"

The model, per preset, with the tiles the device-class tables choose for NVIDIA (tests/test_kernel_choice.cpp):
  - compute: the tiles spread over the SMs, each SM's share at its part of the device's rate (fp32 FMAs, or
    f16 matrix units), the busiest SM setting the time: ceil(tiles / SMs) x a tile's FLOPs / (rate / SMs);
  - memory: every input read once and the output written once at the measured streaming read;
  - the estimate is the larger of the two. Fixed costs (a dispatch, a barrier, the routing build) are left
    out: where the measured time is many times the estimate, they or the kernel's own loop are the cause.
gmm over the same skewed groups takes the tile heights the plan takes (host/gmm_tile_heights.cpp), the passes'
tiles largest first, each on the SM that frees first; beside it the same gmm in 64-row tiles alone.
tgmm over skewed groups (the bench's moe-fine zipf sizes) takes its work items instead of equal tiles: each
output block of a group (or, where host/tgmm_items.cpp splits the group's reduction, of a chunk of its rows)
is one item, the items placed longest first on the least loaded SM; the split's partial sums are written and
read back once more. Its two rows are the plan with the split (what `bench_tgmm` times) and without it (one
workgroup walking each group's rows, the plan before the split): the split's predicted gain.
The device's figures are the H200 run's own (2026-11-28): FMA ceiling 64.3 TFLOP/s, streaming read 4.47 TB/s,
132 SMs; the f16 matrix rate is the register-only HMMA loop measured on an H100 (402 TFLOP/s).
"""
import argparse
import json
import math

SMS = 132
FP32 = 64.3e12
F16_MATRIX = 402e12
READ = 4.47e12


def tiles_of(groups, tm, n, tn):
    return sum(math.ceil(g / tm) for g in groups if g > 0) * math.ceil(n / tn)


def estimate(flops, tiles, tile_flops, rate, bytes_moved):
    compute = math.ceil(tiles / SMS) * tile_flops / (rate / SMS)
    memory = bytes_moved / READ
    return max(compute, memory), compute, memory


# Each row's bench workload (name, dtype) in `vkgmm bench --json`, the f16 matrix row's under
# VKGMM_SCHEDULE=matrix (scripts/gpu_session.sh's bench_matrix).
BENCH_NAMES = {
    "moe-prefill f32": ("moe-prefill", "f32"),
    "moe-prefill f16, matrix units": ("moe-prefill", "f16"),
    "decode f32 (16 rows, 7 of 8 groups)": ("decode", "f32"),
    "ids-decode f32 (16 slots, 5 experts)": ("ids-decode", "f32"),
    "qwen3-ids-t1 f32": ("qwen3-ids-t1", "f32"),
    "qwen3-ids-t8 f32 (64 slots, 31 experts)": ("qwen3-ids-t8", "f32"),
    "moe-grad f32 (d_lhs + d_rhs)": ("moe-grad", "f32"),
    "gmm moe-fine f32 (zipf), tile heights": ("moe-fine", "f32"),
    "gmm moe-fine f32 (zipf), 64-row tiles": None,  # one height: estimated only
    "tgmm moe-fine f32 (zipf), split": ("bench_tgmm", "f32"),
    "tgmm moe-fine f32 (zipf), unsplit": None,  # the plan no longer takes it: estimated only
}
# Rows the 2026-11-28 run measured nothing for, and why.
NOT_MEASURED = {"moe-prefill f16, matrix units": "- (wrong results)"}


def from_bench(files):
    """The device's rates and each workload's median time (s) from `vkgmm bench --json` files."""
    global FP32, READ
    times = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        if run.get("ceiling_gflops"):
            FP32 = run["ceiling_gflops"] * 1e9
        if run.get("read_gbps"):
            READ = run["read_gbps"] * 1e9
        for w in run.get("workloads", []):
            if w.get("gpu_ms_median") is None:
                continue
            key = (w["name"], w["dtype"])
            # scripts/gpu_session.sh's bench_tgmm: a custom workload at moe-fine's shape.
            if w["name"] == "custom" and w.get("op") == "tgmm" and w.get("group_sizes") == MOE_FINE:
                key = ("bench_tgmm", w["dtype"])
            times[key] = w["gpu_ms_median"] * 1e-3
    return times


# moe-fine's group sizes as `vkgmm bench` draws them (zipf, 8 empty; its --json group_sizes).
MOE_FINE = [110, 12, 26, 12, 0, 160, 0, 1025, 308, 26, 18, 21, 54, 30, 12, 22, 25, 77, 15, 62, 32, 97, 19, 0, 0, 31,
            56, 45, 33, 477, 60, 123, 18, 0, 9, 28, 21, 23, 18, 12, 15, 0, 13, 56, 34, 35, 14, 26, 186, 0, 29, 78, 246,
            12, 23, 63, 0, 13, 21, 15, 46, 10, 21, 23]
# The small presets' rows per group (per expert: the slots its seeded router sends it), the same way.
DECODE = [0, 3, 1, 5, 2, 1, 1, 3]
IDS_DECODE = [2, 4, 6, 2, 2, 0, 0, 0]
QWEN_T8 = [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 4, 2, 0, 1, 0, 3, 3, 3, 0, 0, 0, 0, 0, 2, 3, 0, 4, 0, 0, 0, 0, 1, 0, 0,
           2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0, 2, 0, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,
           0, 0, 0, 0, 0, 3, 3, 0, 1, 0, 1, 0, 2, 0, 0, 1, 0, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0,
           0, 0, 0, 0, 1, 0, 3, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]


def tgmm_chunks(groups, step, blocks, concurrent):
    """host/tgmm_items.cpp's rule: each group's chunks of rows (one chunk: not split)."""
    busy = [g for g in groups if g > 0]
    total = sum(busy)
    mean = math.ceil(total / len(busy))
    chunk = math.ceil(max(mean, 4 * step, math.ceil(total * blocks / concurrent)) / step) * step
    longest = max(busy)
    if longest <= 2 * chunk:
        return [[g] for g in groups]
    count = min(math.ceil(longest / chunk), 16)
    out = []
    for g in groups:
        if g <= chunk:
            out.append([g])
            continue
        length = math.ceil(math.ceil(g / count) / step) * step
        out.append([max(0, min(g, (s + 1) * length) - s * length) for s in range(count)])
    return out


def gmm_heights(groups, largest, smallest, overhead):
    """host/gmm_tile_heights.cpp's passes: each group's whole tiles of the largest height, its remainder at the
    height whose visits cost least (ties to the larger); {height: visits}."""
    visits = {}
    for g in groups:
        if g >= largest:
            visits[largest] = visits.get(largest, 0) + g // largest
        rest = g % largest
        if rest:
            best, t = largest, largest // 2
            while t >= smallest:
                if math.ceil(rest / t) * (t + overhead) < math.ceil(rest / best) * (best + overhead):
                    best = t
                t //= 2
            visits[best] = visits.get(best, 0) + math.ceil(rest / best)
    return visits


def gmm_passes_case(name, groups, k, n, tn, visits, measured):
    """gmm with `visits` ({height: visits}), the passes dispatched largest first, each workgroup on the SM that
    frees first (host/gmm_tile_heights.cpp's visits_time, with each tile's FLOPs as its cost)."""
    tiles_n = math.ceil(n / tn)
    free_at = [0.0] * SMS
    for height in sorted(visits, reverse=True):
        for _ in range(visits[height] * tiles_n):
            at = free_at.index(min(free_at))
            free_at[at] += 2 * height * tn * k / (FP32 / SMS)
    compute = max(free_at)
    rows = sum(groups)
    moved = rows * k * 4 + sum(1 for g in groups if g > 0) * k * n * 4 + rows * n * 4
    memory = moved / READ
    tiles = sum(visits.values()) * tiles_n
    return name, 2 * rows * k * n, moved, tiles, compute, memory, max(compute, memory), measured


def tgmm_case(name, groups, k, n, tk, tn, step, split, measured):
    blocks = math.ceil(k / tk) * math.ceil(n / tn)
    chunks = tgmm_chunks(groups, step, blocks, 2 * SMS) if split else [[g] for g in groups]
    items = sorted((rows for c in chunks for rows in c for _ in range(blocks)), reverse=True)
    # Longest first on the least loaded SM: the busiest SM's rows of 2 * tk * tn FLOPs each.
    load = [0] * SMS
    for rows in items:
        load[load.index(min(load))] += rows
    compute = max(load) * 2 * tk * tn / (FP32 / SMS)
    split_groups = sum(1 for c in chunks if len(c) > 1)
    partials = split_groups * len(max(chunks, key=len)) * k * n * 4
    rows = sum(groups)
    moved = rows * k * 4 + rows * n * 4 + len(groups) * k * n * 4 + 2 * partials
    memory = moved / READ
    return name, 2 * rows * k * n, moved, len(items), compute, memory, max(compute, memory), measured


def gmm_case(name, groups, k, n, tm, tn, rate, in_bytes, w_bytes, out_bytes, measured):
    rows = sum(groups)
    used = sum(1 for g in groups if g > 0)
    flops = 2 * rows * k * n
    tiles = tiles_of(groups, tm, n, tn)
    moved = rows * k * in_bytes + used * k * n * w_bytes + rows * n * out_bytes
    total, compute, memory = estimate(flops, tiles, 2 * tm * tn * k, rate, moved)
    return name, flops, moved, tiles, compute, memory, total, measured


def rows():
    prefill = [512] * 8
    out = [
        gmm_case("moe-prefill f32", prefill, 1024, 1024, 128, 128, FP32, 4, 4, 4, 1.92e-3),
        gmm_case("moe-prefill f16, matrix units", prefill, 1024, 1024, 128, 128, F16_MATRIX, 2, 2, 2, None),
        gmm_case("decode f32 (16 rows, 7 of 8 groups)", DECODE, 1024, 1024, 2, 32, FP32, 4, 4, 4, 0.060e-3),
        # ids-decode: 8 tokens, top-2 of 8 experts: 16 slots on the 5 experts the router picks.
        gmm_case("ids-decode f32 (16 slots, 5 experts)", IDS_DECODE, 1024, 1024, 2, 32, FP32, 4, 4, 4, 0.136e-3),
        # qwen3-ids-t1: 1 token, top-8 of 128 experts, k = 2048, n = 768: 8 experts' weights.
        gmm_case("qwen3-ids-t1 f32", [1] * 8, 2048, 768, 1, 32, FP32, 4, 4, 4, 0.188e-3),
        # qwen3-ids-t8: 64 slots over 128 experts, 31 of them picked by the router (up to 4 slots each).
        gmm_case("qwen3-ids-t8 f32 (64 slots, 31 experts)", QWEN_T8, 2048, 768, 1, 32, FP32, 4, 4, 4, 0.283e-3),
    ]
    # moe-grad: d_lhs (a gmm) and d_rhs (a tgmm) of moe-prefill, each its FLOPs, on the FMA tiles.
    fwd = out[0]
    # Each part reads two of the three operands and writes the third: the forward's bytes each.
    out.append(("moe-grad f32 (d_lhs + d_rhs)", 2 * fwd[1], 2 * fwd[2], 2 * fwd[3], 2 * fwd[4], 2 * fwd[5], 2 * fwd[6],
                1.65e-3))
    # gmm on moe-fine's groups, k = n = 512, NVIDIA's 128-column FMA tiles of 16 to 128 rows (64 rows' overhead
    # per visit): the heights the plan takes on 132 SMs, and the 64-row tiles it took before by work alone.
    out.append(gmm_passes_case("gmm moe-fine f32 (zipf), tile heights", MOE_FINE, 512, 512, 128,
                               gmm_heights(MOE_FINE, 128, 16, 64), None))
    out.append(gmm_passes_case("gmm moe-fine f32 (zipf), 64-row tiles", MOE_FINE, 512, 512, 128,
                               {64: sum(math.ceil(g / 64) for g in MOE_FINE)}, None))
    # tgmm on moe-fine's groups, k = n = 512, NVIDIA's 128 x 128 blocks stepping 16 rows: not yet run on a GPU.
    out.append(tgmm_case("tgmm moe-fine f32 (zipf), split", MOE_FINE, 512, 512, 128, 128, 16, True, None))
    out.append(tgmm_case("tgmm moe-fine f32 (zipf), unsplit", MOE_FINE, 512, 512, 128, 128, 16, False, None))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench-json", nargs="+", metavar="FILE", help="a run's `vkgmm bench --json` output")
    args = parser.parse_args()
    table = rows()
    if args.bench_json:
        times = from_bench(args.bench_json)
        table = [(*r[:-1], times.get(BENCH_NAMES[r[0]]) if BENCH_NAMES[r[0]] else None) for r in rows()]
    print("| preset | GFLOP | MB moved | tiles | compute ms | memory ms | estimate ms | measured ms | measured / estimate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, flops, moved, tiles, compute, memory, total, measured in table:
        ratio = f"{measured / total:.1f}" if measured else "-"
        shown = f"{measured * 1e3:.3f}" if measured else "-" if args.bench_json else NOT_MEASURED.get(name, "-")
        print(f"| {name} | {flops / 1e9:.2f} | {moved / 1e6:.1f} | {tiles} | {compute * 1e3:.4f} | {memory * 1e3:.4f} | "
              f"{total * 1e3:.4f} | {shown} | {ratio} |")


if __name__ == "__main__":
    main()
