"""Edge cases of the command line that check_run.py's tables do not reach: --out targets that are not a
plain new file (links, FIFOs, devices, long names, places nothing can be written), --check's tolerance
on long sums of large values, bounds on sizes read from files and the environment, and the top-level
commands' own arguments. Each case checks the exit status as well as the message.

Run from check_run.py (edge_cases) and check_quantize.py (quantize_cases); every case's name starts
with "edge: ".
"""
import io
import os
import stat
import struct
import subprocess
import threading

import numpy as np

TIMEOUT_S = 600


def call(vkgmm, args, env=None):
    """(exit status, stdout bytes, stderr text) of `vkgmm ARGS`."""
    try:
        p = subprocess.run([vkgmm] + args, capture_output=True, timeout=TIMEOUT_S,
                           env=dict(os.environ, **env) if env else None)
        return p.returncode, p.stdout, p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return None, b"", "timed out after %d s" % TIMEOUT_S


def refused(vkgmm, args, status, needle, env=None):
    """None when `vkgmm ARGS` exits `status` with one stderr line naming `needle` and prints nothing on
    stdout (refused before any work: --check would have printed its line); else the reason."""
    code, out, err = call(vkgmm, args, env)
    lines = err.splitlines()
    if code != status:
        return "exit status %s, expected %d: %s" % (code, status, err.strip())
    if len(lines) != 1 or not lines[0].startswith("vkgmm: error: "):
        return "expected one 'vkgmm: error: ' line, got %r" % err
    if needle.lower() not in lines[0].lower():
        return "error does not mention %r: %s" % (needle, lines[0])
    if out:
        return "stdout not empty (the work ran before the refusal?): %r" % out[:120]
    return None


def succeeded(vkgmm, args, env=None):
    code, out, err = call(vkgmm, args, env)
    return None if code == 0 and not err.strip() else "exit %s: %s" % (code, err.strip())


def raw_npy(path, descr, shape):
    """An .npy header claiming `shape` with no data: valid when the shape has no elements, whatever its
    other dimensions say."""
    dims = ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "")
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims)
    h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode())


