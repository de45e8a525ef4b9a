#!/usr/bin/env python3
"""End-to-end checks of `vkgmm bench` on tiny workloads (the device may be a CPU emulator).

usage: check_bench.py /path/to/vkgmm refuse|json|sweep

  refuse: with VKGMM_BENCH_PERTURB=1 the bench must name the workload, exit 1 and time nothing (on the
          host path and, with --metadata device, on the device path).
  json:   --json must be one object with the documented fields, for gmm, tgmm (bf16) and backward, with
          --metadata both (the default), device and host, and --device-grid both / bound (the indirect
          over upper-bound ratio there exactly with both), and --grid both (the persistent over per-visit
          ratios, host and device path).
  sweep:  --sweep-tiling must cache a tiling that --tiling auto then runs (in a scratch cache directory).
  ids:    a tiny workload routed by expert ids (--top-k): its JSON fields (per-slot, chain and sorted-gemm
          times and ratios, in one and in three expert windows), the table, and a refused wrong result.
  grad_ids: a tiny routed backward (--op backward --top-k, moe-grad-ids's code at a small size): its JSON
          fields (backward, forward and sorted-backward times and ratios, the sampled check), the table,
          and a refused wrong result.
  quant:  block-format weights (--rhs-format): a tiny gmm in q4_K and a tiny routed one in q4_0 beside the
          same with f32 weights (checked against the reference first, a perturbed result refused), their
          JSON fields (rhs_format, rhs_bytes as the blocks' storage bytes, the peer comparison), and the
          argument checks (k not whole blocks, a backward).
  probes: the memory probes and the eviction follow the last-level cache: 8x it per probe run (at least
          1 GiB on a GPU), 4x it per eviction, the host's L3 on a CPU device and $VKGMM_CACHE_BYTES where
          set (a malformed value refused); `vkgmm info` prints the read bandwidth beside the copy's; and a
          call that beats a roof (the roofs scaled down by $VKGMM_BENCH_ROOF_SCALE) is reported as a probe
          failure, its fractions null in the JSON and printed as probe!, never as a figure over 100 %.

Every run also checks (check_measured) that each workload's calls were preceded by as many cache
evictions as there were calls, that %read is GB/s over the run's read bandwidth, that the app's borrowed
buffers were allocated in memory of the flags vkgmm's own get, and the sweep's default tiling is planned
and bound exactly as the table's call (their plan descriptions are equal).
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
          "wall_ms_median", "host_ms_median", "gflops", "gbps", "copy_fraction", "copy_gpu_ms_median", "ceiling_fraction",
          "baseline_one_group_ratio", "baseline_naive_ratio", "baseline_openblas_ratio", "metadata"]
DEVICE_FIELDS = ["device_tiling", "device_gpu_ms_median", "device_gpu_ms_min", "device_wall_ms_median",
                 "device_host_ms_median", "device_ratio"]
GRID_FIELDS = ["bound_gpu_ms_median", "indirect_over_bound"]
FIELDS += DEVICE_FIELDS + GRID_FIELDS + ["app_buffers_gpu_ms_median", "app_buffers_ratio", "device_grid"]
PERSISTENT_FIELDS = ["persistent_gpu_ms_median", "persistent_over_per_visit"]
DEVICE_PERSISTENT_FIELDS = ["device_persistent_gpu_ms_median", "device_persistent_over_per_visit"]
FIELDS += PERSISTENT_FIELDS + DEVICE_PERSISTENT_FIELDS + ["grid"]
FIELDS += ["read_fraction", "plan", "timed_calls", "evictions", "app_memory_flags", "own_memory_flags",
           "baseline_one_group_tiling", "probe_failures"]
PROBE_FIELDS = ["read_gbps", "copy_gbps", "cpu_device", "cache_bytes", "cache_source", "read_probe", "read_path",
                "copy_probe", "eviction"]
GiB = 1 << 30
TEST_CACHE_BYTES = 8 << 20


def run(exe, args, env_extra=None, host_cache=False):
    """`vkgmm bench` with args. The probes and the eviction scale with the last-level cache (8x and 4x
    it), which on a shared host can be hundreds of MiB; a tiny workload needs no such roofs, so every run
    names a small cache unless it checks the host's own (host_cache) or env_extra names another."""
    env = dict(os.environ)
    env.pop("VKGMM_CACHE_BYTES", None)
    if not host_cache:
        env["VKGMM_CACHE_BYTES"] = str(TEST_CACHE_BYTES)
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
    # Usage errors, before any device work: an option that takes one value, or a switch, given twice
    # (--preset and --model add), more groups than vkgmm takes.
    for args, needle in ((TINY + ["--m", "8"], "--m given twice"),
                         (["--json", "--json"], "--json given twice"),
                         (["--train", "--model", "qwen3-30b-a3b", "--train"], "--train given twice"),
                         (["--groups", "70000"], "--groups 70000: must be an integer in [1, 65535]")):
        code, out, err = run(exe, args)
        if code != 2 or needle not in err or out.strip():
            fail(f"{args}: exit status {code}, expected 2 and '{needle}'", out, err)


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


