"""``nanosleep`` suspends the thread (dptx/cpu/renderer/lowering/sleep.py): the ISA's duration in
[0, 2t] and at most 1 ms, one sleep per warp in the warp-vectorized form, scaled by
``dptx.nanosleep-scale``, stopped by a time limit or Ctrl-C, and spin-waits that back off
with it still make progress. Durations are checked as bounds (a sleep never ends early; a
loose upper bound on a shared machine), never as speed."""
import subprocess
import sys
import time
from pathlib import Path

import dask.config
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor

pytestmark = pytest.mark.alone("bounds on the lengths of sleeps")

ROOT = Path(__file__).resolve().parents[1]

SLEEPS = r'''
extern "C" __global__ void timed(unsigned t, unsigned long long* elapsed) {
    // thread 0 of each block sleeps t ns and measures it on the global timer
    unsigned long long t0, t1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (threadIdx.x == 0) __nanosleep(t);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
    if (threadIdx.x == 0) elapsed[blockIdx.x] = t1 - t0;
}
extern "C" __global__ void everyone(unsigned t, int* out) {
    // every thread sleeps: t for lane 0, longer for the others (2t for lane 31)
    unsigned lane = threadIdx.x % 32;
    __nanosleep(t + t * lane / 31);
    __syncthreads();
    out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x;
}
extern "C" __global__ void forever(int* out) {
    // sleeps a millisecond at a time for ever: only a time limit or Ctrl-C ends it
    while (((volatile int*)out)[0] == 0) __nanosleep(1000000);
    out[1] = 1;
}
'''

BACKING_OFF = r'''
extern "C" __global__ void locked(int* counter, int* lock) {
    // a critical section taken with atomicCAS, backing off with nanosleep between tries
    for (int r = 0; r < 3; r++) {
        unsigned pause = 100;
        while (atomicCAS(lock, 0, 1) != 0) { __nanosleep(pause); if (pause < 100000) pause *= 4; }
        __threadfence();
        *(volatile int*)counter = *(volatile int*)counter + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}
extern "C" __global__ void reverse_chain(int* flags, int* order, int* next, int n) {
    // block b waits (backing off) until block b + 1 has finished: the last block goes first
    __shared__ int mine;
    if (threadIdx.x == 0) {
        if (blockIdx.x + 1 < n)
            while (((volatile int*)flags)[blockIdx.x + 1] == 0) __nanosleep(300000);
        mine = atomicAdd(next, 1);
    }
    __syncthreads();
    order[blockIdx.x * blockDim.x + threadIdx.x] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        ((volatile int*)flags)[blockIdx.x] = 1;
    }
}
'''


@pytest.fixture(scope="module")
def sleeps():
    mod = dptx.RawModule(SLEEPS, arch="compute_80")
    return {name: mod.get_function(name) for name in mod.kernel_names}


