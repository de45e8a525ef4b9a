#!/usr/bin/env python3
"""Writes docs/performance.md: a dated snapshot of one or more `vkgmm bench --json` results.

    build/vkgmm bench --json > default.json
    build/vkgmm bench --presets ids --json > ids.json
    python3 scripts/perf_snapshot.py default.json ids.json -o docs/performance.md

Each input becomes one section: the device, its driver and its measured ceilings, then one row per
workload (shape, gpu ms median, GFLOP/s, %read, %ceil and every ratio the run measured), and a legend
that says for each ratio shown what a value above 1 means. Python 3 standard library only.
"""

import argparse
import datetime
import json
import sys

# The ratios a workload may carry, in column order: (JSON field, column heading, what above 1 means).
RATIOS = [
    ("baseline_one_group_ratio", "G=1 x",
     "the same m, k, n as one group, per FLOP, over the grouped call: one group costs more per FLOP "
     "(below 1: grouping costs that much)"),
    ("baseline_naive_ratio", "naive x",
     "one dispatch per group on the same device over vkgmm's call: vkgmm is faster"),
    ("app_buffers_ratio", "app/own",
     "the call on the application's own VkBuffers over the same call on vkgmm's buffers: borrowed "
     "buffers cost more"),
    ("device_ratio", "dev/host",
     "the call with group sizes on the device over the same call with them on the host: building the "
     "metadata on the GPU costs more"),
]


class SnapshotError(Exception):
    pass


def number(value, digits):
    if value is None:
        return "-"
    return f"{value:.{digits}f}"


def percent(fraction):
    if fraction is None:
        return "-"
    value = 100.0 * fraction
    return f"{value:.0f} %" if abs(value) >= 10 else f"{value:.1f} %"


def shape(w):
    if w.get("top_k"):
        tokens = w.get("tokens", w.get("m"))
        return f"T {tokens}, k {w.get('k')}, n {w.get('n')}, E {w.get('experts', w.get('groups'))}, top-{w['top_k']}"
    return f"{w.get('m')} x {w.get('k')} x {w.get('n')}, G {w.get('groups')}"


def escape(text):
    return str(text).replace("|", "\\|")


def section(name, doc):
    if not isinstance(doc, dict) or not isinstance(doc.get("workloads"), list):
        raise SnapshotError(f"{name}: not a `vkgmm bench --json` result (no \"workloads\" list)")
    workloads = doc["workloads"]
    for i, w in enumerate(workloads):
        if not isinstance(w, dict) or "name" not in w:
            raise SnapshotError(f"{name}: workloads[{i}] has no name")
    ratios = [r for r in RATIOS if any(w.get(r[0]) is not None for w in workloads)]

    lines = [f"## {escape(name)}", ""]
    lines.append(f"- device: {doc.get('device', '?')}")
    lines.append(f"- driver: {doc.get('driver', '?')}")
    lines.append(f"- FMA ceiling: {number(doc.get('ceiling_gflops'), 1)} GFLOP/s; streaming read: "
                 f"{number(doc.get('read_gbps'), 1)} GB/s; copy: {number(doc.get('copy_gbps'), 1)} GB/s")
    lines.append("")
    head = ["workload", "op", "shape", "dtype", "gpu ms", "GFLOP/s", "%read", "%ceil"] + [r[1] for r in ratios]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for w in workloads:
        row = [escape(w["name"]), escape(w.get("op", "?")), shape(w), escape(w.get("dtype", "?")),
               number(w.get("gpu_ms_median"), 3), number(w.get("gflops"), 1),
               percent(w.get("read_fraction")), percent(w.get("ceiling_fraction"))]
        row += [number(w.get(r[0]), 2) for r in ratios]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append("gpu ms: the median device time per call, every call from evicted caches. %read: GB/s over the "
                 "streaming read; %ceil: GFLOP/s over the FMA ceiling.")
    if ratios:
        lines.append("Above 1 means, for each ratio (- where the run did not measure it):")
        lines.append("")
        for _, heading, meaning in ratios:
            lines.append(f"- {heading}: {meaning}.")
    lines.append("")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description="A dated markdown snapshot of vkgmm bench --json results.")
    parser.add_argument("inputs", nargs="+", help="vkgmm bench --json output files")
    parser.add_argument("-o", "--output", help="the markdown file to write (default: stdout)")
    parser.add_argument("--date", help="the snapshot's date, YYYY-MM-DD (default: today)")
    parser.add_argument("--command", default="scripts/bench.sh",
                        help="how the inputs were produced, for the page's first lines")
    args = parser.parse_args(argv)

    date = args.date or datetime.date.today().isoformat()
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        print(f"perf_snapshot: --date {date!r} is not YYYY-MM-DD", file=sys.stderr)
        return 2

    lines = ["# Performance", "",
             f"Snapshot of {date}, made by `scripts/perf_snapshot.py` from `vkgmm bench --json` "
             f"(`{args.command}`). Regenerate it rather than edit it; how each figure is measured is in "
             "[bench/README.md](../bench/README.md).", ""]
    try:
        for path in args.inputs:
            try:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
            except (OSError, json.JSONDecodeError) as e:
                raise SnapshotError(f"{path}: {e}") from None
            lines += section(path.rsplit("/", 1)[-1], doc)
    except SnapshotError as e:
        print(f"perf_snapshot: {e}", file=sys.stderr)
        return 1

    text = "\n".join(lines).rstrip("\n") + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