def check_copy(w, out):
    """%copy is the alternated copy of the call's bytes over the call: copy_gpu_ms_median / gpu_ms_median."""
    if not positive(w["copy_gpu_ms_median"]):
        fail(f"{w['name']}: copy_gpu_ms_median = {w['copy_gpu_ms_median']!r} is not a positive number", out)
    if abs(w["copy_fraction"] - w["copy_gpu_ms_median"] / w["gpu_ms_median"]) > 1e-3 * w["copy_fraction"]:
        fail(f"{w['name']}: copy_fraction is not copy_gpu_ms_median / gpu_ms_median", out)


def check_probes(doc, out, cache_bytes=None):
    """The memory probes read 8x the cache per run (1 GiB at least on a GPU) in passes over their buffers;
    the eviction reads 4x it (at most 2 GiB of host memory); the cache is the host's L3 on a CPU device,
    or cache_bytes when given ($VKGMM_CACHE_BYTES)."""
    missing = [f for f in PROBE_FIELDS if f not in doc]
    if missing:
        fail(f"the run lacks {missing}", out)
    if not positive(doc["read_gbps"]) or not positive(doc["copy_gbps"]):
        fail("read_gbps or copy_gbps is not a positive number", out)
    cache = doc["cache_bytes"]
    if cache_bytes is not None:
        if cache != cache_bytes or doc["cache_source"] != "VKGMM_CACHE_BYTES":
            fail(f"cache_bytes = {cache} from {doc['cache_source']!r}, expected {cache_bytes} from VKGMM_CACHE_BYTES", out)
    elif doc["cpu_device"]:
        host = 0
        for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
            if not host and name in os.sysconf_names:
                host = max(os.sysconf(name), 0)
        if host and cache != host:
            fail(f"cache_bytes = {cache} on a CPU device, the host's last-level cache is {host}", out)
    for key in ("read_probe", "copy_probe"):
        p = doc[key]
        want = max(8 * cache, 0 if doc["cpu_device"] else GiB)
        if p["bytes_per_run"] != p["passes"] * p["buffer_bytes"] or p["bytes_per_run"] < want:
            fail(f"{key} {p} reads less than {want} bytes per run (8x the cache {cache})", out)
        if p["passes"] > 1 and p["buffer_bytes"] * (p["passes"] - 1) >= want:
            fail(f"{key} {p}: more passes than {want} bytes need", out)
    e = doc["eviction"]
    if doc["cpu_device"]:
        if e["kind"] != "host read" or e["bytes"] != min(4 * cache, 2 * GiB):
            fail(f"eviction {e} on a CPU device: expected a host read of 4x the cache {cache}", out)
    elif e["kind"] != "device read" or e["bytes"] < 4 * cache:
        fail(f"eviction {e} on a GPU: expected a device read of at least 4x the cache {cache}", out)


