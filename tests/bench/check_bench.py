#!/usr/bin/env python3
"""End-to-end checks of `vkgmm bench` on tiny workloads (the device may be a CPU emulator).

usage: check_bench.py /path/to/vkgmm refuse|json|sweep

  refuse: with VKGMM_BENCH_PERTURB=1 the bench must name the workload, exit 1 and time nothing (on the
          host path and, with --metadata device, on the device path).
  json:   --json must be one object with the documented fields, for gmm, tgmm (bf16) and backward, with
          --metadata both (the default), device and host, and --device-grid both / bound (the indirect
          over upper-bound ratio there exactly with both).
  sweep:  --sweep-tiling must cache a tiling that --tiling auto then runs (in a scratch cache directory).
  ids:    a tiny workload routed by expert ids (--top-k): its JSON fields (per-slot, chain and sorted-gemm
          times and ratios, in one and in three expert windows), the table, and a refused wrong result.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

TIMEOUT_S = 600
TINY = ["--m", "96", "--k", "64", "--n", "80", "--groups", "5", "--reps", "2", "--warmup", "1"]
FIELDS = ["name", "op", "m", "k", "n", "groups", "dtype", "tiling", "gpu_ms_median", "gpu_ms_min",
          "wall_ms_median", "host_ms_median", "gflops", "gbps", "copy_fraction", "ceiling_fraction",
          "baseline_one_group_ratio", "baseline_naive_ratio", "baseline_openblas_ratio", "metadata"]
DEVICE_FIELDS = ["device_tiling", "device_gpu_ms_median", "device_gpu_ms_min", "device_wall_ms_median",
                 "device_host_ms_median", "device_ratio"]
GRID_FIELDS = ["bound_gpu_ms_median", "indirect_over_bound"]
FIELDS += DEVICE_FIELDS + GRID_FIELDS + ["app_buffers_gpu_ms_median", "app_buffers_ratio", "device_grid"]


def run(exe, args, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([exe, "bench"] + args, capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr


def fail(msg, out="", err=""):
    print("FAIL: " + msg)
    if out:
        print("--- stdout\n" + out)
    if err:
        print("--- stderr\n" + err)
    sys.exit(1)


def check_refuse(exe):
    for extra, needle in (([], "tiling"), (["--metadata", "device"], "device metadata")):
        code, out, err = run(exe, TINY + extra, {"VKGMM_BENCH_PERTURB": "1"})
        if code != 1:
            fail(f"{extra}: exit status {code}, expected 1", out, err)
        if "workload 'custom' (" + needle not in err or "differs from the CPU reference" not in err:
            fail(f"{extra}: stderr does not name the workload, the path and the mismatch", out, err)
        if out.strip():
            fail(f"{extra}: a refused run printed results", out, err)
        if "timing" in err or "baseline" in err:
            fail(f"{extra}: a refused workload was timed", out, err)
    # Without the switch the same workload passes: the refusal came from the perturbation.
    code, out, err = run(exe, TINY)
    if code != 0:
        fail(f"the unperturbed run failed with status {code}", out, err)


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check_times(w, prefix, out):
    """One path's times (prefix "" or "device_"): positive, min <= median, host part <= wall."""
    t = {key: w[prefix + key] for key in ["gpu_ms_median", "gpu_ms_min", "wall_ms_median", "host_ms_median"]}
    for key in ["gpu_ms_median", "gpu_ms_min", "wall_ms_median"]:
        if not positive(t[key]):
            fail(f"{prefix}{key} = {t[key]!r} is not a positive number", out)
    if not (isinstance(t["host_ms_median"], (int, float)) and t["host_ms_median"] >= 0):
        fail(f"{prefix}host_ms_median = {t['host_ms_median']!r}", out)
    if t["gpu_ms_min"] > t["gpu_ms_median"]:
        fail(f"{prefix}gpu_ms_min > {prefix}gpu_ms_median", out)
    if t["wall_ms_median"] < t["host_ms_median"]:
        fail(f"{prefix}wall time shorter than its host part", out)


