#!/usr/bin/env python3
"""Peers for `vkgmm bench` on an NVIDIA GPU: torch (cuBLAS / CUTLASS) and JAX (XLA) on the shapes of
vkgmm's bench presets, and the GPU's memory roof, as JSON lines like bench/peers/ggml_mul_mat_id.cpp's:
  {"peer": "torch", "workload": "moe-prefill", "op": "grouped_mm", "dtype": "bf16", ..., "median_ms": 0.21}

torch: torch._grouped_mm (bf16, one CUTLASS grouped GEMM; where this torch has it), cuBLAS torch.mm per
group (f32 and bf16; one launch per non-empty group), one whole-shape torch.mm over all rows (f32,
bf16: the dense ceiling of the same FLOPs), and for the presets routed by ids the whole chain too
(gather the rows by expert, grouped GEMM, weight by the router and add back per token: vkgmm's combined
output); the memory roof: a device-to-device copy and a streaming read (x.sum()) of >= 1 GiB.
f32 is true f32 (TF32 off, as vkgmm's f32 FMA); bf16 accumulates in f32.
JAX: jax.lax.ragged_dot (f32 at Precision.HIGHEST, bf16), jitted.

Timing: every call starts from evicted caches as vkgmm's bench does (a streaming read of 256 MiB, untimed,
five times H100's 50 MB L2); torch with CUDA events around the call, JAX with wall clock around a
block_until_ready call; warm-up calls first, then the median (and min) over the reps.

Group sizes: the presets' routing is bench/workloads.cpp's (std::mt19937 and std:: distributions), which
Python does not reproduce; --routing FILE... takes the sizes from the JSON of `vkgmm bench --json` or of the
ggml peer (its "group_sizes" per workload); without them a seeded Python routing of the same kind stands in
(each JSON line says which: "routing": "vkgmm" or "python").

usage: torch_jax_peers.py [--quick] [--only torch|jax] [--preset NAME]... [--reps N] [--warmup N]
                          [--routing FILE]...
Each framework is optional: a missing one (or no GPU) is reported on stderr and skipped, exit 0.
"""
import argparse
import json
import math
import os
import random
import statistics
import sys
import time

DEVICE = "cuda"  # torch's device (a test harness may point it elsewhere)
PRESETS = ["moe-prefill", "moe-fine", "decode", "ids-decode",
           "qwen3-ids-t1", "qwen3-ids-t8", "qwen3-ids-t64", "qwen3-ids-t512"]


def note(msg):
    print("torch_jax_peers: " + msg, file=sys.stderr, flush=True)


def emit(obj):
    print(json.dumps(obj), flush=True)