def check_measured(w, doc, out):
    """Every timed call of the workload came after an eviction; %read is over the run's read bandwidth; the
    app's buffers got vkgmm's memory type."""
    if not (isinstance(w["timed_calls"], int) and w["timed_calls"] > 0 and w["evictions"] == w["timed_calls"]):
        fail(f"{w['name']}: {w['evictions']} evictions for {w['timed_calls']} timed calls", out)
    if w["read_fraction"] is None:
        if w["gbps"] <= doc["read_gbps"] or not any("streaming read" in f for f in w["probe_failures"]):
            fail(f"{w['name']}: read_fraction is null without a beaten read roof", out)
    elif abs(w["read_fraction"] - w["gbps"] / doc["read_gbps"]) > 1e-3 * w["read_fraction"]:
        fail(f"{w['name']}: read_fraction is not gbps / read_gbps", out)
    if w.get("app_buffers_gpu_ms_median") is not None:
        if not w["own_memory_flags"] or w["app_memory_flags"] != w["own_memory_flags"]:
            fail(f"{w['name']}: the app's buffers are in memory of flags {w['app_memory_flags']}, vkgmm's own in "
                 f"{w['own_memory_flags']}", out)


def check_json_run(exe, extra, op, dtype, metadata="both", grid="auto", workgroups="auto"):
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
              "metadata": metadata, "device_grid": grid, "grid": workgroups}
    for key, value in expect.items():
        if w[key] != value:
            fail(f"{key} = {w[key]!r}, expected {value!r}", out)
    for key in ["gflops", "gbps", "copy_fraction", "ceiling_fraction", "baseline_one_group_ratio",
                "baseline_naive_ratio"]:
        if not positive(w[key]):
            fail(f"{key} = {w[key]!r} is not a positive number", out)
    check_times(w, "", out)
    check_copy(w, out)
    check_probes(doc, out, TEST_CACHE_BYTES)
    check_measured(w, doc, out)
    if w["probe_failures"] != []:
        fail(f"a tiny workload beat the device's roofs: {w['probe_failures']}", out)
    if w["baseline_one_group_tiling"] is None or not w["plan"].startswith("op=" + op + " tiling="):
        fail(f"one-group tiling {w['baseline_one_group_tiling']!r}, plan {w['plan']!r}", out)
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
    # --grid both: each timed path again on the persistent grid, and its time over the per-visit grid's.
    pairs = [(PERSISTENT_FIELDS, "gpu_ms_median", workgroups == "both"),
             (DEVICE_PERSISTENT_FIELDS, "device_gpu_ms_median", workgroups == "both" and metadata == "both")]
    for (ms_key, ratio_key), base, present in pairs:
        if not present:
            if w[ms_key] is not None or w[ratio_key] is not None:
                fail(f"--grid {workgroups}, --metadata {metadata}: {ms_key} / {ratio_key} should be null", out)
            continue
        if not positive(w[ms_key]) or not positive(w[ratio_key]):
            fail(f"{ms_key} = {w[ms_key]!r}, {ratio_key} = {w[ratio_key]!r}: not positive numbers", out)
        if abs(w[ratio_key] - w[ms_key] / w[base]) > 1e-3 * w[ratio_key]:
            fail(f"{ratio_key} is not {ms_key} / {base}", out)
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
    check_json_run(exe, ["--grid", "both", "--dist", "zipf", "--empty-groups", "2"], "gmm", "f32", "both", "auto", "both")
    check_json_run(exe, ["--op", "tgmm", "--metadata", "host", "--grid", "both"], "tgmm", "f32", "host", "auto", "both")


def check_sweep(exe):
    with tempfile.TemporaryDirectory() as cache:
        # A small cache (the probes' and evictions' sizes follow it) keeps the sweeps short: this checks
        # the mechanics, not the figures.
        env = {"XDG_CACHE_HOME": cache, "VKGMM_CACHE_BYTES": str(4 << 20)}
        code, out, err = run(exe, TINY + ["--sweep-tiling", "--json"], env)
        if code != 0:
            fail(f"--sweep-tiling: exit status {code}", out, err)
        sweep = json.loads(out)["sweep"]
        if len(sweep) != 1 or len(sweep[0]["tried"]) < 2:
            fail("the sweep tried fewer than two tilings", out, err)
        s = sweep[0]
        if not s["cached"] or not (s["timed_calls"] > 0 and s["evictions"] == s["timed_calls"]):
            fail(f"the sweep: cached {s['cached']}, {s['evictions']} evictions for {s['timed_calls']} calls", out, err)
        # Timed as the table: its reps rule (at least --reps) and calls planned and bound exactly as its own.
        if s["reps"] < 2 or s["timed_calls"] != (s["reps"] + 1) * len(s["tried"]):
            fail(f"the sweep timed {s['timed_calls']} calls for {len(s['tried'])} tilings at {s['reps']} reps", out, err)
        code, tout, terr = run(exe, TINY + ["--metadata", "host", "--json"], env)
        if code != 0:
            fail(f"the table of the swept workload: exit status {code}", tout, terr)
        table = json.loads(tout)["workloads"][0]
        if table["plan"] != s["default_plan"] or table["tiling"] != s["default_tiling"]:
            fail(f"the sweep planned its default tiling as {s['default_plan']!r}, the table as {table['plan']!r}",
                 out + tout, err)
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
        # A sweep on another grid than a plain run's is not cached: the cached line stays.
        code, out, err = run(exe, TINY + ["--sweep-tiling", "--grid", "persistent", "--json"], env)
        if code != 0 or json.loads(out)["sweep"][0]["cached"] is not False:
            fail("a sweep on the persistent grid was cached (or failed)", out, err)
        code, out, err = run(exe, TINY + ["--tiling", "auto", "--json"], env)
        if code != 0 or json.loads(out)["workloads"][0]["tiling"] != best.split("/")[0]:
            fail("the persistent grid's sweep replaced the cached tiling", out, err)