def check_json_run(exe, extra, op, dtype, metadata="both", grid="auto"):
    code, out, err = run(exe, TINY + extra + ["--json"])
    if code != 0:
        fail(f"--json {' '.join(extra)}: exit status {code}", out, err)
    try:
        doc = json.loads(out)
    except json.JSONDecodeError as e:
        fail(f"--json output does not parse: {e}", out, err)
    if not isinstance(doc.get("device"), str) or not doc["device"]:
        fail("no device name", out)
    if not positive(doc.get("ceiling_gflops")):
        fail("ceiling_gflops is not a positive number", out)
    ws = doc.get("workloads")
    if not isinstance(ws, list) or len(ws) != 1:
        fail("workloads is not a list of one workload", out)
    w = ws[0]
    missing = [f for f in FIELDS if f not in w]
    if missing:
        fail(f"workload lacks {missing}", out)
    expect = {"name": "custom", "op": op, "m": 96, "k": 64, "n": 80, "groups": 5, "dtype": dtype,
              "metadata": metadata, "device_grid": grid}
    for key, value in expect.items():
        if w[key] != value:
            fail(f"{key} = {w[key]!r}, expected {value!r}", out)
    for key in ["gflops", "gbps", "copy_fraction", "ceiling_fraction", "baseline_one_group_ratio",
                "baseline_naive_ratio"]:
        if not positive(w[key]):
            fail(f"{key} = {w[key]!r} is not a positive number", out)
    check_times(w, "", out)
    # App-owned buffers (borrowed): checked against the reference, then timed beside vkgmm's own.
    for key in ["app_buffers_gpu_ms_median", "app_buffers_ratio"]:
        if not positive(w[key]):
            fail(f"{key} = {w[key]!r} is not a positive number", out)
    if sum(w["group_sizes"]) != 96 or len(w["group_sizes"]) != 5:
        fail(f"group_sizes {w['group_sizes']} do not route 96 rows to 5 groups", out)
    # The OpenBLAS ratio is there exactly when the build has OpenBLAS.
    if (doc.get("openblas") is None) != (w["baseline_openblas_ratio"] is None):
        fail("baseline_openblas_ratio disagrees with the openblas entry", out)
    if w["baseline_openblas_ratio"] is not None and not positive(w["baseline_openblas_ratio"]):
        fail("baseline_openblas_ratio is not a positive number", out)
    # The device path's times are there exactly with --metadata both (else the main fields are the one
    # path timed); its ratio is its gpu ms over the host path's, and it runs the host path's tiling.
    if metadata == "both":
        check_times(w, "device_", out)
        if not positive(w["device_ratio"]):
            fail(f"device_ratio = {w['device_ratio']!r} is not a positive number", out)
        if abs(w["device_ratio"] - w["device_gpu_ms_median"] / w["gpu_ms_median"]) > 1e-3 * w["device_ratio"]:
            fail("device_ratio is not device_gpu_ms_median / gpu_ms_median", out)
        if op != "backward" and w["device_tiling"] != w["tiling"]:
            fail(f"the device path ran {w['device_tiling']}, the host path {w['tiling']}", out)
        if w["device_tiling"] != w["tiling"] and not any("device path ran tiling" in n for n in w["notes"]):
            fail("the device path's tiling differs from the host path's without a note", out)
    else:
        for key in DEVICE_FIELDS:
            if w[key] is not None:
                fail(f"--metadata {metadata}: {key} = {w[key]!r}, expected null", out)
    # --device-grid both: the upper-bound grid's time beside the indirect grid's (the device path's:
    # device_* with --metadata both, else the main fields), and their ratio; null otherwise.
    if grid == "both":
        indirect = w["device_gpu_ms_median"] if metadata == "both" else w["gpu_ms_median"]
        for key in GRID_FIELDS:
            if not positive(w[key]):
                fail(f"{key} = {w[key]!r} is not a positive number", out)
        if abs(w["indirect_over_bound"] - indirect / w["bound_gpu_ms_median"]) > 1e-3 * w["indirect_over_bound"]:
            fail("indirect_over_bound is not the indirect grid's gpu ms over bound_gpu_ms_median", out)
    else:
        for key in GRID_FIELDS:
            if w[key] is not None:
                fail(f"--device-grid {grid}: {key} = {w[key]!r}, expected null", out)
    flop = 2 * 96 * 64 * 80 * (2 if op == "backward" else 1)
    if abs(w["gflops"] - flop / (w["gpu_ms_median"] * 1e6)) > 1e-3 * w["gflops"]:
        fail("gflops does not match the FLOP count over gpu_ms_median", out)


def check_json(exe):
    check_json_run(exe, ["--dist", "zipf", "--empty-groups", "1"], "gmm", "f32")
    check_json_run(exe, ["--op", "tgmm", "--dtype", "bf16", "--metadata", "device"], "tgmm", "bf16", "device")
    check_json_run(exe, ["--op", "backward", "--dist", "uniform", "--tiling", "32,32,32"], "backward", "f32")
    check_json_run(exe, ["--op", "backward", "--metadata", "host"], "backward", "f32", "host")
    check_json_run(exe, ["--device-grid", "both"], "gmm", "f32", "both", "both")
    check_json_run(exe, ["--op", "backward", "--metadata", "device", "--device-grid", "both"], "backward", "f32",
                   "device", "both")
    check_json_run(exe, ["--device-grid", "bound"], "gmm", "f32", "both", "bound")


