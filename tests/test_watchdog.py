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
                                                    r"stopped: blocks \[\d+, 4096\) of the "
                                                    r"launch's 4096 had not run"):
        cpu.launch(slow, (4096,), (256,), [a, np.int32(100000)], timeout=0.5)
    assert time.monotonic() - t0 < 3.0
    with dask.config.set({"dptx.kernel-timeout": 0.5}):
        with pytest.raises(dptx.DptxTimeoutError):
            cpu.launch(slow, (4096,), (256,), [a, np.int32(100000)])
    with pytest.raises(dptx.LaunchError, match="a kernel time limit is a number of seconds"):
        cpu.launch(slow, (1,), (1,), [a, np.int32(1)], timeout=-1)


CTRL_C = '''
import os, signal, threading, time, numpy as np, dptx
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
