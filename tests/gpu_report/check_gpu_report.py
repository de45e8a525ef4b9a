#!/usr/bin/env python3
"""`vkgmm gpu-report` on a GPU compiler without a GPU: one of RADV's null devices (RADV_FORCE_FAMILY set by
ctest for this test only), or NVK or ANV on a drm-shim (run through scripts/gpu_compilers.sh, given as
--run): every case planned and compiled, each gmm / tgmm pipeline with the driver's statistics, no spill
and no local-memory traffic in any main loop, a main loop holding its FMAs or matrix instructions, the FMA
share at least the threshold on the gated cases, the matrix builds' operands loaded at least 64 bits wide;
the modules and constants it names; --dump's files; and the refusals (a share above what the code reaches
fails with one line per pipeline under it; no --device is a usage error).

usage: check_gpu_report.py [--run "PREFIX ARGS --"] [--matrix] [--matrix-load-bits B] /path/to/vkgmm DEVICE MIN_FMA_SHARE
  --run     a command the report runs under (the private loader and shim of scripts/gpu_compilers.sh)
  --matrix  the device must run gmm's and tgmm's f16 cases on its matrix units
  --matrix-load-bits  the least width per lane of the matrix builds' shared loads (default 64; Intel's DPAS
            takes its operands one dword per lane, the subgroup's lanes reading a row's adjacent dwords)
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile

TIMEOUT_S = 300


PREFIX = []


def run(vkgmm, args):
    p = subprocess.run(PREFIX + [vkgmm, "gpu-report"] + args, capture_output=True, text=True, timeout=TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", default="")
    ap.add_argument("--matrix", action="store_true")
    ap.add_argument("--matrix-load-bits", type=int, default=64)
    ap.add_argument("vkgmm")
    ap.add_argument("device")
    ap.add_argument("min_share", type=float)
    a = ap.parse_args()
    PREFIX[:] = shlex.split(a.run)
    vkgmm, device, min_share = a.vkgmm, a.device, a.min_share
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as dump:
        rc, out, err = run(vkgmm, ["--device", device, "--json", "--min-fma-share", str(min_share), "--dump", dump])
        check(rc == 0, f"report exit {rc}: {err.strip()}")
        report = json.loads(out)
        check(device.lower() in report["device"].lower(), f"device {report['device']!r} is not {device!r}")
        check(report["executable_properties"], "no executable properties")
        check(report["failures"] == [], f"failures: {report['failures']}")
        pipelines = {p["id"]: p for p in report["pipelines"]}
        ops = set()
        matrix_cases = set()
        for c in report["cases"]:
            check(c["error"] is None, f"{c['name']}: {c['error']}")
            check(len(c["pipelines"]) > 0, f"{c['name']}: no pipeline")
            for cp in c["pipelines"]:
                p = pipelines[cp["pipeline"]]
                check(p["role"] == cp["role"], f"{c['name']}: role {cp['role']} vs {p['role']}")
                check(os.path.exists(os.path.join(dump, p["module"] + ".spv")), f"{p['module']}.spv not dumped")
                # The split builds bind in parts; the routed backward's gradient pass binds its regions at
                # the split layout's bindings.
                split = p["module"].endswith(("_split", "_split_sg")) or p["module"] == "routed_grad"
                check(p["layout"] == ("split" if split else "plain"), f"{p['id']}: layout")
                check(os.path.getsize(os.path.join(dump, p["id"] + ".s")) > 0, f"{p['id']}.s empty")
                compiled = p.get("compiled") or {}
                check((compiled.get("registers") or 0) > 0, f"{p['id']}: no statistics")
                check(not compiled.get("spills") and not compiled.get("fills") and not compiled.get("local_bytes"),
                      f"{p['id']} ({p['module']}): spills {compiled}")
                if cp["role"] != "op":
                    continue
                ops.add(p["id"])
                # Every constant the module family declares is named, the tiling's among them.
                names = {c["name"]: c["value"] for c in p["constants"]}
                for name in ("local_size_x", "TN", "TX", "TY", "USE_SHARED", "LHS_TYPE", "RHS_TYPE", "OUT_TYPE"):
                    check(name in names, f"{p['id']}: constant {name} missing")
                tm, tk, tn = (int(x) for x in cp["tiling"].split(","))
                check(names.get("TN") == tn, f"{p['id']}: TN {names.get('TN')} is not the tiling's {tn}")
                loop = p["main_loop"]
                # The matrix builds' main loops are their matrix instructions' (on drivers that compile them).
                check(loop is not None and loop["fma"] + loop["matrix"] > 0, f"{c['name']} {cp['plan']}: no main loop")
                if loop is None:
                    continue
                check(loop["instructions"] >= loop["fma"] + loop["matrix"] > 0, f"{p['id']}: counts {loop}")
                check(loop["local_loads"] + loop["local_stores"] == 0,
                      f"{p['id']} ({p['module']}): local-memory traffic in the main loop {loop}")
                # The matrix builds are outside the FMA gate: their main loops are matrix instructions.
                matrix = "matrix" in p["module"]
                # A later pass (gmm's smaller tiles for skewed groups' remainders) is reported, not gated.
                gated = not c["decode"] and not c["quantized"] and not matrix and cp["pass"] == 0
                # The K step (the main loop's induction step) is read where the share is gated; ACO may
                # lay a decode tile's loop out so that its step is not a constant compare (vega10, SwiGLU).
                check(not gated or loop["k_per_iteration"] > 0, f"{p['id']}: no K step found")
                check(not matrix or loop["matrix"] > 0, f"{p['id']}: a matrix build without matrix instructions")
                # The matrices' operands come from the stage in wide loads (64 bits or more per lane by default).
                narrow = [b for b, n in loop["shared_load_bits"].items() if n > 0 and int(b) < a.matrix_load_bits]
                check(not matrix or not narrow, f"{p['id']} ({p['module']}): shared loads of {narrow} bits")
                if matrix:
                    matrix_cases.add((c["name"], cp["plan"]))
                check(loop["unknown_trip_counts"] == 0, f"{p['id']}: a nested loop of unknown trip count")
                check(cp["gated"] == gated, f"{c['name']} {cp['plan']}: gated {cp['gated']}")
                check(not gated or loop["fma_share"] >= min_share,
                      f"{c['name']} {cp['plan']}: share {loop['fma_share']} < {min_share}")
        check(len(ops) >= 20, f"only {len(ops)} distinct op pipelines")
        # Every kernel a run can record is compiled: the builds, the combine, the routed backward's
        # gradient pass and top-k's two; and the routed backward's every part.
        modules = {p["module"] for p in report["pipelines"]}
        for m in ("metadata", "combine", "routed_grad", "topk", "topk_grad"):
            check(m in modules, f"module {m} is not among the report's pipelines")
        for case in ("moe-grad-ids f32", "qwen3-ids-t64 bf16 bias+swiglu backward"):
            plans = {cp["plan"] for c in report["cases"] if c["name"] == case for cp in c["pipelines"]}
            for part in ("forward", "grad", "d_rhs", "d_lhs") + (("d_bias",) if "bias" in case else ()):
                check(part in plans, f"{case}: no {part} pipelines")
        # The gate covers the kernels that carry the FLOPs: gmm and tgmm (and the backward's), f32 and both
        # 16-bit types, the routed qwen3-ids-t512 and the bias + SwiGLU epilogue.
        gated_names = {(c["name"], cp["plan"]) for c in report["cases"] for cp in c["pipelines"] if cp["gated"]}
        # f16 runs on the matrix units where the device has them (outside the gate).
        matrix_units = any("matrix" in p["module"] for p in report["pipelines"])
        check(not a.matrix or matrix_units, "the f16 cases do not run on the matrix units")
        for case, plan in (("moe-prefill f16", "gmm"), ("tgmm moe-prefill f16", "tgmm"), ("moe-fine f16", "gmm")):
            check(not a.matrix or (case, plan) in matrix_cases, f"{case} {plan} is not on the matrix units")
        for t in ("f32", "bf16") if matrix_units else ("f32", "f16", "bf16"):
            for case, plan in ((f"moe-prefill {t}", "gmm"), (f"moe-fine {t}", "gmm"), (f"moe-grad {t}", "d_rhs"),
                               (f"tgmm moe-prefill {t}", "tgmm"), (f"qwen3-ids-t512 {t}", "gmm"),
                               (f"moe-prefill {t} bias+swiglu", "gmm")):
                check((case, plan) in gated_names, f"{case} {plan} is not gated")

    # A threshold today's code cannot pass fails, naming each pipeline under it, on stderr.
    rc, out, err = run(vkgmm, ["--device", device, "--only", "moe-prefill f32", "--min-fma-share", "0.99"])
    check(rc == 1, f"--min-fma-share 0.99: exit {rc}")
    check("moe-prefill f32 gmm (P1): main-loop FMA share" in err, f"--min-fma-share 0.99: stderr {err!r}")
    rc, out, err = run(vkgmm, ["--only", "moe-prefill f32"])
    check(rc == 2 and "--device" in err, f"no --device: exit {rc}, {err!r}")
    rc, out, err = run(vkgmm, ["--device", device, "--min-fma-share", "2"])
    check(rc == 2 and "--min-fma-share" in err, f"--min-fma-share 2: exit {rc}, {err!r}")

    for f in failures:
        print("FAIL:", f)
    print(f"{device}: {'ok' if not failures else f'{len(failures)} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
