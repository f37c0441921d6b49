"""Stopping a kernel that runs too long (issue 20): ``timeout=`` / ``dptx.kernel-timeout``
stops an in-process launch with DptxTimeoutError naming the kernel and the blocks that had
not run; Ctrl-C stops it within about a second (both seen between pieces of blocks, which
shrink to a fraction of a second each); Ctrl-C while waiting for a cluster launch cancels it
and leaves the array as it was."""
import os
import subprocess
import sys
import time

import dask.config
import numpy as np
import pytest

import dptx
from dptx import cpu

pytestmark = pytest.mark.alone("time limits and Ctrl-C, bounded in seconds")

SLOW = r'''extern "C" __global__ void slow(float* a, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    for (int k = 0; k < iters; k++) x = x * 1.0000001f + 1e-7f;
    a[i] = x;
}'''
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def slow():
    return dptx.RawModule(SLOW).get_function("slow")


def test_a_time_limit_stops_the_launch_and_names_the_blocks(slow):
    a = np.zeros(4096 * 256, np.float32)
    cpu.launch(slow, (4096,), (256,), [a, np.int32(5)], timeout=60)     # well within
    t0 = time.monotonic()
    with pytest.raises(dptx.DptxTimeoutError, match=r"kernel slow ran past its time limit of "
                                                    r"0.5 s \(dptx.kernel-timeout\) and was "
                                                    r"stopped: blocks (\[\d+, \d+\), )*"
                                                    r"\[\d+, 4096\) of the "
                                                    r"launch's 4096 had not finished"):
        cpu.launch(slow, (4096,), (256,), [a, np.int32(100000)], timeout=0.5)
    assert time.monotonic() - t0 < 3.0
    with dask.config.set({"dptx.kernel-timeout": 0.5}):
        with pytest.raises(dptx.DptxTimeoutError):
            cpu.launch(slow, (4096,), (256,), [a, np.int32(100000)])
    with pytest.raises(dptx.LaunchError, match="a kernel time limit is a number of seconds"):
        cpu.launch(slow, (1,), (1,), [a, np.int32(1)], timeout=-1)


CTRL_C = '''
import os, signal, threading, time, numpy as np, dptx
# Ctrl-C as in a terminal, even where this test's own parent ignores SIGINT (a background job)
signal.signal(signal.SIGINT, signal.default_int_handler)
k = dptx.RawModule({src!r}).get_function("slow")
a = np.zeros(4096 * 256, np.float32)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    dptx.cpu.launch(k, (4096,), (256,), [a, np.int32(1000000)])
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0, 2))
'''


