#!/usr/bin/env python3
"""End-to-end checks of `vkgmm bench --model` and of scripts/roofline.py (the device may be a CPU emulator).

usage: check_models.py /path/to/vkgmm models|train|roofline

  models:   every model preset at --scale 32 and two token counts: each layer checked against the CPU
            reference before it is timed (a perturbed result refused), its JSON fields (the scaled shapes,
            FLOPs and bytes of both projections, tokens per second, the ratios), the table, and the
            argument checks.
  train:    --train on two models at --scale 64, 8 tokens (bf16 weights with their gradients, and mxfp4 ones
            frozen): each layer's "train" group (positive forward, backward and forward+backward times, their
            ratio, the tokens checked, an eviction per timed call), a perturbed result refused
            (VKGMM_BENCH_PERTURB=train), and --train without --model refused.
  roofline: scripts/roofline.py draws a PNG from a bench JSON (a model and a preset), and refuses a file
            that is not one.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

from check_bench import check_times, fail, positive, run

SMALL = ["--scale", "32", "--tokens", "3,40", "--reps", "2", "--warmup", "1"]
# name: experts, top_k, hidden, expert size, bias, weight format (None: bf16), as config.json publishes them
MODELS = {
    "mixtral-8x7b": (8, 2, 4096, 14336, False, None),
    "qwen3-30b-a3b": (128, 8, 2048, 768, False, None),
    "deepseek-v2-lite": (64, 6, 2048, 1408, False, None),
    "gpt-oss-20b": (32, 4, 2880, 2880, True, "mxfp4"),
}
# (elements, bytes) per block of the weight formats the models ship in
BLOCKS = {None: (1, 2), "mxfp4": (32, 17)}
ROOFLINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "roofline.py")


def scaled(size, scale, quantum=32):
    """--scale's rule: size / scale rounded to the nearest multiple of the quantum, at least one."""
    return max(1, (size + scale * quantum // 2) // (scale * quantum)) * quantum


def check_layer(w, name, tokens, doc, out):
    experts, top_k, hidden, ffn, bias, fmt = MODELS[name]
    h, e = scaled(hidden, 32), scaled(ffn, 32)
    expect = {"name": f"{name}/t{tokens}", "model": name, "scale": 32, "tokens": tokens, "experts": experts,
              "top_k": top_k, "hidden": h, "expert_size": e, "published_hidden": hidden,
              "published_expert_size": ffn, "bias": bias, "weights": fmt or "bf16", "dtype": "bf16",
              "metadata": "ids"}
    for key, value in expect.items():
        if w.get(key) != value:
            fail(f"{name}/t{tokens}: {key} = {w.get(key)!r}, expected {value!r}", out)
    if not w["config"].startswith("https://huggingface.co/") or not w["config"].endswith("config.json"):
        fail(f"{name}: config {w['config']!r} is not a config.json on Hugging Face", out)
    if w["up"]["k"] != h or w["up"]["n"] != 2 * e or w["up"]["n_out"] != e:
        fail(f"{name}: gate/up is {w['up']}, expected k = hidden, n = 2 * expert, n_out = expert", out)
    if w["down"]["k"] != e or w["down"]["n"] != h or w["down"]["n_out"] != h:
        fail(f"{name}: down is {w['down']}, expected k = expert, n = hidden", out)
    slots = tokens * top_k
    if sum(w["group_sizes"]) != slots or len(w["group_sizes"]) != experts or max(w["group_sizes"]) > tokens:
        fail(f"{name}: group_sizes {w['group_sizes']} are not {slots} slots over {experts} experts", out)
    if tokens >= 8 and max(w["group_sizes"]) == tokens and sum(1 for g in w["group_sizes"] if g) == top_k:
        fail(f"{name}: every token went to the same experts: the router is not routing", out)
    flop = 2 * slots * (h * 2 * e + e * h)
    if w["flop"] != flop or w["up"]["flop"] + w["down"]["flop"] != flop:
        fail(f"{name}: flop = {w['flop']}, expected 2*T*top_k*(hidden*2*expert + expert*hidden) = {flop}", out)
    elems, nbytes = BLOCKS[fmt]
    sel = w["experts_selected"]
    weights = sel * (h * 2 * e + e * h) // elems * nbytes
    biases = 4 * sel * (2 * e + h) if bias else 0
    moved = weights + biases + 2 * tokens * h + 2 * slots * e * 2 + 4 * tokens * h  # x, slots written + read, out
    if w["bytes"] != moved:
        fail(f"{name}: bytes = {w['bytes']}, expected {moved} (weights, biases, activations, slots, output)", out)
    check_times(w, "", out)
    ms = w["gpu_ms_median"]
    for key in ["gflops", "gbps", "read_fraction", "copy_fraction", "ceiling_fraction", "tokens_per_s"]:
        if not positive(w[key]):
            fail(f"{name}: {key} = {w[key]!r} is not a positive number", out)
    # The memory roof is the streaming read's bandwidth; the copy's fraction stays in the JSON.
    for key, value in (("tokens_per_s", tokens / (ms * 1e-3)), ("gflops", flop / (ms * 1e6)),
                       ("gbps", moved / (ms * 1e6)), ("ceiling_fraction", w["gflops"] / doc["ceiling_gflops"]),
                       ("read_fraction", w["gbps"] / doc["read_gbps"]), ("copy_fraction", w["gbps"] / doc["copy_gbps"])):
        if abs(w[key] - value) > 1e-3 * value:
            fail(f"{name}: {key} = {w[key]}, expected {value}", out)
    # Each timed layer started from evicted caches.
    if not (w["timed_calls"] > 0 and w["evictions"] == w["timed_calls"]):
        fail(f"{name}: {w['evictions']} evictions for {w['timed_calls']} timed calls", out)
    if w.get("train", "absent") is not None:
        fail(f"{name}: train = {w.get('train', 'absent')!r} without --train, expected null", out)


def check_models(exe):
    for name in MODELS:
        code, out, err = run(exe, ["--model", name] + SMALL + ["--json"])
        if code != 0:
            fail(f"--model {name}: exit status {code}", out, err)
        doc = json.loads(out)
        ws = doc["workloads"]
        if [w["name"] for w in ws] != [f"{name}/t3", f"{name}/t40"]:
            fail(f"--model {name}: workloads {[w['name'] for w in ws]}", out)
        for w, tokens in zip(ws, (3, 40)):
            check_layer(w, name, tokens, doc, out)
            # Each projection and the whole layer checked before the timing.
            log = [line for line in err.splitlines() if f"[{name}/t{tokens}]" in line]
            checked = [i for i, line in enumerate(log) if "matches the reference" in line]
            timed = [i for i, line in enumerate(log) if "gpu " in line and "per layer" in line]
            if not checked or not timed or checked[0] > timed[0]:
                fail(f"{name}/t{tokens}: not checked against the reference before it was timed", out, err)
    # Experts split into windows (as the published sizes need on lavapipe): the bf16 slots pass through
    # the later windows' existing_out unchanged, and the combined output accumulates across them.
    code, out, err = run(exe, ["--model", "gpt-oss-20b", "--scale", "32", "--tokens", "9", "--expert-shards", "3",
                               "--reps", "1", "--json"])
    if code != 0:
        fail(f"--expert-shards 3: exit status {code}", out, err)
    w = json.loads(out)["workloads"][0]
    if w["expert_shards"] != 3 or not any("windows" in n for n in w["notes"]):
        fail(f"--expert-shards 3: expert_shards = {w['expert_shards']}, notes {w['notes']}", out, err)
    # The table: the model section, with the scale said.
    code, out, err = run(exe, ["--model", "qwen3-30b-a3b", "--scale", "32", "--tokens", "2", "--reps", "1"])
    if code != 0 or "model layer" not in out or "tokens/s" not in out or "--scale 32" not in out:
        fail("the table lacks the model section or its scale", out, err)
    # Each projection in a block format of its own (Q4_K_M's q4_K gate/up, q6_K down); a wrong one exits 1.
    code, out, err = run(exe, ["--model", "qwen3-30b-a3b", "--scale", "8", "--tokens", "2", "--rhs-format", "q4_K,q6_K",
                               "--reps", "1", "--json"])
    if code != 0:
        fail(f"--rhs-format q4_K,q6_K: exit status {code}", out, err)
    w = json.loads(out)["workloads"][0]
    if (w["weights"], w["down_weights"]) != ("q4_K", "q6_K") or w["rhs_format"] != "q4_K":
        fail(f"--rhs-format q4_K,q6_K: weights {w['weights']}, down_weights {w['down_weights']}", out, err)
    # A wrong result is refused, in either projection's check, before anything is timed.
    for name in ("mixtral-8x7b", "gpt-oss-20b"):
        code, out, err = run(exe, ["--model", name] + SMALL, {"VKGMM_BENCH_PERTURB": "1"})
        if code != 1 or f"'{name}/t3' (gate/up" not in err or out.strip() or "timing" in err:
            fail(f"--model {name}: a perturbed result was not refused (status {code})", out, err)
    # Argument checks, before any GPU work.
    for args, needle in ((["--model", "llama"], "--model llama: unknown model"),
                         (["--model", "qwen3-30b-a3b", "--scale", "0"], "--scale 0"),
                         (["--model", "qwen3-30b-a3b", "--tokens", "1,,2"], "--tokens 1,,2"),
                         (["--scale", "4"], "add --model"),
                         (["--model", "gpt-oss-20b", "--scale", "1", "--rhs-format", "q4_K"], "not whole q4_K blocks"),
                         (["--model", "mixtral-8x7b", "--sweep-tiling"], "--sweep-tiling"),
                         (["--preset", "decode", "--rhs-format", "q4_K,q6_K"], "model presets alone"),
                         (["--model", "qwen3-30b-a3b", "--rhs-format", "q4_K,f32"], "--rhs-format q4_K,f32")):
        code, out, err = run(exe, args)
        if code != 2 or needle not in err or "measuring" in err:
            fail(f"{args}: status {code}, expected 2 with '{needle}' before any GPU work", out, err)


TRAIN = ["--scale", "64", "--tokens", "8", "--reps", "1", "--warmup", "0"]
TRAIN_MODELS = ["--model", "qwen3-30b-a3b", "--model", "gpt-oss-20b"]


def check_train_group(w, out):
    name = w["name"]
    t = w.get("train")
    if not isinstance(t, dict):
        fail(f"{name}: train = {t!r}, expected the --train group", out)
    if t["skipped"] is not None:
        fail(f"{name}: skipped at --scale 64: {t['skipped']}", out)
    for key in ("forward_ms", "backward_ms", "forward_backward_ms", "backward_over_forward"):
        if not positive(t[key]):
            fail(f"{name}: train {key} = {t[key]!r} is not a positive finite number", out)
    if abs(t["backward_over_forward"] - t["backward_ms"] / t["forward_ms"]) > 1e-3 * t["backward_over_forward"]:
        fail(f"{name}: backward_over_forward {t['backward_over_forward']} is not backward_ms / forward_ms", out)
    if abs(t["backward_in_step_ms"] - (t["forward_backward_ms"] - t["forward_ms"])) > 1e-3 * t["forward_backward_ms"]:
        fail(f"{name}: backward_in_step_ms {t['backward_in_step_ms']} is not forward_backward_ms - forward_ms", out)
    # Every sampled token checked (8 tokens: all of them, unless a near tie left one out), and the three
    # kinds of call each timed once after an eviction.
    if not 6 <= t["checked_tokens"] <= 8:
        fail(f"{name}: {t['checked_tokens']} tokens checked, expected the 8", out)
    if t["reps"] != 1 or t["timed_calls"] != 3 or t["evictions"] != 3:
        fail(f"{name}: reps {t['reps']}, {t['timed_calls']} timed calls, {t['evictions']} evictions; expected 1, 3, 3", out)


def check_train(exe):
    code, out, err = run(exe, TRAIN_MODELS + TRAIN + ["--train", "--json"])
    if code != 0:
        fail(f"--train: exit status {code}", out, err)
    ws = json.loads(out)["workloads"]
    if [w["name"] for w in ws] != ["qwen3-30b-a3b/t8", "gpt-oss-20b/t8"]:
        fail(f"--train: workloads {[w['name'] for w in ws]}", out)
    for w in ws:
        check_train_group(w, out)
        log = [line for line in err.splitlines() if f"[{w['name']} train]" in line]
        checked = [i for i, line in enumerate(log) if "match the CPU reference" in line]
        timed = [i for i, line in enumerate(log) if "gpu ms median" in line]
        if not checked or not timed or checked[0] > timed[0]:
            fail(f"{w['name']}: the training step was not checked before it was timed", out, err)
    # A wrong result refused before anything of the training step is timed.
    code, out, err = run(exe, TRAIN_MODELS[:2] + TRAIN + ["--train"], {"VKGMM_BENCH_PERTURB": "train"})
    if code != 1 or "'qwen3-30b-a3b/t8' (--train): differs from the CPU reference" not in err or out.strip() \
            or "train] timing" in err:
        fail(f"--train with VKGMM_BENCH_PERTURB=train: status {code}, expected 1 and a refusal", out, err)
    code, out, err = run(exe, ["--preset", "decode", "--train"])
    if code != 2 or "add --model" not in err or "measuring" in err:
        fail(f"--train without --model: status {code}, expected 2 before any GPU work", out, err)


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def check_roofline(exe):
    code, out, err = run(exe, ["--model", "deepseek-v2-lite", "--scale", "32", "--tokens", "1,64", "--preset",
                               "ids-decode", "--reps", "2", "--json"])
    if code != 0:
        fail(f"bench --json: exit status {code}", out, err)
    with tempfile.TemporaryDirectory() as tmp:
        src, png = os.path.join(tmp, "bench.json"), os.path.join(tmp, "roofline.png")
        with open(src, "w") as f:
            f.write(out)
        p = subprocess.run([sys.executable, ROOFLINE, src, png], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            fail(f"roofline.py: exit status {p.returncode}", p.stdout, p.stderr)
        size = png_size(png) if os.path.exists(png) else None
        if not size or not (400 <= size[0] <= 4000 and 300 <= size[1] <= 4000) or os.path.getsize(png) < 10000:
            fail(f"roofline.py wrote no PNG of sane size ({size}, {os.path.getsize(png) if size else 0} bytes)",
                 p.stdout, p.stderr)
        # Its roof is the run's read bandwidth (the bench's %read), and its summary names every workload with
        # what bounds it.
        doc = json.loads(out)
        if f"read {doc['read_gbps']:.1f} GB/s" not in p.stdout:
            fail("roofline.py's memory roof is not the run's read bandwidth", p.stdout, p.stderr)
        for name in ("deepseek-v2-lite/t1", "deepseek-v2-lite/t64", "ids-decode"):
            if not any(line.startswith(name + " ") and ("memory" in line or "arithmetic" in line)
                       for line in p.stdout.splitlines()):
                fail(f"roofline.py's summary lacks {name}", p.stdout, p.stderr)
        # Not a bench JSON: refused, naming the file, with no PNG.
        with open(src, "w") as f:
            f.write('{"workloads": []}')
        os.remove(png)
        p = subprocess.run([sys.executable, ROOFLINE, src, png], capture_output=True, text=True, timeout=300)
        if p.returncode != 2 or src not in p.stderr or os.path.exists(png):
            fail(f"roofline.py on a JSON without ceilings: status {p.returncode}", p.stdout, p.stderr)


def main():
    exe, mode = sys.argv[1], sys.argv[2]
    {"models": check_models, "train": check_train, "roofline": check_roofline}[mode](exe)
    print("ok")


if __name__ == "__main__":
    main()
