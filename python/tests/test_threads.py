"""One Context shared by several Python threads (the waits release the GIL), one plan (and one routed
plan) called from all of them, nothing left alive when a Context goes, and a daemon thread inside a call
when the interpreter exits."""

import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import vkgmm
from conftest import assert_close, collect_teardown_messages, random_group_sizes, ref_gmm, ref_ids, ref_tgmm


def test_eight_threads_share_one_context_and_a_plan(ctx):
    m, k, n, groups = 96, 64, 32, 4
    rng0 = np.random.default_rng(1)
    shared_rhs = vkgmm.Array(rng0.standard_normal((groups, k, n)).astype(np.float32))
    shared_gs = random_group_sizes(rng0, m, groups)
    shared_plan = vkgmm.GmmPlan(np.zeros((m, k), np.float32), shared_rhs, shared_gs)
    ids = rng0.integers(-1, groups, (m, 2))
    routed_plan = vkgmm.IdsGmmPlan(np.zeros((m, k), np.float32), shared_rhs, ids, combine=True)
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for round_ in range(3):
                lhs = rng.standard_normal((m, k)).astype(np.float32)
                gs = random_group_sizes(rng, m, groups, empty=(round_,))
                if seed % 2:
                    t = vkgmm.tgmm(lhs.T.copy(), lhs[:, :n], gs)
                    assert_close(t, ref_tgmm(lhs.T, lhs[:, :n], gs), m)
                else:
                    rhs = rng.standard_normal((groups, n, k)).astype(np.float32)
                    assert_close(vkgmm.gmm(lhs, rhs, gs, transpose_rhs=True),
                                 ref_gmm(lhs, rhs, gs, transpose_rhs=True), k)
                out = shared_plan(lhs, shared_rhs)
                assert_close(out, ref_gmm(lhs, shared_rhs.numpy(), shared_gs), k)
                probs = rng.random((m, 2)).astype(np.float32)
                routed = routed_plan(lhs, shared_rhs, ids, probs)  # its workspace: one per call
                assert_close(routed, ref_ids(lhs, shared_rhs.numpy(), ids, probs), k)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert ctx.take_validation_messages() == []


def test_waits_release_the_gil(ctx):
    vkgmm.gmm(np.ones((16, 8), np.float32), np.ones((2, 8, 4), np.float32), [8, 8])
    assert vkgmm._vkgmm._last_wait_held_gil() is False


def test_a_context_that_goes_leaves_nothing_alive(rng):
    c = vkgmm.Context(validate=True)
    lhs, rhs = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((2, 16, 8)).astype(np.float32)
    weights = vkgmm.Array(rhs, context=c)
    plan = vkgmm.GmmPlan(lhs, weights, [10, 20], context=c)
    assert_close(plan(lhs, weights), ref_gmm(lhs, rhs, [10, 20]), 16)
    assert c.take_validation_messages() == []
    del c, weights, plan
    assert collect_teardown_messages() == []


# A daemon thread loops on gmm with a tiling callable; the main thread exits once it is inside a call.
# Finalization then sleeps (SlowExit) with the GIL handed out to no one: the thread comes back from the
# device, from the sleep in its callback or from converting the callback's result, and asks for the GIL, which CPython answers by ending it.
EXIT_WITH_A_DAEMON_INSIDE = textwrap.dedent("""
    import threading, time

    class SlowExit:
        def __del__(self, sleep=time.sleep):
            sleep(0.5)

    slow_exit = SlowExit()
    daemon = {}  # the thread's globals, not these: at exit these are freed, slow_exit with them
    exec('''
    import sys, threading, time
    import numpy as np
    import vkgmm

    inside = threading.Event()

    class SlowIndex:  # an int whose conversion runs Python code, handing the GIL over
        def __index__(self):
            time.sleep(0.2)
            return 16

    def tiling(m, k, n):
        inside.set()
        if sys.argv[1] == "callback":
            time.sleep(0.2)
        return (SlowIndex() if sys.argv[1] == "result" else 16, 16, 16)

    def loop():
        lhs, rhs = np.ones((256, 256), np.float32), np.ones((2, 256, 256), np.float32)
        while True:
            vkgmm.gmm(lhs, rhs, [128, 128], tiling=tiling)

    threading.Thread(target=loop, daemon=True).start()
    inside.wait()
    ''', daemon)
    print("exiting")
""")


@pytest.mark.parametrize("where", ["device", "callback", "result"])
def test_a_daemon_thread_inside_a_call_at_exit_does_not_abort(where):
    for _ in range(3):
        r = subprocess.run([sys.executable, "-c", EXIT_WITH_A_DAEMON_INSIDE, where], capture_output=True, text=True,
                           timeout=120)
        assert (r.returncode, r.stdout) == (0, "exiting\n"), r.stderr