def test_ctrl_c_stops_an_in_process_launch_within_a_second():
    proc = subprocess.run([sys.executable, "-c", CTRL_C.format(src=SLOW)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert "interrupted after" in proc.stdout, proc.stdout + proc.stderr
    assert float(proc.stdout.split()[-1]) < 2.5       # the signal came at 1.0 s


CTRL_C_CLUSTER = '''
import os, signal, threading, time, numpy as np, dptx
# Ctrl-C as in a terminal, even where this test's own parent ignores SIGINT (a background job)
signal.signal(signal.SIGINT, signal.default_int_handler)
k = dptx.RawKernel({src!r}, "slow")
a = dptx.zeros(4096 * 256, np.float32)
k((4096,), (256,), (a, np.int32(10)))
before = a.get()
threading.Timer(2.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    k((4096,), (256,), (a, np.int32(1000000)))
    dptx.synchronize()
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0, 2))
t0 = time.monotonic()
print("unchanged", bool((a.get() == before).all()), "in", round(time.monotonic() - t0, 2))
'''


@pytest.mark.timeout(300)
def test_ctrl_c_cancels_a_cluster_launch_and_keeps_the_array():
    proc = subprocess.run([sys.executable, "-c", CTRL_C_CLUSTER.format(src=SLOW)], cwd=ROOT,
                          capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, DASK_DPTX__LOCAL__N_WORKERS="2",
                                   DASK_DPTX__LOCAL__THREADS_PER_WORKER="1"))
    lines = proc.stdout.splitlines()
    assert any(line.startswith("interrupted after") for line in lines), proc.stdout + proc.stderr
    interrupted = next(line for line in lines if line.startswith("interrupted after"))
    assert float(interrupted.split()[-1]) < 4.0
    unchanged = next(line for line in lines if line.startswith("unchanged"))
    assert unchanged.split()[1] == "True" and float(unchanged.split()[-1]) < 5.0, lines


# A thread that never leaves its loop: before the back-edge polls, neither the time limit nor
# Ctrl-C could stop it (both were seen only between pieces of blocks).
FOREVER = r'''
extern "C" __global__ void spin(volatile int* flag, int* out) {
    // waits for a value the host never writes (issue 20: "never returns")
    while (*flag != 1);
    out[threadIdx.x] = 1;
}
extern "C" __global__ void stride(const float* x, float* y, int n, int step) {
    // a grid-stride loop (the warp form's full-warp loop); with step 0 it never ends
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) y[i] = x[i] + 1.0f;
}
extern "C" __global__ void count(volatile int* out, int rounds) {
    // rounds of a loop with barriers in it (the resumable form), for ever while out[64] is 1
    __shared__ int s[64];
    int x = threadIdx.x;
    for (int k = 0; k < rounds || out[64] == 1; k++) {
        s[threadIdx.x] = x;
        __syncthreads();
        x = s[(threadIdx.x + 1) % blockDim.x] + 1;
        __syncthreads();
    }
    out[threadIdx.x] = x;
}
'''


@pytest.fixture(scope="module")
def forever():
    mod = dptx.RawModule(FOREVER)
    return {name: mod.get_function(name) for name in mod.kernel_names}


@pytest.fixture(params=["0", "1", "all"])
def mode(request, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


@pytest.mark.parametrize("kernel, grid, block, args", [
    ("spin", (1,), (1,), lambda: [np.zeros(1, np.int32), np.zeros(64, np.int32)]),
    ("spin", (8,), (64,), lambda: [np.zeros(1, np.int32), np.zeros(64, np.int32)]),
    ("count", (4,), (64,), lambda: [np.ones(65, np.int32), np.int32(4)]),
    ("stride", (2,), (64,), lambda: [np.ones(1024, np.float32), np.zeros(1024, np.float32),
                                     np.int32(1024), np.int32(0)])])
def test_a_time_limit_stops_a_thread_that_loops_for_ever(forever, mode, kernel, grid, block, args):
    """The back edges poll the launch's stop request: a block that never ends is stopped at
    the time limit, in every executor form, and the next launch runs normally."""
    a = args()
    t0 = time.monotonic()
    with pytest.raises(dptx.DptxTimeoutError, match=rf"kernel {kernel} ran past its time limit "
                                                    rf"of 0.5 s .*blocks \[0, {grid[0]}\) of the "
                                                    rf"launch's {grid[0]} had not finished"):
        cpu.launch(forever[kernel], grid, block, a, timeout=0.5)
    assert time.monotonic() - t0 < 2.0
    if kernel == "stride":
        cpu.launch(forever[kernel], grid, block, a[:3] + [np.int32(128)], timeout=5)
        np.testing.assert_array_equal(a[1], 2)
    elif kernel == "spin":
        assert not a[1].any()
        a[0][0] = 1
        cpu.launch(forever[kernel], grid, block, a, timeout=5)
        assert a[1][:block[0]].all()
    else:
        out = np.zeros(65, np.int32)
        cpu.launch(forever[kernel], grid, block, [out, np.int32(4)], timeout=5)
        want = np.arange(64)
        for _ in range(4):                       # each round: the next thread's value + 1
            want = np.roll(want, -1) + 1
        np.testing.assert_array_equal(out[:64], want)


CTRL_C_FOREVER = '''
import os, signal, socket, threading, time, numpy as np, dptx
# Ctrl-C as in a terminal, even where this test's own parent ignores SIGINT (a background job)
signal.signal(signal.SIGINT, signal.default_int_handler)
if {taken}:     # the wakeup fd is someone else's (an asyncio loop's)
    a, b = socket.socketpair(); a.setblocking(False); signal.set_wakeup_fd(a.fileno())
k = dptx.RawModule({src!r}).get_function("spin")
flag, out = np.zeros(1, np.int32), np.zeros(64, np.int32)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    dptx.cpu.launch(k, (4,), (32,), [flag, out])
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0, 2))
flag[0] = 1
dptx.cpu.launch(k, (4,), (32,), [flag, out])
print("next launch", int(out[:32].sum()))
'''


@pytest.mark.parametrize("mode, wakeup_fd_taken", [("0", False), ("1", False), ("1", True)])
def test_ctrl_c_stops_a_thread_that_loops_for_ever(mode, wakeup_fd_taken):
    """Ctrl-C reaches the launch's stop request through the main thread's signal wakeup fd
    (or, where that is taken, the main thread waits and sets it)."""
    code = CTRL_C_FOREVER.format(src=FOREVER, taken=wakeup_fd_taken)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, DPTX_CPU_VECTOR=mode))
    lines = proc.stdout.splitlines()
    assert any(line.startswith("interrupted after") for line in lines), proc.stdout + proc.stderr
    assert float(lines[0].split()[-1]) < 2.0       # the signal came at 1.0 s
    assert lines[1] == "next launch 32", lines