# ---- presets (bench/workloads.cpp) -------------------------------------------------------------------
def make_preset(name, quick):
    """(T, k, n, E, top_k, dist, empty): gmm presets have top_k 1 (every row to one expert)."""
    kn = 4 if quick else 1
    rows = 8 if quick else 1
    gmm = {"moe-prefill": (4096, 1024, 1024, 8, "random", 0),
           "moe-fine": (4096, 512, 512, 64, "zipf", 8),
           "decode": (16, 1024, 1024, 8, "random", 0)}
    if name in gmm:
        m, k, n, e, dist, empty = gmm[name]
        return dict(name=name, T=max(16, m // rows), k=k // kn, n=n // kn, E=e, top_k=1, dist=dist, empty=empty)
    if name == "ids-decode":
        return dict(name=name, T=8, k=1024 // kn, n=1024 // kn, E=8, top_k=2, dist="ids", empty=0)
    if name.startswith("qwen3-ids-t") and name in PRESETS:
        return dict(name=name, T=int(name[len("qwen3-ids-t"):]), k=2048 // kn, n=768 // kn, E=128, top_k=8,
                    dist="ids", empty=0)
    return None


def python_sizes(p, seed=1):
    """A stand-in for bench/workloads.cpp's routing (same kind, not the same numbers)."""
    rng = random.Random(seed)
    E, T, K = p["E"], p["T"], p["top_k"]
    sizes = [0] * E
    if p["dist"] == "ids":
        pop = [rng.gauss(0, 1) for _ in range(E)]
        for _ in range(T):
            logit = [pop[e] + rng.gauss(0, 1) for e in range(E)]
            for e in sorted(range(E), key=lambda e: -logit[e])[:K]:
                sizes[e] += 1
        return sizes
    live = list(range(E))
    rng.shuffle(live)
    live = sorted(live[p["empty"]:])
    weight = [1.0] * len(live)
    if p["dist"] == "zipf":
        rank = list(range(len(live)))
        rng.shuffle(rank)
        weight = [1.0 / (r + 1) ** 1.1 for r in rank]
    for g in rng.choices(live, weights=weight, k=T):
        sizes[g] += 1
    return sizes


def read_routing(files):
    """workload name -> group sizes, from vkgmm bench --json objects or JSON lines with group_sizes."""
    sizes = {}
    for f in files:
        try:
            text = open(f).read()
        except OSError as e:
            note(f"routing file {f}: {e}")
            continue
        objs = []
        try:
            objs = [json.loads(text)]
        except ValueError:
            for line in text.splitlines():
                try:
                    objs.append(json.loads(line))
                except ValueError:
                    pass
        for o in objs:
            if not isinstance(o, dict):
                continue
            for w in o.get("workloads", [o]):
                name = w.get("name", w.get("workload"))
                if name and isinstance(w.get("group_sizes"), list) and not w.get("quick"):
                    sizes.setdefault(name, w["group_sizes"])
    return sizes


def _cumsum(xs):
    total = 0
    for x in xs:
        total += x
        yield total


def median_min(ms):
    return statistics.median(ms), min(ms)


def reps_for(first_ms, reps):
    """At least 5 and ~0.25 s, at most 100 (vkgmm bench's rule), unless given."""
    return reps if reps > 0 else int(min(100, max(5, math.ceil(250.0 / max(first_ms, 1e-3)))))


# ---- torch ---------------------------------------------------------------------------------------------
def run_torch(presets, routing, args):
    try:
        import torch
    except Exception as e:  # ImportError, or a broken install
        note(f"torch is not available ({e.__class__.__name__}: {e}): torch peers skipped")
        return
    if not torch.cuda.is_available():
        note("torch sees no CUDA device: torch peers skipped")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(DEVICE)
    name = torch.cuda.get_device_name(0)
    emit({"peer": "torch", "device": name, "torch": torch.__version__, "cuda": torch.version.cuda,
          "grouped_mm": hasattr(torch, "_grouped_mm"), "quick": args.quick})
    evict_buf = torch.empty(args.evict_mib << 18, dtype=torch.float32, device=dev).fill_(1.0)

    def evict():
        if args.evict_mib:
            evict_buf.sum()

    def timed(fn, evicting=True):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def once():
            if evicting:
                evict()
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
        first = 0.0
        for _ in range(max(1, args.warmup)):
            first = once()
        ms = [once() for _ in range(reps_for(first, args.reps))]
        return median_min(ms) + (len(ms),)

    def report(base, op, dtype, fn, flop, nbytes, evicting=True):
        """Times fn into one JSON line; False (and the error in the line) when it raised."""
        rec = dict(base, op=op, dtype=dtype, timing="cuda events")
        try:
            med, mn, reps = timed(fn, evicting)
            rec.update(reps=reps, median_ms=round(med, 6), min_ms=round(mn, 6),
                       gflops=round(flop / med * 1e-6, 3) if flop else None, gbps=round(nbytes / med * 1e-6, 3))
        except Exception as e:
            rec["error"] = f"{e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        emit(rec)
        torch.cuda.synchronize()
        return "error" not in rec

    # The memory roof: a d2d copy (read + write) and a streaming read, >= 1 GiB each (--quick: 64 MiB).
    roof = (64 if args.quick else 1024) << 20
    src = torch.empty(roof // 4, dtype=torch.float32, device=dev).fill_(1.0)
    dst = torch.empty_like(src)
    base = {"peer": "torch", "workload": "memory-roof", "device": name, "bytes": roof, "quick": args.quick}
    report(base, "copy", "f32", lambda: dst.copy_(src), 0, 2 * roof, evicting=False)
    report(base, "read", "f32", lambda: src.sum(), 0, roof, evicting=False)
    del src, dst

    for p in presets:
        sizes = routing.get(p["name"]) if not args.quick else None
        how = "vkgmm" if sizes else "python"
        sizes = sizes or python_sizes(p)
        T, k, n, E, K = p["T"], p["k"], p["n"], p["E"], p["top_k"]
        M = sum(sizes)
        if M != T * K or len(sizes) != E:
            note(f"{p['name']}: routing sizes do not match the preset ({len(sizes)} groups, {M} rows): python's")
            sizes, how = python_sizes(p), "python"
        live = [e for e in range(E) if sizes[e]]
        base = {"peer": "torch", "workload": p["name"], "device": name, "T": T, "top_k": K, "experts": E, "k": k,
                "n": n, "slots": M, "distinct_experts": len(live), "routing": how, "quick": args.quick,
                "group_sizes": sizes}
        flop = 2.0 * M * k * n
        bounds, start = [], 0
        for s in sizes:
            bounds.append((start, start + s))
            start += s
        for dt, tname in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
            esz = 4 if dt == torch.float32 else 2
            x = torch.randn(M, k, device=dev).to(dt)
            w = torch.randn(E, k, n, device=dev).to(dt)    # [E, k, n]: vkgmm's rhs
            out = torch.empty(M, n, device=dev, dtype=dt)
            nbytes = esz * (len(live) * k * n + M * k + M * n)

            def per_group():
                for e in live:
                    a, b = bounds[e]
                    torch.mm(x[a:b], w[e], out=out[a:b])
            report(base, "per_group_mm", tname, per_group, flop, nbytes)
            w0 = w[0]
            report(base, "mm", tname, lambda: torch.mm(x, w0, out=out), flop, esz * (k * n + M * k + M * n))
            if dt == torch.bfloat16:
                if hasattr(torch, "_grouped_mm"):
                    offs = torch.tensor([b for _, b in bounds], dtype=torch.int32, device=dev)
                    # CUTLASS's grouped GEMM wants rhs column-major ([E, n, k] memory, viewed as [E, k, n]).
                    wt = w.transpose(1, 2).contiguous().transpose(1, 2)
                    if not report(base, "grouped_mm", tname, lambda: torch._grouped_mm(x, wt, offs=offs), flop, nbytes):
                        # Some versions want every group's rows a multiple of 16 (torchtitan pads so): padded.
                        padded = [-(-s // 16) * 16 for s in sizes]
                        xp = torch.zeros(sum(padded), k, device=dev, dtype=dt)
                        offp = torch.tensor(list(_cumsum(padded)), dtype=torch.int32, device=dev)
                        report(dict(base, padded_rows=sum(padded)), "grouped_mm_pad16", tname,
                               lambda: torch._grouped_mm(xp, wt, offs=offp), flop, nbytes)
                        del xp
                    if K > 1:
                        # The whole chain of an ids-routed layer: tokens gathered by expert, grouped GEMM, the
                        # slots weighted by the router and added back per token (f32 out, as vkgmm's combine).
                        tok = torch.randn(T, k, device=dev).to(dt)
                        order = torch.randperm(M, device=dev)
                        src_tok = (order // K).to(torch.int64)         # the token of each sorted slot
                        rw = torch.rand(M, 1, device=dev)
                        comb = torch.empty(T, n, device=dev)

                        def chain():
                            y = torch._grouped_mm(tok.index_select(0, src_tok), wt, offs=offs)
                            comb.zero_().index_add_(0, src_tok, y.float() * rw)
                        report(base, "ids_chain_grouped_mm", tname, chain, flop,
                               esz * (len(live) * k * n + T * k) + 4 * T * n)
                else:
                    emit(dict(base, op="grouped_mm", dtype=tname, error="this torch has no torch._grouped_mm"))
            del x, w, out
            torch.cuda.empty_cache()


# ---- JAX -----------------------------------------------------------------------------------------------
def run_jax(presets, routing, args):
    # JAX takes 75 % of the GPU's memory at its first use unless told not to (torch may run beside it).
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        note(f"JAX is not available ({e.__class__.__name__}: {e}): JAX peers skipped")
        return
    try:
        gpus = jax.devices("gpu")
    except Exception as e:
        note(f"JAX sees no GPU ({e.__class__.__name__}): JAX peers skipped")
        return
    if not hasattr(jax.lax, "ragged_dot"):
        note(f"JAX {jax.__version__} has no jax.lax.ragged_dot: JAX peers skipped")
        return
    gpu = gpus[0]
    name = getattr(gpu, "device_kind", str(gpu))
    emit({"peer": "jax", "device": name, "jax": jax.__version__, "quick": args.quick})
    evict_buf = jax.device_put(jnp.ones(args.evict_mib << 18, jnp.float32), gpu)
    evict_fn = jax.jit(jnp.sum)

    def timed(fn, *xs):
        def once():
            if args.evict_mib:
                evict_fn(evict_buf).block_until_ready()
            t0 = time.perf_counter()
            fn(*xs).block_until_ready()
            return (time.perf_counter() - t0) * 1e3
        first = 0.0
        for _ in range(max(1, args.warmup)):
            first = once()
        ms = [once() for _ in range(reps_for(first, args.reps))]
        return median_min(ms) + (len(ms),)

    key = jax.random.PRNGKey(1)
    for p in presets:
        sizes = routing.get(p["name"]) if not args.quick else None
        how = "vkgmm" if sizes else "python"
        sizes = sizes or python_sizes(p)
        T, k, n, E, K = p["T"], p["k"], p["n"], p["E"], p["top_k"]
        M = sum(sizes)
        if M != T * K or len(sizes) != E:
            sizes, how, M = python_sizes(p), "python", T * K
        live = sum(1 for s in sizes if s)
        base = {"peer": "jax", "workload": p["name"], "device": name, "T": T, "top_k": K, "experts": E, "k": k,
                "n": n, "slots": M, "distinct_experts": live, "routing": how, "quick": args.quick,
                "group_sizes": sizes}
        gs = jax.device_put(jnp.asarray(sizes, jnp.int32), gpu)
        for dt, tname, prec in ((jnp.float32, "f32", jax.lax.Precision.HIGHEST), (jnp.bfloat16, "bf16", None)):
            esz = 4 if tname == "f32" else 2
            rec = dict(base, op="ragged_dot", dtype=tname, timing="wall, block_until_ready")
            try:
                x = jax.device_put(jax.random.normal(key, (M, k), jnp.float32).astype(dt), gpu)
                w = jax.device_put(jax.random.normal(key, (E, k, n), jnp.float32).astype(dt), gpu)
                fn = jax.jit(lambda a, b, g, prec=prec: jax.lax.ragged_dot(a, b, g, precision=prec))
                med, mn, reps = timed(fn, x, w, gs)
                nbytes = esz * (live * k * n + M * k + M * n)
                rec.update(reps=reps, median_ms=round(med, 6), min_ms=round(mn, 6),
                           gflops=round(2.0 * M * k * n / med * 1e-6, 3), gbps=round(nbytes / med * 1e-6, 3))
                del x, w
            except Exception as e:
                rec["error"] = f"{e.__class__.__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            emit(rec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="k and n / 4, gmm rows / 8, 3 reps, 64 MiB roof")
    ap.add_argument("--only", choices=["torch", "jax"], help="one framework (default both, torch first)")
    ap.add_argument("--preset", action="append", help="a preset (repeatable; default all): " + " ".join(PRESETS))
    ap.add_argument("--reps", type=int, default=0, help="timed calls (default: >= 5 and ~0.25 s, <= 100)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--evict-mib", type=int, default=None, help="eviction read before each call (256; quick 16)")
    ap.add_argument("--routing", nargs="*", default=[], help="JSON files with the presets' group_sizes")
    args = ap.parse_args()
    if args.quick and args.reps == 0:
        args.reps = 3
    if args.evict_mib is None:
        args.evict_mib = 16 if args.quick else 256
    presets = []
    for name in args.preset or PRESETS:
        p = make_preset(name, args.quick)
        if p is None:
            ap.error(f"unknown preset {name}")
        presets.append(p)
    routing = read_routing(args.routing)
    if routing:
        note("routing from vkgmm for: " + ", ".join(sorted(routing)))
    if args.only in (None, "torch"):
        run_torch(presets, routing, args)
    if args.only in (None, "jax"):
        run_jax(presets, routing, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
