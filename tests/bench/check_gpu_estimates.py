#!/usr/bin/env python3
"""docs/gpu-results.md holds the table scripts/gpu_estimates.py prints, line for line, so that the model the
next GPU run checks is the one written down; and the script, given a run's bench JSON (SAMPLE: the H200
run's own rates and times), gives the same rows from it, measured times included.

    check_gpu_estimates.py SCRIPT DOC SAMPLE
"""
import subprocess
import sys


def main():
    script, doc = sys.argv[1], sys.argv[2]
    table = subprocess.run([sys.executable, script], check=True, capture_output=True, text=True).stdout.splitlines()
    with open(doc, encoding="utf-8") as f:
        written = set(f.read().splitlines())
    missing = [line for line in table if line not in written]
    if len(table) < 3 or missing:
        print(f"{doc} lacks these lines of {script}'s table (regenerate it there):")
        for line in missing or ["(the script printed no table)"]:
            print("  " + line)
        return 1
    from_run = subprocess.run([sys.executable, script, "--bench-json", sys.argv[3]], check=True, capture_output=True,
                              text=True).stdout.splitlines()
    # The sample holds every row's time but the f16 one's (its results were wrong on that run).
    differ = [(a, b) for a, b in zip(table, from_run) if a != b and "f16" not in a]
    if len(from_run) != len(table) or differ:
        print(f"the table from {sys.argv[3]} differs from the default one:")
        for a, b in differ:
            print(f"  {a}\n  {b}")
        return 1
    print(f"{len(table) - 2} estimate rows, each in {doc}; the same from {sys.argv[3]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
