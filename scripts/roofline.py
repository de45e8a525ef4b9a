#!/usr/bin/python3
"""A roofline of a `vkgmm bench --json` run: each workload at its arithmetic intensity (FLOPs over the
bytes the bench counts for its %read) and achieved GFLOP/s, under the run's measured FMA ceiling and
memory roof: the streaming read's bandwidth (`read_gbps`; a run from before the bench measured it has
only the copy's, `copy_gbps`, which is used then and said so). Points left of the ridge are bound by
memory, right of it by arithmetic; the distance below the roof is what is left on the table.

usage: /usr/bin/python3 scripts/roofline.py BENCH.json OUT.png [--title TEXT]

Run it with Debian's interpreter (python3-matplotlib). Also prints, per workload, the intensity, the
roof there, the fraction of it reached and what bounds it.
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402


def fail(msg):
    print("roofline.py: error: " + msg, file=sys.stderr)
    sys.exit(2)


def positive(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: {e}")
    if not positive(doc.get("ceiling_gflops")) or not positive(doc.get("read_gbps", doc.get("copy_gbps"))):
        fail(f"{path}: ceiling_gflops and read_gbps (or copy_gbps) are not positive numbers "
             "(is it `vkgmm bench --json` output?)")
    points = []
    for w in doc.get("workloads") or []:
        if not all(positive(w.get(key)) for key in ("flop", "bytes", "gflops")):
            fail(f"{path}: workload {w.get('name')!r} lacks positive flop, bytes and gflops")
        model = w.get("model")  # a model layer: one colour per model and weight type
        points.append((w["name"], w["flop"] / w["bytes"], w["gflops"], model and f"{model} ({w['weights']})"))
    if not points:
        fail(f"{path}: no workloads")
    return doc, points


def main(argv):
    args = argv[1:]
    title = None
    if "--title" in args:
        i = args.index("--title")
        if i + 1 >= len(args):
            fail("--title needs a value")
        title = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        fail("usage: roofline.py BENCH.json OUT.png [--title TEXT]")
    doc, points = load(args[0])
    ceiling = doc["ceiling_gflops"]
    kind = "read" if positive(doc.get("read_gbps")) else "copy"
    bandwidth = doc[kind + "_gbps"]
    ridge = ceiling / bandwidth  # FLOP per byte where the two roofs meet

    def roof(ai):
        return min(ceiling, bandwidth * ai)

    print(f"FMA ceiling {ceiling:.1f} GFLOP/s, {kind} {bandwidth:.1f} GB/s, ridge {ridge:.2f} FLOP/byte")
    print(f"{'workload':<26} {'FLOP/B':>8} {'GFLOP/s':>8} {'roof':>8} {'of roof':>8}  bound by")
    for name, ai, gf, _ in points:
        print(f"{name:<26} {ai:8.2f} {gf:8.2f} {roof(ai):8.2f} {100 * gf / roof(ai):7.1f}%  "
              f"{'memory' if ai < ridge else 'arithmetic'}")

    ais = [p[1] for p in points]
    lo = 10 ** math.floor(math.log10(min(min(ais), ridge) / 2))
    hi = 10 ** math.ceil(math.log10(max(max(ais), ridge) * 2))
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    ax.loglog(xs, [roof(x) for x in xs], color="black", linewidth=2)
    ax.axhline(ceiling, color="dimgray", linestyle=":", linewidth=1)
    ax.plot(xs, [bandwidth * x for x in xs], color="dimgray", linestyle=":", linewidth=1)
    ax.text(hi / 1.2, ceiling * 1.1, f"FMA ceiling {ceiling:.0f} GFLOP/s", ha="right", va="bottom")
    ax.axvline(ridge, color="dimgray", linestyle="--", linewidth=0.8)
    # One colour per model (or for the synthetic presets).
    groups = sorted({p[3] or "presets" for p in points})
    colours = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(groups)}
    for name, ai, gf, model in points:
        c = colours[model or "presets"]
        ax.scatter([ai], [gf], s=42, color=c, edgecolors=c, zorder=3)
        ax.annotate(name.split("/")[-1] if model else name, (ai, gf), textcoords="offset points",
                    xytext=(5, -3), fontsize=7, color=c)
    for g in groups:
        ax.scatter([], [], color=colours[g], label=g)
    ax.legend(loc="lower right", fontsize=8, title="workload (label: tokens)", title_fontsize=8)
    ax.set_xlim(lo, hi)
    top = ceiling * 3
    bottom = 10 ** math.floor(math.log10(min(min(p[2] for p in points), bandwidth * lo) / 2))
    ax.set_ylim(bottom, top)
    # The bandwidth roof's label along it: its angle on screen, once the axes' limits are set.
    x0 = lo * 1.5
    (ax0, ay0), (ax1, ay1) = ax.transData.transform([(x0, bandwidth * x0), (x0 * 10, bandwidth * x0 * 10)])
    ax.text(x0, bandwidth * x0 * 1.3, f"{kind} bandwidth {bandwidth:.1f} GB/s", ha="left", va="bottom",
            rotation=math.degrees(math.atan2(ay1 - ay0, ax1 - ax0)), rotation_mode="anchor")
    ax.text(ridge / 1.1, bottom * 1.3, "memory-bound", fontsize=8, color="dimgray", ha="right")
    ax.text(ridge * 1.1, bottom * 1.3, "arithmetic-bound", fontsize=8, color="dimgray", ha="left")
    ax.set_xlabel("arithmetic intensity (FLOP per byte read or written)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(title or f"vkgmm on {doc.get('device', 'device')}: roofline")
    ax.grid(True, which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(args[1])
    print(f"wrote {args[1]}")


if __name__ == "__main__":
    main(sys.argv)