@pytest.fixture(params=["0", "all"])
def mode(request, monkeypatch):
    """The per-thread form (DPTX_CPU_VECTOR=0) and the warp-vectorized one (=all)."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    executor._compiled.clear()          # (forms are cached per process by PTX and name)
    yield request.param
    executor._compiled.clear()


def slept(kernel, t: int, blocks: int = 4) -> np.ndarray:
    elapsed = np.zeros(blocks, np.uint64)
    cpu.launch(kernel, (blocks,), (64,), [np.uint32(t), elapsed], threads=1)
    return elapsed.astype(np.int64)


@pytest.mark.parametrize("t", [20_000, 400_000])       # a wait on the clock; an OS sleep
def test_a_sleep_lasts_at_least_t_and_about_t(sleeps, mode, t):
    assert executor.compile_kernel(sleeps["timed"]).vector == (mode == "all")
    slept(sleeps["timed"], t)                           # (compiled: not in the measure)
    elapsed = slept(sleeps["timed"], t)
    assert (elapsed >= t).all(), elapsed                # never less than asked
    assert np.median(elapsed) <= 2 * t + 5_000_000, elapsed     # the ISA's 2t, and noise


def test_the_longest_sleep_is_a_millisecond(sleeps):
    elapsed = slept(sleeps["timed"], 50_000_000, blocks=2)
    assert (elapsed >= 1_000_000).all() and (elapsed < 25_000_000).all(), elapsed


def test_a_warp_sleeps_once_for_its_shortest_delay(sleeps, mode):
    """The ISA lets a warp's sleeping threads wake together: warp-vectorized, 8 warps of
    lanes asking 1-2 ms sleep 8 times 1 ms; per thread, the 256 threads sleep in turn."""
    out = np.zeros(256, np.int32)
    cpu.launch(sleeps["everyone"], (1,), (256,), [np.uint32(1_000_000), out], threads=1)
    t0 = time.perf_counter()
    cpu.launch(sleeps["everyone"], (1,), (256,), [np.uint32(1_000_000), out], threads=1)
    took = time.perf_counter() - t0
    np.testing.assert_array_equal(out, np.arange(256))
    if mode == "all":
        assert 0.008 <= took < 0.2, took
    else:
        assert took >= 0.256, took           # each thread at least its (capped) 1 ms


@pytest.mark.parametrize("scale", [4, 0.5, 0])
def test_the_sleep_scale_multiplies_every_sleep(sleeps, scale):
    t = 1_000_000           # (the longest: a scaled-down sleep stays well apart from t)
    with dask.config.set({"dptx.nanosleep-scale": scale}):
        elapsed = slept(sleeps["timed"], t)
    assert (elapsed >= t * scale).all(), elapsed
    if scale < 1:
        assert np.median(elapsed) < t, elapsed


@pytest.mark.parametrize("bad", [-1, "fast", float("nan")])
def test_a_bad_sleep_scale_is_refused(sleeps, bad):
    with dask.config.set({"dptx.nanosleep-scale": bad}):
        with pytest.raises(dptx.DptxError, match="dptx.nanosleep-scale"):
            slept(sleeps["timed"], 1000)


def test_a_time_limit_stops_a_kernel_that_sleeps_for_ever(sleeps, mode):
    out = np.zeros(2, np.int32)
    t0 = time.monotonic()
    with pytest.raises(dptx.DptxTimeoutError, match="kernel forever ran past its time limit"):
        cpu.launch(sleeps["forever"], (2,), (32,), [out], timeout=0.5)
    assert time.monotonic() - t0 < 3.0
    out[0] = 1                                  # the next launch runs normally
    cpu.launch(sleeps["forever"], (2,), (32,), [out], timeout=5)
    assert out[1] == 1


CTRL_C = '''
import os, signal, threading, time, numpy as np, dptx
signal.signal(signal.SIGINT, signal.default_int_handler)   # Ctrl-C as in a terminal
k = dptx.RawModule({src!r}, arch="compute_80").get_function("forever")
out = np.zeros(2, np.int32)
threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
t0 = time.monotonic()
try:
    dptx.cpu.launch(k, (2,), (32,), [out])
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted after", round(time.monotonic() - t0, 2))
'''


def test_ctrl_c_stops_a_kernel_that_sleeps_for_ever():
    proc = subprocess.run([sys.executable, "-c", CTRL_C.format(src=SLEEPS)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("interrupted after")),
                None)
    assert line is not None, proc.stdout + proc.stderr
    assert float(line.split()[-1]) < 10.0


@pytest.fixture(scope="module")
def backing_off():
    mod = dptx.RawModule(BACKING_OFF, arch="compute_80")
    return {name: mod.get_function(name) for name in mod.kernel_names}


@pytest.mark.timeout(300)
def test_a_spin_lock_that_backs_off_with_nanosleep(backing_off):
    counter, lock = np.zeros(1, np.int32), np.zeros(1, np.int32)
    cpu.launch(backing_off["locked"], (2,), (96,), [counter, lock], timeout=120)
    assert counter[0] == 2 * 96 * 3 and lock[0] == 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_backing_off_on_later_blocks_complete(backing_off, threads):
    n, block = 12, 64
    flags, nxt = np.zeros(n, np.int32), np.zeros(1, np.int32)
    order = np.full(n * block, -1, np.int32)
    cpu.launch(backing_off["reverse_chain"], (n,), (block,), [flags, order, nxt, np.int32(n)],
               threads=threads, timeout=120)
    np.testing.assert_array_equal(order.reshape(n, block),
                                  np.repeat(np.arange(n)[::-1, None], block, axis=1))
    assert flags.all() and nxt[0] == n
