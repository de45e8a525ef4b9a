#!/usr/bin/env python3
"""End-to-end check of `vkgmm quantize`: random <f4 weights quantized by the CLI, the blocks read back by
numpy dequantizers written here from the format definitions (q8_0, q4_0, mxfp4) and compared with the
input within each format's error; every format's output shape, and its blocks read back by `vkgmm run
gmm` (identity lhs rows, so the output is the decoded weights; --check against the CPU reference) within
the format's relative RMS error; the error contract (exit 1 or 2, one stderr line naming the argument,
no output file); and `vkgmm info` listing the formats.

usage: check_quantize.py /path/to/vkgmm [--keep]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import cli_edges

TIMEOUT_S = 300
# {format: (values per block, bytes per block)}, as `vkgmm quantize --help` gives them (main reads them
# there, so that every format it offers is checked; `vkgmm info`'s list below pins which those are).
FORMATS = {}
# Relative RMS error of a format's quantizer on normal values, at most (the codecs' own tests bound them
# tighter: tests/test_quant*.cpp); 4 bits or more: 0.15.
RMS_BOUND = {"q2_K": 0.40, "q3_K": 0.22}


def run(vkgmm, args):
    p = subprocess.run([vkgmm] + args, capture_output=True, text=True, timeout=TIMEOUT_S)
    return p.returncode, p.stdout, p.stderr


# --- numpy dequantizers (ggml's block_* structs; values as dequantize_row_*) ---------------------------

def dequant_q8_0(blocks):
    """blocks: uint8 [..., 34]: fp16 d (little-endian), then 32 int8 values; y = d * q."""
    d = blocks[..., 0:2].copy().view(np.float16).astype(np.float32)  # [..., 1]
    q = blocks[..., 2:34].view(np.int8).astype(np.float32)
    return q * d


def dequant_q4_0(blocks):
    """blocks: uint8 [..., 18]: fp16 d, then 16 bytes; value j < 16 is the low nibble of byte j, value
    j + 16 its high nibble; y = d * (nibble - 8)."""
    d = blocks[..., 0:2].copy().view(np.float16).astype(np.float32)
    qs = blocks[..., 2:18]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1).astype(np.float32) - 8
    return q * d


E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, 0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)


def dequant_mxfp4(blocks):
    """blocks: uint8 [..., 17]: E8M0 e (scale 2^(e - 127)), then 16 bytes of e2m1 codes, nibbles as q4_0."""
    scale = np.ldexp(np.float32(1), blocks[..., 0:1].astype(np.int32) - 127).astype(np.float32)
    qs = blocks[..., 1:17]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)
    return E2M1[codes] * scale


DEQUANT = {"q8_0": dequant_q8_0, "q4_0": dequant_q4_0, "mxfp4": dequant_mxfp4}


def values_of(fmt, q, shape):
    """The float values of |u1 [E, n, (k/B)*S] blocks, [E, n, k]."""
    B, S = FORMATS[fmt]
    E, n, k = shape
    blocks = q.reshape(E, n, k // B, S)
    return DEQUANT[fmt](blocks).reshape(E, n, k)


def within_format_error(fmt, x, y):
    """None if y (dequantized) is within fmt's error of x (both [E, n, k]), else the reason."""
    B, _ = FORMATS[fmt]
    xb = x.reshape(-1, B).astype(np.float64)
    yb = y.reshape(-1, B).astype(np.float64)
    amax = np.abs(xb).max(axis=1, keepdims=True)
    err = np.abs(yb - xb)
    if fmt == "q8_0":
        bound = 0.5 * amax / 127 * (1 + 2.0 ** -9)  # half a step of d = amax / 127 (stored as fp16)
    elif fmt == "q4_0":
        bound = amax / 8 * (1 + 2.0 ** -7)  # one step of |d| = amax / 8 (the far side of the extreme)
    else:
        bound = 0.5 * amax  # mxfp4: e2m1 levels with the scale floor(log2 amax) - 2 or one above
    bad = err > bound
    if bad.any():
        i = np.argwhere(bad)[0]
        return "block %d value %d: %r -> %r, error %g > %g" % (i[0], i[1], xb[tuple(i)], yb[tuple(i)],
                                                                err[tuple(i)], bound[i[0], 0])
    return None