def check_rates(w, what, positives, ratios, flop, flop_rule, out):
    """Each of `positives` a positive number, each (ratio, base) gpu_ms_median over base, the FLOP count
    `flop` (flop_rule says how it is counted) and gflops it over gpu_ms_median."""
    for key in positives:
        if not positive(w[key]):
            fail(f"{what}: {key} = {w[key]!r} is not a positive number", out)
    ms = w["gpu_ms_median"]
    for ratio, base in ratios:
        if abs(w[ratio] - ms / w[base]) > 1e-3 * w[ratio]:
            fail(f"{what}: {ratio} is not gpu_ms_median / {base}", out)
    if w["flop"] != flop:
        fail(f"{what}: flop = {w['flop']}, expected {flop_rule}", out)
    if abs(w["gflops"] - w["flop"] / (ms * 1e6)) > 1e-3 * w["gflops"]:
        fail(f"{what}: gflops does not match the FLOP count over gpu_ms_median", out)


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
        check_copy(w, out)
        check_measured(w, json.loads(out), out)
        check_rates(w, "ids", ["gflops", "gbps", "copy_fraction", "ceiling_fraction", "per_slot_gpu_ms_median",
                               "combine_ratio", "chain_gpu_ms_median", "ids_over_chain", "sorted_gpu_ms_median",
                               "ids_over_sorted"],
                    (("combine_ratio", "per_slot_gpu_ms_median"), ("ids_over_chain", "chain_gpu_ms_median"),
                     ("ids_over_sorted", "sorted_gpu_ms_median")), 2 * 6 * 4 * 64 * 80, "2*T*top_k*k*n", out)
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


GRAD = ["--op", "backward", "--m", "40", "--k", "64", "--n", "80", "--groups", "6", "--top-k", "2", "--reps", "2",
        "--warmup", "1"]
GRAD_FIELDS = ["top_k", "tokens", "experts", "experts_selected", "forward_gpu_ms_median", "backward_over_forward",
               "sorted_gpu_ms_median", "ids_over_sorted", "sorted_tiling", "checked_tokens", "checked_experts"]