def check_sweep(exe):
    with tempfile.TemporaryDirectory() as cache:
        env = {"XDG_CACHE_HOME": cache}
        code, out, err = run(exe, TINY + ["--sweep-tiling", "--json"], env)
        if code != 0:
            fail(f"--sweep-tiling: exit status {code}", out, err)
        sweep = json.loads(out)["sweep"]
        if len(sweep) != 1 or len(sweep[0]["tried"]) < 2:
            fail("the sweep tried fewer than two tilings", out, err)
        best = sweep[0]["best_tiling"]
        files = os.listdir(os.path.join(cache, "vkgmm"))
        if len(files) != 1 or not files[0].startswith("tiling-"):
            fail(f"cache directory holds {files}", out, err)
        code, out, err = run(exe, TINY + ["--tiling", "auto", "--json"], env)
        if code != 0:
            fail(f"--tiling auto: exit status {code}", out, err)
        tiling = json.loads(out)["workloads"][0]["tiling"]
        if tiling != best.split("/")[0]:
            fail(f"--tiling auto ran {tiling}, the sweep's best was {best}", out, err)


IDS = ["--m", "6", "--k", "64", "--n", "80", "--groups", "12", "--top-k", "4", "--reps", "2", "--warmup", "1"]
IDS_FIELDS = ["top_k", "tokens", "experts", "experts_selected", "expert_shards", "flop", "bytes",
              "per_slot_gpu_ms_median", "combine_ratio", "combine_ms", "chain_gpu_ms_median", "ids_over_chain",
              "chain_tiling", "sorted_gpu_ms_median", "ids_over_sorted", "sorted_tiling"]


def check_ids(exe):
    for extra, shards in (([], 1), (["--expert-shards", "3", "--dtype", "bf16"], 3)):
        code, out, err = run(exe, IDS + extra + ["--json"])
        if code != 0:
            fail(f"ids {extra}: exit status {code}", out, err)
        w = json.loads(out)["workloads"][0]
        missing = [f for f in FIELDS + IDS_FIELDS if f not in w]
        if missing:
            fail(f"ids workload lacks {missing}", out)
        expect = {"name": "custom", "op": "gmm", "m": 6, "k": 64, "n": 80, "groups": 12, "top_k": 4,
                  "tokens": 6, "experts": 12, "metadata": "ids", "dist": "router", "expert_shards": shards}
        for key, value in expect.items():
            if w[key] != value:
                fail(f"ids: {key} = {w[key]!r}, expected {value!r}", out)
        if sum(w["group_sizes"]) != 24 or len(w["group_sizes"]) != 12:
            fail(f"ids: group_sizes {w['group_sizes']} are not 24 slots over 12 experts", out)
        if w["experts_selected"] != sum(1 for g in w["group_sizes"] if g > 0) or max(w["group_sizes"]) > 6:
            fail("ids: experts_selected disagrees with group_sizes, or an expert got a token twice", out)
        check_times(w, "", out)
        for key in ["gflops", "gbps", "copy_fraction", "ceiling_fraction", "per_slot_gpu_ms_median", "combine_ratio",
                    "chain_gpu_ms_median", "ids_over_chain", "sorted_gpu_ms_median", "ids_over_sorted"]:
            if not positive(w[key]):
                fail(f"ids: {key} = {w[key]!r} is not a positive number", out)
        ms = w["gpu_ms_median"]
        for ratio, base in (("combine_ratio", "per_slot_gpu_ms_median"), ("ids_over_chain", "chain_gpu_ms_median"),
                            ("ids_over_sorted", "sorted_gpu_ms_median")):
            if abs(w[ratio] - ms / w[base]) > 1e-3 * w[ratio]:
                fail(f"ids: {ratio} is not gpu_ms_median / {base}", out)
        if w["flop"] != 2 * 6 * 4 * 64 * 80:
            fail(f"ids: flop = {w['flop']}, expected 2*T*top_k*k*n", out)
        if abs(w["gflops"] - w["flop"] / (ms * 1e6)) > 1e-3 * w["gflops"]:
            fail("ids: gflops does not match the FLOP count over gpu_ms_median", out)
        esize = 2 if "bf16" in extra else 4
        if w["bytes"] != esize * (w["experts_selected"] * 64 * 80 + 6 * 64) + 4 * 6 * 80:
            fail(f"ids: bytes = {w['bytes']}, expected the selected experts' weights + activations + output", out)
    # The table has the routed section; a wrong result is refused before anything is timed.
    code, out, err = run(exe, IDS)
    if code != 0 or "ids/ch" not in out or "c/slot" not in out:
        fail("ids: the table lacks the routed columns", out, err)
    code, out, err = run(exe, IDS, {"VKGMM_BENCH_PERTURB": "1"})
    if code != 1 or "workload 'custom' (ids" not in err or out.strip() or "timing" in err:
        fail(f"ids: a perturbed result was not refused (status {code})", out, err)


def main():
    exe, mode = sys.argv[1], sys.argv[2]
    {"refuse": check_refuse, "json": check_json, "sweep": check_sweep, "ids": check_ids}[mode](exe)
    print("ok")


if __name__ == "__main__":
    main()
