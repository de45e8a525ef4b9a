#!/usr/bin/env python3
"""docs/gpu-results.md holds the table scripts/gpu_estimates.py prints, line for line, so that the model the
next GPU run checks is the one written down.

    check_gpu_estimates.py SCRIPT DOC
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
    print(f"{len(table) - 2} estimate rows, each in {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
