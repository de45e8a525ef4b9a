#!/usr/bin/env python3
"""scripts/perf_snapshot.py on a small bench JSON: a dated page, one table row per workload with its
shape, the ratio columns the run measured and a legend line for each, and a clear refusal of a file
that is not a bench result."""

import json
import os
import subprocess
import sys
import tempfile


def fail(message, output=""):
    print(f"FAIL: {message}\n{output}")
    sys.exit(1)


def main():
    script, sample = sys.argv[1], sys.argv[2]
    with open(sample, encoding="utf-8") as f:
        workloads = json.load(f)["workloads"]
    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "performance.md")
        r = subprocess.run([sys.executable, script, sample, "--date", "2000-01-02", "-o", page],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fail(f"exit status {r.returncode}", r.stderr)
        text = open(page, encoding="utf-8").read()
        if "Snapshot of 2000-01-02" not in text:
            fail("the page does not carry its date", text)
        for heading in ("synthetic device (test data)", "FMA ceiling: 100.0 GFLOP/s", "streaming read: 40.0 GB/s",
                        "copy: 20.0 GB/s"):
            if heading not in text:
                fail(f"missing {heading!r}", text)
        rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| workload")]
        if len(rows) != len(workloads):
            fail(f"{len(rows)} table rows for {len(workloads)} workloads", text)
        for w, row in zip(workloads, rows):
            name = w["name"].replace("|", "\\|")
            if not row.startswith(f"| {name} |"):
                fail(f"row for {w['name']!r} missing or out of order: {row}", text)
            if f"{w['gpu_ms_median']:.3f}" not in row:
                fail(f"row for {w['name']!r} lacks its gpu ms", text)
        if "T 2, k 32, n 16, E 8, top-2" not in text or "64 x 32 x 16, G 4" not in text:
            fail("shapes not written", text)
        for heading in ("G=1 x", "naive x", "app/own", "dev/host"):
            if f"- {heading}:" not in text:
                fail(f"no legend line for {heading}", text)
        if rows[0].count("|") != rows[1].count("|"):
            fail("rows of unequal width", text)
        # Not a bench result: refused with one line, nothing written.
        bad = os.path.join(tmp, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            f.write('{"device": "x"}')
        r = subprocess.run([sys.executable, script, bad, "-o", os.path.join(tmp, "none.md")],
                           capture_output=True, text=True)
        if r.returncode == 0 or "workloads" not in r.stderr or os.path.exists(os.path.join(tmp, "none.md")):
            fail("a file without workloads was not refused", r.stdout + r.stderr)
    print("perf_snapshot: ok")


if __name__ == "__main__":
    main()