def out_cases(vkgmm, d, base, want, only):
    """--out through links, onto a FIFO and /dev/null, with a 255-byte name, and where it cannot be."""
    p = lambda f: os.path.join(d, f)
    cases = []

    def load_ok(path):
        got = np.load(path)
        return None if got.shape == want.shape and np.allclose(got, want, atol=1e-3) else "wrong contents"

    # A link to an existing file: the file gets the output, the link stays a link.
    with open(p("target.npy"), "w") as f:
        f.write("old")
    os.symlink("target.npy", p("link.npy"))
    reason = succeeded(vkgmm, base + ["--out", p("link.npy")])
    if reason is None and not os.path.islink(p("link.npy")):
        reason = "the link was replaced by a file"
    cases.append(("edge: --out through a symlink writes its target", reason or load_ok(p("target.npy"))))

    # A link to nothing yet, in another directory: the file appears where the link points.
    os.makedirs(p("elsewhere"))
    os.symlink(os.path.join("elsewhere", "new.npy"), p("dangling.npy"))
    reason = succeeded(vkgmm, base + ["--out", p("dangling.npy")])
    if reason is None and not (os.path.islink(p("dangling.npy")) and os.path.isfile(p("elsewhere/new.npy"))):
        reason = "the link was not followed"
    cases.append(("edge: --out through a dangling symlink creates its target",
                  reason or load_ok(p("elsewhere/new.npy"))))

    # A FIFO: written in place, read by a reader; still a FIFO afterwards.
    os.mkfifo(p("fifo"))
    got = {}

    def reader():
        with open(p("fifo"), "rb") as f:
            got["bytes"] = f.read()
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    reason = succeeded(vkgmm, base + ["--out", p("fifo")])
    t.join(timeout=60)
    if reason is None and not stat.S_ISFIFO(os.lstat(p("fifo")).st_mode):
        reason = "the FIFO was replaced by a regular file"
    elif reason is None and "bytes" not in got:
        reason = "the reader got nothing"
    elif reason is None and not np.allclose(np.load(io.BytesIO(got["bytes"])), want, atol=1e-3):
        reason = "the reader got the wrong array"
    cases.append(("edge: --out onto a FIFO writes into it", reason))

    # /dev/null: written, and still the character device (a rename onto it, as root, would replace it).
    # Not run when --only leaves it out: of all the cases it alone could harm the machine (a binary that
    # renames onto /dev/null replaces it, as root), so a filtered run never touches it.
    name = "edge: --out /dev/null leaves the device alone"
    reason = succeeded(vkgmm, base + ["--out", "/dev/null"]) if only in name else None
    if not stat.S_ISCHR(os.stat("/dev/null").st_mode):
        reason = "/dev/null is no longer a character device"
        if os.geteuid() == 0:  # put it back: the rest of the system needs it
            os.remove("/dev/null")
            os.mknod("/dev/null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
            os.chmod("/dev/null", 0o666)
            reason += " (restored)"
    cases.append((name, reason))
    # /dev/stdout into a pipe: its links end in "pipe:[N]", which only open() can follow. Guarded by
    # --only as /dev/null is.
    name = "edge: --out /dev/stdout into a pipe"
    reason = None
    if only in name:
        code, out, err = call(vkgmm, base + ["--out", "/dev/stdout"])
        if code != 0 or err.strip():
            reason = "exit %s: %s" % (code, err.strip())
        elif stat.S_ISREG(os.lstat("/dev/stdout").st_mode):
            reason = "/dev/stdout was replaced by a regular file"
            if os.geteuid() == 0:  # put the link back
                os.remove("/dev/stdout")
                os.symlink("/proc/self/fd/1", "/dev/stdout")
                reason += " (restored)"
        elif not np.allclose(np.load(io.BytesIO(out)), want, atol=1e-3):
            reason = "stdout holds the wrong array"
    cases.append((name, reason))

    # /dev/stdout redirected to a file that holds a line already (a shell's `>> log`): the array goes
    # after the line, through the descriptor, and the file stays the same file (a rename onto what
    # /dev/stdout resolves to would replace the log).
    with open(p("log.txt"), "wb") as f:
        f.write(b"previous line\n")
    inode = os.stat(p("log.txt")).st_ino
    with open(p("log.txt"), "ab") as f:
        r = subprocess.run([vkgmm] + base + ["--out", "/dev/stdout"], stdout=f, stderr=subprocess.PIPE,
                           timeout=TIMEOUT_S)
    reason = None if r.returncode == 0 else "exit %s: %s" % (r.returncode, r.stderr.decode(errors="replace"))
    with open(p("log.txt"), "rb") as f:
        logged = f.read()
    if reason is None and os.stat(p("log.txt")).st_ino != inode:
        reason = "the log file was replaced"
    elif reason is None and not logged.startswith(b"previous line\n"):
        reason = "the log's line is gone"
    elif reason is None and not np.allclose(np.load(io.BytesIO(logged[len(b"previous line\n"):])), want, atol=1e-3):
        reason = "the array after the line is wrong"
    cases.append(("edge: --out /dev/stdout appended to a redirected file", reason))

    # A reader that has gone (a closed pipe): a write error, one line and exit 1, not death by SIGPIPE.
    read_end, write_end = os.pipe()
    os.close(read_end)
    r = subprocess.run([vkgmm] + base + ["--out", "/dev/stdout"], stdout=write_end, stderr=subprocess.PIPE,
                       timeout=TIMEOUT_S)
    os.close(write_end)
    err = r.stderr.decode(errors="replace")
    reason = None if r.returncode == 1 and "Broken pipe" in err else "exit %s: %r" % (r.returncode, err)
    cases.append(("edge: --out into a pipe nobody reads fails with exit 1", reason))

    # An existing target keeps its permission bits when its content is replaced.
    with open(p("private.npy"), "w") as f:
        f.write("old")
    os.chmod(p("private.npy"), 0o751)  # with execute bits, which no umask leaves on a new file's 0666
    reason = succeeded(vkgmm, base + ["--out", p("private.npy")])
    mode = stat.S_IMODE(os.stat(p("private.npy")).st_mode)
    cases.append(("edge: --out keeps an existing file's mode", reason or (None if mode == 0o751 else "mode %o" % mode)))

    # A file name of 255 bytes, the most a directory entry holds: its temporary must fit too.
    long_name = p("o" * 251 + ".npy")
    reason = succeeded(vkgmm, base + ["--out", long_name])
    cases.append(("edge: --out with a 255-byte file name", reason or load_ok(long_name)))
    leftovers = [f for f in os.listdir(d) if f.startswith(".")]
    cases.append(("edge: no temporary files left", "left: %r" % leftovers if leftovers else None))

    # Nowhere to write: refused before the run (no check line on stdout), status 2, naming --out. These
    # fail for root too: sysfs and procfs refuse new files whatever the permission bits say.
    cases.append(("edge: --out under /sys refused before --check",
                  refused(vkgmm, base + ["--out", "/sys/vkgmm_out.npy", "--check"], 2, "--out")))
    cases.append(("edge: --out under /proc refused", refused(vkgmm, base + ["--out", "/proc/vkgmm_out.npy"], 2,
                                                             "--out")))
    cases.append(("edge: --out under a regular file says it is not a directory",
                  refused(vkgmm, base + ["--out", p("target.npy") + "/x.npy"], 2, "target.npy' is not a directory")))
    cases.append(("edge: --out= empty", refused(vkgmm, base + ["--out="], 2, "--out")))
    if os.geteuid() == 0:
        print("SKIP  edge: --out in a read-only directory (running as root, which the permission bits do not stop)")
    else:
        os.makedirs(p("readonly"))
        os.chmod(p("readonly"), 0o555)
        cases.append(("edge: --out in a read-only directory refused",
                      refused(vkgmm, base + ["--out", p("readonly/x.npy"), "--check"], 2, "--out")))
        with open(p("readonly_file.npy"), "w") as f:
            f.write("x")
        os.chmod(p("readonly_file.npy"), 0o444)
        cases.append(("edge: --out onto a read-only file refused",
                      refused(vkgmm, base + ["--out", p("readonly_file.npy")], 2, "not writable")))
    return cases


def check_cases(vkgmm, d, rng):
    """--check on f32 sums of 16384 terms of magnitude up to 100: a correct result passes (a fixed atol
    of 1e-3 failed it), one element off by one term's worth fails (VKGMM_RUN_PERTURB=1)."""
    p = lambda f: os.path.join(d, f)
    k = 16384
    np.save(p("big_lhs.npy"), rng.uniform(-10, 10, (16, k)).astype(np.float32))
    np.save(p("big_rhs.npy"), rng.uniform(-10, 10, (1, k, 16)).astype(np.float32))
    np.save(p("big_gs.npy"), np.array([16], np.int32))
    np.save(p("big_tlhs.npy"), rng.uniform(-10, 10, (16, k)).astype(np.float32))
    np.save(p("big_trhs.npy"), rng.uniform(-10, 10, (k, 16)).astype(np.float32))
    np.save(p("big_tgs.npy"), np.array([k // 2, k // 2], np.int32))
    gmm = ["run", "gmm", "--lhs", p("big_lhs.npy"), "--rhs", p("big_rhs.npy"), "--group-sizes", p("big_gs.npy"),
           "--out", p("big_out.npy"), "--check"]
    tgmm = ["run", "tgmm", "--lhs", p("big_tlhs.npy"), "--rhs", p("big_trhs.npy"), "--group-sizes",
            p("big_tgs.npy"), "--out", p("big_tout.npy"), "--check"]
    cases = []
    for name, args in (("gmm", gmm), ("tgmm", tgmm)):
        cases.append(("edge: --check passes a correct f32 %s of k = 16384, values to 10" % name,
                      succeeded(vkgmm, args)))
        out_path = args[args.index("--out") + 1]
        if os.path.exists(out_path):
            os.remove(out_path)
        code, out, err = call(vkgmm, args, {"VKGMM_RUN_PERTURB": "1"})
        reason = None
        if code != 1 or "--check" not in err or b"FAILED" not in out:
            reason = "exit %s, stdout %r, stderr %r" % (code, out[-120:], err.strip())
        elif os.path.exists(out_path):
            reason = "a failed --check left an output file"
        cases.append(("edge: --check refuses a %s result one term off" % name, reason))
    # A q8_0 rhs with f32 lhs and output is an f32 product (the blocks decode to exact f32 values).
    np.save(p("q_lhs.npy"), rng.uniform(-1, 1, (8, 32)).astype(np.float32))
    np.save(p("q_rhs.npy"), np.zeros((1, 4, 34), np.uint8))
    np.save(p("q_gs.npy"), np.array([8], np.int32))
    code, out, err = call(vkgmm, ["run", "gmm", "--lhs", p("q_lhs.npy"), "--rhs", p("q_rhs.npy"), "--rhs-format",
                                  "q8_0", "--group-sizes", p("q_gs.npy"), "--out", p("q_out.npy"), "--check"])
    cases.append(("edge: --check of a q8_0 rhs with f32 lhs uses f32's rtol",
                  None if code == 0 and b"rtol 1e-05" in out else "exit %s, %r %r" % (code, out, err)))
    return cases


def input_cases(vkgmm, d, base, write_gguf):
    """Sizes from crafted files and from the environment, GGUF tensor names, and flags that are refused."""
    p = lambda f: os.path.join(d, f)
    out = p("in_out.npy")
    raw_npy(p("huge_blocks.npy"), "|u1", [0, 1, 9223372036854775799])
    np.save(p("lhs0.npy"), np.zeros((0, 16), np.float32))
    np.save(p("gs0.npy"), np.array([0], np.int32))
    np.save(p("lhs16.npy"), np.zeros((32, 16), np.float16))
    np.save(p("rhs16.npy"), np.zeros((2, 16, 8), np.float16))
    np.save(p("t_rhs16.npy"), np.zeros((16, 8), np.float16))
    np.save(p("t_gs.npy"), np.array([6, 10], np.int32))
    np.save(p("ids.npy"), np.zeros((32, 2), np.int32))
    lhs, rhs, gs = base[base.index("--lhs") + 1], base[base.index("--rhs") + 1], base[base.index("--group-sizes") + 1]
    w = np.load(rhs)  # [2, 16, 8]: as a GGUF tensor, dims [k, n, E] = [8, 16, 2] of memory [E, n, k]
    write_gguf(p("colon.gguf"), [("blk.0:ffn_up", [16, 8, 2], "f32", np.ascontiguousarray(w.transpose(0, 2, 1)).tobytes())])
    os.makedirs(p("a:b"))
    write_gguf(p("a:b/m.gguf"), [("w", [16, 8, 2], "f32", np.ascontiguousarray(w.transpose(0, 2, 1)).tobytes())])
    cases = [
        ("edge: --rhs-format k past int64 refused",
         refused(vkgmm, ["run", "gmm", "--lhs", p("lhs0.npy"), "--rhs", p("huge_blocks.npy"), "--rhs-format", "mxfp4",
                         "--group-sizes", p("gs0.npy"), "--out", out], 2, "2^63")),
        ("edge: --group-offset past int32 with --ids refused as an argument",
         refused(vkgmm, ["run", "gmm", "--lhs", lhs, "--ids", p("ids.npy"), "--rhs", rhs, "--group-offset",
                         "2147483648", "--out", out], 2, "--group-offset")),
        ("edge: --input-dtype bf16 with only f16 inputs refused",
         refused(vkgmm, ["run", "gmm", "--lhs", p("lhs16.npy"), "--rhs", p("rhs16.npy"), "--group-sizes", gs,
                         "--input-dtype", "bf16", "--out", out], 2, "--input-dtype")),
        ("edge: tgmm --input-dtype bf16 with only f16 inputs refused",
         refused(vkgmm, ["run", "tgmm", "--lhs", p("lhs16.npy"), "--rhs", p("t_rhs16.npy"), "--group-sizes", p("t_gs.npy"),
                         "--input-dtype", "bf16", "--out", out], 2, "--input-dtype")),
        ("edge: FILE.gguf:TENSOR splits at the last ':' (a tensor name holding one is refused)",
         refused(vkgmm, ["run", "gmm", "--lhs", lhs, "--rhs", p("colon.gguf") + ":blk.0:ffn_up", "--group-sizes", gs,
                         "--out", out], 2, "last ':'")),
        ("edge: GGUF file in a directory holding ':'",
         succeeded(vkgmm, ["run", "gmm", "--lhs", lhs, "--rhs", p("a:b/m.gguf") + ":w", "--group-sizes", gs,
                           "--out", out, "--check"])),
        ("edge: tgmm with a GGUF rhs says gmm only",
         refused(vkgmm, ["run", "tgmm", "--lhs", lhs, "--rhs", p("none.gguf") + ":w", "--group-sizes", gs,
                         "--out", out], 2, "gmm's only")),
    ]
    for value in (" 5", "+5", "-5", "0", "5x", "2305843009213693952", "99999999999999999999999"):
        cases.append(("edge: VKGMM_CACHE_BYTES=%r refused" % value,
                      refused(vkgmm, ["info"], 2, "VKGMM_CACHE_BYTES", {"VKGMM_CACHE_BYTES": value})))
    return cases


def command_cases(vkgmm, d):
    """The top-level commands' own arguments: help wins, repeats and extras are refused."""
    cases = []
    for topic in ("--help", "--version", "-h"):
        code, out, err = call(vkgmm, ["help", topic])
        cases.append(("edge: help %s prints the usage" % topic,
                      None if code == 0 and out.startswith(b"usage: vkgmm") and not err else
                      "exit %s, %r %r" % (code, out[:60], err)))
    cases += [
        ("edge: --version with an extra argument", refused(vkgmm, ["--version", "extra"], 2, "extra")),
        ("edge: info --json twice", refused(vkgmm, ["info", "--json", "--json"], 2, "--json given twice")),
        ("edge: gpu-report --device twice",
         refused(vkgmm, ["gpu-report", "--device", "a", "--device", "b"], 2, "--device given twice")),
        ("edge: gpu-report --json twice",
         refused(vkgmm, ["gpu-report", "--device", "a", "--json", "--json"], 2, "--json given twice")),
        ("edge: gpu-report --dump into a missing directory, before the report",
         refused(vkgmm, ["gpu-report", "--device", "llvmpipe", "--dump", os.path.join(d, "nodir", "x")], 2,
                 "--dump")),
    ]
    return cases


def quantize_cases(vkgmm, d):
    """vkgmm quantize's own: an empty --out and a k whose blocks overflow int64, refused with status 2."""
    p = lambda f: os.path.join(d, f)
    np.save(p("qw.npy"), np.zeros((2, 64), np.float32))
    raw_npy(p("qw_huge.npy"), "<f4", [0, 1, 9223372036854775776])
    return [
        ("edge: quantize --out ''", refused(vkgmm, ["quantize", "--format", "q8_0", "--in", p("qw.npy"), "--out", ""],
                                            2, "--out")),
        ("edge: quantize --out=", refused(vkgmm, ["quantize", "--format", "q8_0", "--in", p("qw.npy"), "--out="],
                                          2, "--out")),
        ("edge: quantize k past int64 in blocks",
         refused(vkgmm, ["quantize", "--format", "q8_0", "--in", p("qw_huge.npy"), "--out", p("qo.npy")], 2, "--in")),
    ]


def edge_cases(vkgmm, d, rng, write_gguf, only=""):
    """The cases of `vkgmm run`, info, gpu-report and help above as (name, reason), reason None on
    success; `only` keeps those whose name holds it (all are run, but for /dev/null's)."""
    p = lambda f: os.path.join(d, f)
    lhs = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    rhs = rng.uniform(-1, 1, (2, 16, 8)).astype(np.float32)
    gs = np.array([10, 22], np.int32)
    np.save(p("lhs.npy"), lhs)
    np.save(p("rhs.npy"), rhs)
    np.save(p("gs.npy"), gs)
    want = np.concatenate([lhs[:10] @ rhs[0], lhs[10:] @ rhs[1]])
    base = ["run", "gmm", "--lhs", p("lhs.npy"), "--rhs", p("rhs.npy"), "--group-sizes", p("gs.npy")]
    os.makedirs(os.path.join(d, "out"))
    cases = (out_cases(vkgmm, os.path.join(d, "out"), base, want, only) + check_cases(vkgmm, d, rng) +
             input_cases(vkgmm, d, base, write_gguf) + command_cases(vkgmm, d))
    return [(n, r) for n, r in cases if only in n]