# --- cases ---------------------------------------------------------------------------------------------

def good_cases():
    # (name, format, shape of --in, 2-D input?)
    return [
        ("q8_0 [2, 3, 64]", "q8_0", (2, 3, 64)),
        ("q8_0 [4, 96] (E = 1)", "q8_0", (4, 96)),
        ("q4_0 [3, 5, 128]", "q4_0", (3, 5, 128)),
        ("q4_0 [2, 32] (E = 1)", "q4_0", (2, 32)),
        ("mxfp4 [2, 4, 64]", "mxfp4", (2, 4, 64)),
        ("q4_K [2, 3, 512] shape", "q4_K", (2, 3, 512)),
        ("q6_K [3, 256] shape", "q6_K", (3, 256)),
        ("q8_0 [1, 0, 32] (no rows)", "q8_0", (1, 0, 32)),
    ]


def check_good(vkgmm, d, rng, fmt, shape):
    x = (rng.standard_normal(shape) * rng.choice([0.01, 1.0, 50.0])).astype(np.float32)
    w, q_path = os.path.join(d, "w.npy"), os.path.join(d, "q.npy")
    np.save(w, x)
    code, stdout, err = run(vkgmm, ["quantize", "--format", fmt, "--in", w, "--out", q_path])
    if code != 0:
        return "exit %s: %s" % (code, err.strip())
    if err:
        return "unexpected stderr: %r" % err
    q = np.load(q_path)
    E, n, k = shape if len(shape) == 3 else (1,) + tuple(shape)
    B, S = FORMATS[fmt]
    if q.dtype != np.uint8 or q.shape != (E, n, k // B * S):
        return "output %s %r, expected uint8 %r" % (q.dtype, q.shape, (E, n, k // B * S))
    if fmt not in DEQUANT:
        return None
    return within_format_error(fmt, x.reshape(E, n, k), values_of(fmt, q, (E, n, k)))


def block_sizes(vkgmm):
    """{format: (values, bytes)} from `vkgmm quantize --help`: "(values per block B, bytes per block S: q8_0
    32/34, ..., q3_K 256/110)"."""
    code, stdout, err = run(vkgmm, ["quantize", "--help"])
    found = re.search(r"bytes per block S:(.*?)\)", stdout, re.S)
    if code != 0 or not found:
        raise RuntimeError("vkgmm quantize --help: exit %s, no block sizes in %r %r" % (code, stdout[:200], err))
    return {name: (int(b), int(s)) for name, b, s in re.findall(r"(\w+) (\d+)/(\d+)", found.group(1))}


def check_decoded_by_gmm(vkgmm, d, rng, fmt):
    """Weights [E = 2, n = 8, k = 256] quantized by the CLI, then `vkgmm run gmm` of identity rows over
    them (out = lhs @ W_g^T, so group g's rows give W_g^T): the decoded weights, checked by --check against
    the CPU reference and here against the input within the format's relative RMS error."""
    E, n, k = 2, 8, 256
    x = rng.standard_normal((E, n, k)).astype(np.float32)
    paths = {name: os.path.join(d, name + ".npy") for name in ("w", "q", "lhs", "gs", "out")}
    np.save(paths["w"], x)
    code, _, err = run(vkgmm, ["quantize", "--format", fmt, "--in", paths["w"], "--out", paths["q"]])
    if code != 0:
        return "quantize: exit %s: %s" % (code, err.strip())
    np.save(paths["lhs"], np.tile(np.eye(k, dtype=np.float32), (E, 1)))
    np.save(paths["gs"], np.full(E, k, np.int32))
    code, _, err = run(vkgmm, ["run", "gmm", "--lhs", paths["lhs"], "--rhs", paths["q"], "--rhs-format", fmt,
                               "--group-sizes", paths["gs"], "--out", paths["out"], "--check"])
    if code != 0:
        return "run gmm: exit %s: %s" % (code, err.strip())
    y = np.load(paths["out"]).reshape(E, k, n).transpose(0, 2, 1)
    rms = float(np.sqrt(np.mean((y.astype(np.float64) - x) ** 2) / np.mean(x.astype(np.float64) ** 2)))
    bound = RMS_BOUND.get(fmt, 0.15)
    return None if rms <= bound else "relative RMS error %.3f > %.2f" % (rms, bound)


def error_cases(d):
    """(name, args, needle): each must exit 1 or 2 with one stderr line containing needle, and leave no
    output file."""
    p = lambda f: os.path.join(d, f)
    rng = np.random.default_rng(5)
    np.save(p("w64.npy"), rng.standard_normal((2, 3, 64)).astype(np.float32))
    np.save(p("w48.npy"), rng.standard_normal((3, 48)).astype(np.float32))
    np.save(p("w_f2.npy"), rng.standard_normal((3, 64)).astype(np.float16))
    np.save(p("w_1d.npy"), rng.standard_normal(64).astype(np.float32))
    np.save(p("w_4d.npy"), rng.standard_normal((1, 2, 3, 64)).astype(np.float32))
    nan = rng.standard_normal((2, 64)).astype(np.float32)
    nan[1, 5] = np.nan
    np.save(p("w_nan.npy"), nan)
    out = p("out.npy")
    good = ["--in", p("w64.npy"), "--out", out]
    return out, [
        ("k not a multiple of q4_K's 256", ["quantize", "--format", "q4_K"] + good, "--in"),
        ("k not a multiple of q8_0's 32", ["quantize", "--format", "q8_0", "--in", p("w48.npy"), "--out", out],
         "multiple of 32"),
        ("unknown format", ["quantize", "--format", "iq2_xxs"] + good, "--format"),
        ("element type as format", ["quantize", "--format", "f16"] + good, "--format"),
        ("missing --format", ["quantize"] + good, "--format"),
        ("missing --in", ["quantize", "--format", "q8_0", "--out", out], "--in"),
        ("missing --out", ["quantize", "--format", "q8_0", "--in", p("w64.npy")], "--out"),
        ("--format twice", ["quantize", "--format", "q8_0", "--format", "q4_0"] + good, "--format"),
        ("--out without a value", ["quantize", "--format", "q8_0", "--in", p("w64.npy"), "--out"], "--out"),
        ("unknown argument", ["quantize", "--format", "q8_0", "--bogus"] + good, "--bogus"),
        ("--in missing file", ["quantize", "--format", "q8_0", "--in", p("nope.npy"), "--out", out], "--in"),
        ("--in f16", ["quantize", "--format", "q8_0", "--in", p("w_f2.npy"), "--out", out], "--in"),
        ("--in 1-D", ["quantize", "--format", "q8_0", "--in", p("w_1d.npy"), "--out", out], "--in"),
        ("--in 4-D", ["quantize", "--format", "q8_0", "--in", p("w_4d.npy"), "--out", out], "--in"),
        ("--in not finite", ["quantize", "--format", "q4_0", "--in", p("w_nan.npy"), "--out", out], "--in"),
        ("--out in a missing directory", ["quantize", "--format", "q8_0", "--in", p("w64.npy"), "--out",
                                          p("nodir/out.npy")], "--out"),
        ("--out where nothing can be written", ["quantize", "--format", "q8_0", "--in", p("w64.npy"), "--out",
                                                "/proc/vkgmm_out.npy"], "--out: /proc/vkgmm_out.npy"),
        ("--format=F, then --format", ["quantize", "--format=q8_0", "--format", "q4_0"] + good, "--format given twice"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("vkgmm")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    vkgmm = os.path.abspath(a.vkgmm)
    tmp = tempfile.mkdtemp(prefix="vkgmm_check_quantize_")
    passed = failed = 0

    def report(name, reason):
        nonlocal passed, failed
        if reason is None:
            passed += 1
            print("PASS  " + name, flush=True)
        else:
            failed += 1
            print("FAIL  %s: %s" % (name, reason), flush=True)

    try:
        FORMATS.update(block_sizes(vkgmm))
        rng = np.random.default_rng(4321)
        for i, (name, fmt, shape) in enumerate(good_cases()):
            d = os.path.join(tmp, "case%02d" % i)
            os.makedirs(d)
            try:
                reason = check_good(vkgmm, d, rng, fmt, shape)
            except Exception as e:
                reason = "%s: %s" % (type(e).__name__, e)
            report(name, reason)

        for fmt in FORMATS:
            d = os.path.join(tmp, "gmm_" + fmt)
            os.makedirs(d)
            try:
                reason = check_decoded_by_gmm(vkgmm, d, rng, fmt)
            except Exception as e:
                reason = "%s: %s" % (type(e).__name__, e)
            report(fmt + " [2, 8, 256] read back by run gmm", reason)

        # The numpy dequantizers themselves, on a hand-made q8_0 and q4_0 block (fp16 0x3800 = 0.5).
        q8 = np.zeros(34, np.uint8)
        q8[0:2] = [0x00, 0x38]
        q8[2], q8[3], q8[33] = 0x02, 0xFF, 0x80  # 2 -> 1.0, -1 -> -0.5, -128 -> -64
        v8 = dequant_q8_0(q8)
        q4 = np.full(18, 0x88, np.uint8)
        q4[0:2] = [0x00, 0x38]
        q4[2] = 0xF1  # low 1 -> value 0: (1 - 8) * 0.5 = -3.5; high 15 -> value 16: 3.5
        v4 = dequant_q4_0(q4)
        ok = (v8[0] == 1.0 and v8[1] == -0.5 and v8[31] == -64 and v4[0] == -3.5 and v4[16] == 3.5 and
              not v4[1:16].any() and not v4[17:].any())
        report("numpy dequantizers on hand-made blocks", None if ok else "q8_0 %r, q4_0 %r" % (v8, v4))

        d = os.path.join(tmp, "errors")
        os.makedirs(d)
        out, cases = error_cases(d)
        for name, args, needle in cases:
            code, stdout, err = run(vkgmm, args)
            lines = err.splitlines()
            reason = None
            if code not in (1, 2):
                reason = "exit status %s, expected 1 or 2" % code
            elif len(lines) != 1:
                reason = "%d stderr lines, expected 1: %r" % (len(lines), err)
            elif not lines[0].startswith("vkgmm: error: "):
                reason = "stderr line does not start with 'vkgmm: error: ': " + lines[0]
            elif needle.lower() not in lines[0].lower():
                reason = "error does not mention %r: %s" % (needle, lines[0])
            elif os.path.exists(out) or os.path.exists(os.path.join(d, "nodir")):
                reason = "an output file was left behind"
            elif any(f.startswith(".out.npy") for f in os.listdir(d)):
                reason = "a temporary output file was left behind"
            report("error: " + name, reason)

        d = os.path.join(tmp, "edges")
        os.makedirs(d)
        for name, reason in cli_edges.quantize_cases(vkgmm, d):
            report(name, reason)

        code, stdout, err = run(vkgmm, ["quantize", "--help"])
        ok = code == 0 and not err and all(s in stdout for s in ["--format", "--in", "--out", "q4_K", "mxfp4"])
        report("quantize --help", None if ok else "exit %s, stdout %r, stderr %r" % (code, stdout[:80], err))
        code, stdout2, err = run(vkgmm, ["help", "quantize"])
        report("help quantize", None if code == 0 and stdout2 == stdout else "exit %s, %r" % (code, stdout2[:80]))

        listed = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_K", "q6_K", "mxfp4", "q4_1", "q5_0", "q5_1", "iq4_nl", "q5_K", "iq4_xs", "q2_K", "q3_K"]
        code, stdout, err = run(vkgmm, ["info", "--json"])
        try:
            reason = None if json.loads(stdout)["rhs_formats"] == listed else "rhs_formats %r" % json.loads(
                stdout)["rhs_formats"]
        except (ValueError, KeyError) as e:
            reason = "exit %s, not the JSON expected (%s): %r %r" % (code, e, stdout[:200], err)
        report("info --json lists the formats", reason)
        report("quantize --help sizes every format", None if list(FORMATS) == listed[3:] else
               "quantize --help: %r, info: %r" % (list(FORMATS), listed[3:]))
        code, stdout, err = run(vkgmm, ["info"])
        line = [l for l in stdout.splitlines() if l.startswith("rhs_formats:")]
        report("info lists the formats", None if code == 0 and line and " ".join(listed) in line[0] else
               "exit %s, %r" % (code, line or stdout[:200]))
    finally:
        if a.keep:
            print("inputs kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