def check_grad_ids(exe):
    # A 1 MiB cache keeps the probes and the evictions small (bench_probes checks them at the real size).
    env = {"VKGMM_CACHE_BYTES": str(1 << 20)}
    code, out, err = run(exe, GRAD + ["--json"], env)
    if code != 0:
        fail(f"grad_ids: exit status {code}", out, err)
    doc = json.loads(out)
    w = doc["workloads"][0]
    missing = [f for f in FIELDS + GRAD_FIELDS if f not in w]
    if missing:
        fail(f"grad_ids workload lacks {missing}", out)
    expect = {"name": "custom", "op": "backward", "m": 40, "k": 64, "n": 80, "groups": 6, "top_k": 2, "tokens": 40,
              "metadata": "ids", "dist": "router", "expert_shards": 1, "checked_tokens": 40, "checked_experts": 2}
    for key, value in expect.items():
        if w[key] != value:
            fail(f"grad_ids: {key} = {w[key]!r}, expected {value!r}", out)
    if "matches the reference" not in err:
        fail("grad_ids: no check against the reference before timing", out, err)
    check_times(w, "", out)
    check_measured(w, doc, out)
    check_rates(w, "grad_ids", ["gflops", "gbps", "forward_gpu_ms_median", "backward_over_forward",
                                "sorted_gpu_ms_median", "ids_over_sorted"],
                (("backward_over_forward", "forward_gpu_ms_median"), ("ids_over_sorted", "sorted_gpu_ms_median")),
                4 * 40 * 2 * 64 * 80, "4*T*top_k*k*n", out)
    # Three kinds of call per round, warmup included, each after an eviction.
    if w["timed_calls"] != 3 * (2 + 1):
        fail(f"grad_ids: {w['timed_calls']} timed calls, expected 3 kinds x 3 rounds", out)
    code, out, err = run(exe, GRAD, env)
    if code != 0 or "routed backward" not in out or "bwd/fwd" not in out or "ids/so" not in out:
        fail("grad_ids: the table lacks the routed backward's columns", out, err)
    code, out, err = run(exe, GRAD, dict(env, VKGMM_BENCH_PERTURB="1"))
    if code != 1 or "workload 'custom' (routed backward" not in err or out.strip() or "timing" in err:
        fail(f"grad_ids: a perturbed result was not refused (status {code})", out, err)
    # A tgmm is not routed.
    code, out, err = run(exe, ["--op", "tgmm", "--m", "8", "--groups", "4", "--top-k", "2"])
    if code != 2 or "gmm or its backward" not in err:
        fail(f"grad_ids: --op tgmm --top-k: status {code}, expected 2", out, err)


QUANT_FIELDS = ["rhs_format", "rhs_bytes", "quant_peer", "quant_peer_gpu_ms_median", "quant_speedup", "copy_ms",
                "time_over_copy", "quant_target", "quant_target_met"]
# (elements, bytes) per block
BLOCKS = {"q8_0": (32, 34), "q4_0": (32, 18), "q4_K": (256, 144), "q6_K": (256, 210), "mxfp4": (32, 17)}