def test_chunks_on_workers_get_a_time_limit_by_default(monkeypatch):
    """On a worker a chunk's limit is the launch's dptx.kernel-timeout, else the worker's,
    else WORKER_KERNEL_TIMEOUT; 0 or False turns it off."""
    from graphs.tasks import WORKER_KERNEL_TIMEOUT, chunk_time_limit
    assert chunk_time_limit(None) == WORKER_KERNEL_TIMEOUT == 600
    assert chunk_time_limit(2.5) == 2.5 and chunk_time_limit(False) is False
    with dask.config.set({"dptx.kernel-timeout": 30}):
        assert chunk_time_limit(None) == 30 and chunk_time_limit(4) == 4
    with dask.config.set({"dptx.kernel-timeout": 0}):
        assert chunk_time_limit(None) == 0



CTRL_C_CLUSTER_FOREVER = '''
import os, signal, threading, time, numpy as np, dptx
# Ctrl-C as in a terminal, even where this test's own parent ignores SIGINT (a background job)
signal.signal(signal.SIGINT, signal.default_int_handler)
k = dptx.RawKernel({src!r}, "spin")
flag = dptx.zeros(1, np.int32)
out = dptx.zeros(64, np.int32)
k((4,), (32,), (flag, out))
threading.Timer(3.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    dptx.synchronize()          # the chunks spin on both workers: flag is 0
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0, 2))
t0 = time.monotonic()
flag[...] = 1
k((4,), (32,), (flag, out))
print("next launch", int(out.get().sum()), "in", round(time.monotonic() - t0, 2))
'''


@pytest.mark.timeout(300)
def test_ctrl_c_stops_the_chunks_that_loop_for_ever_on_the_workers():
    """Dask cannot stop a running task: the released chunks' kernels are asked to stop at
    their next back edge (the worker plugin of dptx.worker), so the workers serve the next
    launch at once instead of spinning until the chunk's time limit."""
    proc = subprocess.run([sys.executable, "-c", CTRL_C_CLUSTER_FOREVER.format(src=FOREVER)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env=dict(os.environ, DASK_DPTX__LOCAL__N_WORKERS="2",
                                   DASK_DPTX__LOCAL__THREADS_PER_WORKER="1"))
    lines = proc.stdout.splitlines()
    assert any(line.startswith("interrupted after") for line in lines), proc.stdout + proc.stderr
    nxt = next(line for line in lines if line.startswith("next launch"))
    assert nxt.split()[2] == "32" and float(nxt.split()[-1]) < 20, lines
