#!/usr/bin/env python3
"""End-to-end checks of `vkgmm bench` on tiny workloads (the device may be a CPU emulator).

usage: check_bench.py /path/to/vkgmm refuse|json|sweep

  refuse: with VKGMM_BENCH_PERTURB=1 the bench must name the workload, exit 1 and time nothing.
  json:   --json must be one object with the documented fields, for gmm, tgmm (bf16) and backward.
  sweep:  --sweep-tiling must cache a tiling that --tiling auto then runs (in a scratch cache directory).
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
          "baseline_one_group_ratio", "baseline_naive_ratio", "baseline_openblas_ratio"]


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
    code, out, err = run(exe, TINY, {"VKGMM_BENCH_PERTURB": "1"})
    if code != 1:
        fail(f"exit status {code}, expected 1", out, err)
    if "workload 'custom'" not in err or "differs from the CPU reference" not in err:
        fail("stderr does not name the workload and the mismatch", out, err)
    if out.strip():
        fail("a refused run printed results", out, err)
    if "timing" in err or "baseline" in err:
        fail("a refused workload was timed", out, err)
    # Without the switch the same workload passes: the refusal came from the perturbation.
    code, out, err = run(exe, TINY)
    if code != 0:
        fail(f"the unperturbed run failed with status {code}", out, err)


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def check_json_run(exe, extra, op, dtype):
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
    expect = {"name": "custom", "op": op, "m": 96, "k": 64, "n": 80, "groups": 5, "dtype": dtype}
    for key, value in expect.items():
        if w[key] != value:
            fail(f"{key} = {w[key]!r}, expected {value!r}", out)
    for key in ["gpu_ms_median", "gpu_ms_min", "wall_ms_median", "gflops", "gbps", "copy_fraction",
                "ceiling_fraction", "baseline_one_group_ratio", "baseline_naive_ratio"]:
        if not positive(w[key]):
            fail(f"{key} = {w[key]!r} is not a positive number", out)
    if not (isinstance(w["host_ms_median"], (int, float)) and w["host_ms_median"] >= 0):
        fail(f"host_ms_median = {w['host_ms_median']!r}", out)
    if w["gpu_ms_min"] > w["gpu_ms_median"]:
        fail("gpu_ms_min > gpu_ms_median", out)
    if w["wall_ms_median"] < w["host_ms_median"]:
        fail("wall time shorter than its host part", out)
    if sum(w["group_sizes"]) != 96 or len(w["group_sizes"]) != 5:
        fail(f"group_sizes {w['group_sizes']} do not route 96 rows to 5 groups", out)
    # The OpenBLAS ratio is there exactly when the build has OpenBLAS.
    if (doc.get("openblas") is None) != (w["baseline_openblas_ratio"] is None):
        fail("baseline_openblas_ratio disagrees with the openblas entry", out)
    if w["baseline_openblas_ratio"] is not None and not positive(w["baseline_openblas_ratio"]):
        fail("baseline_openblas_ratio is not a positive number", out)
    flop = 2 * 96 * 64 * 80 * (2 if op == "backward" else 1)
    if abs(w["gflops"] - flop / (w["gpu_ms_median"] * 1e6)) > 1e-3 * w["gflops"]:
        fail("gflops does not match the FLOP count over gpu_ms_median", out)


def check_json(exe):
    check_json_run(exe, ["--dist", "zipf", "--empty-groups", "1"], "gmm", "f32")
    check_json_run(exe, ["--op", "tgmm", "--dtype", "bf16"], "tgmm", "bf16")
    check_json_run(exe, ["--op", "backward", "--dist", "uniform", "--tiling", "32,32,32"], "backward", "f32")


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


def main():
    exe, mode = sys.argv[1], sys.argv[2]
    {"refuse": check_refuse, "json": check_json, "sweep": check_sweep}[mode](exe)
    print("ok")


if __name__ == "__main__":
    main()
