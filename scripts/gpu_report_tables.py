#!/usr/bin/env python3
"""docs/gpu-report.md's tables: `vkgmm gpu-report --json` on each compiler, the main loops of the cases that
carry the FLOPs, one Markdown table per compiler.

usage: scripts/gpu_report_tables.py [BUILD_DIR]   (default build/; needs scripts/gpu_compilers.sh fetch)
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (title, device name, command prefix, environment): Debian 12's RADV null devices and trixie's drivers.
COMPILERS = [
    ("RADV / ACO, RDNA2 (navi21, Mesa 22.3)", "RADV NAVI21", [], {"RADV_FORCE_FAMILY": "navi21"}),
    ("RADV / ACO, RDNA3 (gfx1100, Mesa 22.3)", "RADV GFX1100", [], {"RADV_FORCE_FAMILY": "gfx1100"}),
    ("RADV / ACO, GCN5 (vega10, Mesa 22.3)", "RADV VEGA10", [], {"RADV_FORCE_FAMILY": "vega10"}),
    ("RADV / ACO, RDNA3 (NAVI31, Mesa 25.0)", "NAVI31", ["radv-navi31"], {}),
    ("NVK / NAK, Turing (TU102, Mesa 25.0)", "NVK", ["nvk-tu102"], {}),
    ("NVK / NAK, Ampere (GA102, Mesa 25.0)", "NVK", ["nvk-ga102"], {}),
    ("ANV, Arc A770 (DG2, Xe-HPG, Mesa 25.0)", "DG2", ["anv-dg2"], {}),
    ("ANV, Arc B580 (BMG, Xe2, Mesa 25.0)", "BMG", ["anv-bmg"], {}),
]
CASES = [("moe-prefill f32", "gmm"), ("moe-prefill f16", "gmm"), ("moe-prefill f32 bias+swiglu", "gmm"),
         ("moe-fine f32", "gmm"), ("qwen3-ids-t512 f32", "gmm"), ("tgmm moe-prefill f32", "tgmm"),
         ("tgmm moe-prefill f16", "tgmm"), ("moe-grad f32", "d_rhs")]


def report(vkgmm, device, target, env):
    prefix = [os.path.join(ROOT, "scripts", "gpu_compilers.sh"), "run", target[0], "--"] if target else []
    cmd = prefix + [vkgmm, "gpu-report", "--device", device, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    return json.loads(p.stdout)


def cell(v, fmt="{:.0f}"):
    return "-" if v is None else fmt.format(v)


def widths(bits, ops):
    return " ".join(f"{n / ops:.2f}xb{b}" for b, n in sorted(bits.items(), key=lambda x: int(x[0])) if n > 0) or "0"


def table(r):
    pipelines = {p["id"]: p for p in r["pipelines"]}
    rows = ["| case | module | regs | spills/fills | local B | instr/iter | k/iter | FMA share | matrix/iter "
            "| shared loads/op | global loads/op |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, plan in CASES:
        for c in r["cases"]:
            if c["name"] != name:
                continue
            for cp in c["pipelines"]:
                # A plan's later passes (gmm's tile heights per group) are labelled "<plan> pass N".
                if cp["plan"].split(" pass ")[0] != plan or cp["role"] != "op":
                    continue
                label = f"{name}, {cp['tiling'].split(',')[0]}-row pass" if cp["pass"] else name
                p = pipelines[cp["pipeline"]]
                comp, m = p.get("compiled") or {}, p["main_loop"]
                spills = "-" if comp.get("spills") is None and comp.get("fills") is None else \
                    f"{cell(comp.get('spills'))}/{cell(comp.get('fills'))}"
                if m is None:
                    rows.append(f"| {label} | {p['module']} | {cell(comp.get('registers'))} | {spills} | "
                                f"{cell(comp.get('local_bytes'))} | - | - | - | - | - | - |")
                    continue
                ops = m["matrix"] or m["fma"] or 1
                share = "-" if m["matrix"] else f"{100 * m['fma_share']:.1f} %"
                rows.append(f"| {label} | {p['module']} | {cell(comp.get('registers'))} | {spills} | "
                            f"{cell(comp.get('local_bytes'))} | {m['instructions']:.0f} | {m['k_per_iteration']} | "
                            f"{share} | {m['matrix']:.0f} | {widths(m['shared_load_bits'], ops)} | "
                            f"{widths(m['global_load_bits'], ops)} |")
    return "\n".join(rows)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    vkgmm = os.path.join(build, "vkgmm")
    for title, device, target, env in COMPILERS:
        r = report(vkgmm, device, target, env)
        print(f"### {title}\n\n{table(r)}\n")
        if r["failures"]:
            print("Failures: " + "; ".join(r["failures"]) + "\n")


if __name__ == "__main__":
    main()