def check_quant_workload(w, fmt, experts, k, n, doc, out):
    missing = [f for f in FIELDS + QUANT_FIELDS if f not in w]
    if missing:
        fail(f"quant: {w.get('name')} lacks {missing}", out)
    if w["rhs_format"] != fmt:
        fail(f"quant: rhs_format = {w['rhs_format']!r}, expected {fmt!r}", out)
    elems, nbytes = BLOCKS[fmt] if fmt else (1, 4)
    want = experts * (k * n // elems) * nbytes
    if w["rhs_bytes"] != want:
        fail(f"quant: {w['name']}: rhs_bytes = {w['rhs_bytes']}, expected {want} ({fmt} blocks of {experts} experts)", out)
    check_times(w, "", out)
    for key in ["gflops", "gbps", "copy_fraction"]:
        if not positive(w[key]):
            fail(f"quant: {key} = {w[key]!r} is not a positive number", out)
    if fmt:
        for key in ["copy_ms", "time_over_copy"]:
            if not positive(w[key]):
                fail(f"quant: {key} = {w[key]!r} is not a positive number", out)
        if abs(w["time_over_copy"] - w["gpu_ms_median"] / w["copy_ms"]) > 1e-3 * w["time_over_copy"]:
            fail("quant: time_over_copy is not gpu_ms_median / copy_ms", out)
        if w["copy_ms"] != w["copy_gpu_ms_median"]:
            fail("quant: copy_ms is not the alternated copy's median", out)
        # The peer: the same call with weights of the activations' type, timed alternately with it.
        if w["quant_peer"] != w["dtype"] + " weights" or not positive(w["quant_peer_gpu_ms_median"]):
            fail(f"quant: {w['name']}: quant_peer = {w['quant_peer']!r}, expected {w['dtype']} weights, timed", out)
        if abs(w["quant_speedup"] - w["quant_peer_gpu_ms_median"] / w["gpu_ms_median"]) > 1e-3 * w["quant_speedup"]:
            fail("quant: quant_speedup is not the peer's gpu ms over the quantized call's", out)
    else:
        for key in QUANT_FIELDS[2:]:
            if w[key] is not None:
                fail(f"quant: unquantized {w['name']}: {key} = {w[key]!r}, expected null", out)


def check_quant(exe):
    # A tiny gmm with q4_K weights (k = 256: one super-block per row), every path of the default run.
    tiny = ["--m", "40", "--k", "256", "--n", "48", "--groups", "3", "--reps", "2", "--warmup", "1"]
    code, out, err = run(exe, tiny + ["--rhs-format", "q4_K", "--json"])
    if code != 0:
        fail(f"quant gmm: exit status {code}", out, err)
    doc = json.loads(out)
    w = doc["workloads"][0]
    check_quant_workload(w, "q4_K", 3, 256, 48, doc, out)
    if "matches the reference" not in err:
        fail("quant gmm: no check against the reference before timing", out, err)
    if w["quant_target"] is not None:
        fail("quant gmm: a target for a shape the block-format targets do not cover", out)
    if abs(w["gbps"] * w["gpu_ms_median"] * 1e6 - (4 * (40 * 256 + 40 * 48) + w["rhs_bytes"])) > 1e-2 * w["gbps"] * w["gpu_ms_median"] * 1e6:
        fail("quant gmm: GB/s does not count the blocks' bytes + activations + output", out)
    # A tiny routed workload in q4_0: ids mode, the chain and the sorted gemm on the blocks.
    ids = ["--m", "4", "--k", "64", "--n", "32", "--groups", "6", "--top-k", "2", "--reps", "2", "--warmup", "1"]
    code, out, err = run(exe, ids + ["--rhs-format", "q4_0", "--json"])
    if code != 0:
        fail(f"quant ids: exit status {code}", out, err)
    doc = json.loads(out)
    w = doc["workloads"][0]
    check_quant_workload(w, "q4_0", w["experts_selected"], 64, 32, doc, out)
    if w["metadata"] != "ids" or not positive(w["chain_gpu_ms_median"]) or not positive(w["sorted_gpu_ms_median"]):
        fail("quant ids: the routed paths (chain, sorted gemm) did not run", out)
    # A wrong result is refused before anything is timed, with block-format weights too.
    ids_k256 = [("256" if i > 0 and ids[i - 1] == "--k" else a) for i, a in enumerate(ids)]  # whole q6_K blocks
    for extra in (tiny + ["--rhs-format", "mxfp4"], ids_k256 + ["--rhs-format", "q6_K"]):
        code, out, err = run(exe, extra, {"VKGMM_BENCH_PERTURB": "1"})
        if code != 1 or "differs from the CPU reference" not in err or out.strip() or "timing" in err:
            fail(f"quant {extra[-1]}: a perturbed result was not refused (status {code})", out, err)
    # Argument checks: k not whole blocks, a backward, an element type as --rhs-format.
    for extra, needle in ((["--rhs-format", "q4_K", "--k", "96"], "multiple of the block"),
                          (["--rhs-format", "q8_0", "--op", "backward"], "gmm's rhs only"),
                          (["--rhs-format", "bf16"], "must be one of q8_0")):
        code, out, err = run(exe, ["--m", "8", "--n", "32", "--groups", "2"] + extra)
        if code != 2 or needle not in err:
            fail(f"quant: {extra}: status {code}, expected 2 with '{needle}'", out, err)
    # The quant group's peer comparison, on the smallest real pair: ids-decode (f32 weights) and
    # q4_0-ids-decode (T = 8, k = n = 1024, 8 experts) in one run.
    code, out, err = run(exe, ["--preset", "ids-decode", "--preset", "q4_0-ids-decode", "--reps", "1", "--warmup", "0",
                               "--json"])
    if code != 0:
        fail(f"quant presets: exit status {code}", out, err)
    doc = json.loads(out)
    f32, q = doc["workloads"]
    check_quant_workload(f32, None, f32["experts_selected"], 1024, 1024, doc, out)
    check_quant_workload(q, "q4_0", q["experts_selected"], 1024, 1024, doc, out)
    if q["quant_peer"] != "f32 weights":
        fail("quant presets: q4_0-ids-decode's peer is not the call with f32 weights", out)
    if not q["quant_target"] or not isinstance(q["quant_target_met"], bool):
        fail("quant presets: q4_0-ids-decode lacks its block-format target and its verdict", out)
    code, out, err = run(exe, ["--preset", "ids-decode", "--preset", "q4_0-ids-decode", "--reps", "1", "--warmup", "0"])
    if code != 0 or "peer/q" not in out or "q4_0-ids-decode" not in out or "f32+q4_0" not in out:
        fail("quant presets: the table lacks the weight-format comparison", out, err)


def check_probes_follow_the_cache(exe):
    # The tiny workload on the device's own cache size, then on a cache the environment names: the probes'
    # and the eviction's sizes follow it.
    code, out, err = run(exe, TINY + ["--metadata", "host", "--json"], host_cache=True)
    if code != 0:
        fail(f"exit status {code}", out, err)
    check_probes(json.loads(out), out)
    small = 3 << 20
    code, out, err = run(exe, TINY + ["--metadata", "host", "--json"], {"VKGMM_CACHE_BYTES": str(small)})
    if code != 0:
        fail(f"VKGMM_CACHE_BYTES={small}: exit status {code}", out, err)
    doc = json.loads(out)
    check_probes(doc, out, small)
    if doc["cpu_device"] and doc["read_probe"]["bytes_per_run"] != 8 * small:
        fail(f"VKGMM_CACHE_BYTES={small}: the read probe reads {doc['read_probe']['bytes_per_run']} per run", out)
    check_measured(doc["workloads"][0], doc, out)
    code, out, err = run(exe, TINY, {"VKGMM_CACHE_BYTES": "12MB"})
    if code == 0 or "VKGMM_CACHE_BYTES=12MB" not in err:
        fail("a malformed VKGMM_CACHE_BYTES was not refused by name", out, err)
    # `vkgmm info` reports the read bandwidth (the memory roof) beside the copy's, and the cache they follow.
    p = subprocess.run([exe, "info", "--json"], capture_output=True, text=True, timeout=TIMEOUT_S,
                       env=dict(os.environ, VKGMM_CACHE_BYTES=str(small)))
    info = json.loads(p.stdout) if p.returncode == 0 else {}
    if not positive(info.get("read_gbps")) or not positive(info.get("copy_gbps")) or info.get("cache_bytes") != small:
        fail("vkgmm info --json lacks read_gbps, copy_gbps or the cache it was sized by", p.stdout, p.stderr)
    check_roofs_beaten(exe)


def check_roofs_beaten(exe):
    """Roofs scaled a millionfold down: the call beats both, which the bench reports as probe failures."""
    scaled = {"VKGMM_BENCH_ROOF_SCALE": "1e-6"}
    code, out, err = run(exe, TINY + ["--metadata", "host", "--json"], scaled)
    if code != 0:
        fail(f"VKGMM_BENCH_ROOF_SCALE: exit status {code}", out, err)
    w = json.loads(out)["workloads"][0]
    if w["ceiling_fraction"] is not None or w["read_fraction"] is not None:
        fail(f"fractions over a beaten roof: ceiling {w['ceiling_fraction']}, read {w['read_fraction']}", out)
    failures = w["probe_failures"]
    if len(failures) != 2 or "FMA ceiling" not in failures[0] or "streaming read" not in failures[1]:
        fail(f"probe_failures = {failures!r}, expected the FMA ceiling's and the streaming read's", out)
    code, out, err = run(exe, TINY + ["--metadata", "host"], scaled)
    rows = [line for line in out.splitlines() if line.startswith("custom ")]
    if code != 0 or len(rows) != 1 or rows[0].count("probe!") != 2 or "probe failure: the FMA ceiling" not in out:
        fail("the table does not print the beaten roofs as probe! with a note", out, err)
    code, out, err = run(exe, TINY, {"VKGMM_BENCH_ROOF_SCALE": "zero"})
    if code == 0 or "VKGMM_BENCH_ROOF_SCALE" not in err:
        fail("a malformed VKGMM_BENCH_ROOF_SCALE was not refused by name", out, err)


def main():
    exe, mode = sys.argv[1], sys.argv[2]
    {"refuse": check_refuse, "json": check_json, "sweep": check_sweep, "ids": check_ids, "grad_ids": check_grad_ids,
     "quant": check_quant, "probes": check_probes_follow_the_cache}[mode](exe)
    print("ok")


if __name__ == "__main__":
    main()
