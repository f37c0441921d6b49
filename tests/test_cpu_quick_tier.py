"""The quick compile tier (dptx/cpu/executor.py, dptx/cpu/jit.py).

A large kernel not yet in the disk cache first runs from a quick build (LLVM's O1 passes,
fast instruction selection) while a child process builds the optimized code into the cache;
a later launch swaps it in. Both builds come from the same IR: results are bit for bit the
same, and the next process loads the optimized code from the cache at once."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor, jit

SOURCE = r'''
extern "C" __global__ void poly(const double* x, double* y, int n, int terms) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i], acc = 0.0;
    #pragma unroll 16
    for (int k = 0; k < terms; k++) acc = acc * v + 1.0 / (k + 1);
    y[i] = acc;
}'''


def reference(x, terms):
    acc = np.zeros_like(x)
    for k in range(terms):
        acc = acc * x + 1.0 / (k + 1)
    return acc


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DPTX_CPU_VECTOR", "0")          # one form: no measurement
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", "1")
    executor._compiled.clear()
    yield
    executor._compiled.clear()


def _run(kernel, x, terms):
    y = np.zeros_like(x)
    cpu.launch(kernel, (x.size // 64,), (64,), [x, y, np.int32(x.size), np.int32(terms)])
    return y


def test_a_quick_build_runs_first_and_the_optimized_one_replaces_it(fresh):
    k = dptx.RawModule(SOURCE).get_function("poly")
    ck = executor.compile_kernel(k)
    assert ck.tier == "quick"
    x = np.linspace(-1, 1, 64 * 8)
    quick = _run(k, x, 37)
    np.testing.assert_allclose(quick, reference(x, 37), rtol=1e-12)
    ck.upgrade(wait=True)
    assert ck.tier == "optimized"
    optimized = _run(k, x, 37)
    assert np.array_equal(quick, optimized)          # the same IR: the same operations
    # the next process (here: a fresh in-memory cache) loads the optimized build at once
    executor._compiled.clear()
    again = executor.compile_kernel(k)
    assert again is not ck and again.tier == "optimized"
    assert np.array_equal(_run(k, x, 37), optimized)


def test_an_optimized_build_that_could_not_start_is_made_in_the_foreground(fresh, monkeypatch):
    monkeypatch.setattr(jit, "optimize_in_background", lambda text, key="": None)
    k = dptx.RawModule(SOURCE).get_function("poly")
    ck = executor.compile_kernel(k)
    assert ck.tier == "quick"
    x = np.linspace(0, 2, 64 * 4)
    quick = _run(k, x, 5)
    ck.upgrade()                    # nothing is building: it compiles here, at once
    assert ck.tier == "optimized"
    assert np.array_equal(_run(k, x, 5), quick)


def test_the_two_forms_are_measured_only_once_both_are_optimized(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", "1")
    executor._compiled.clear()
    try:
        k = dptx.RawModule(SOURCE + "// measured").get_function("poly")
        ck = executor.compile_kernel(k)
        assert ck.alternative is not None and ck.tier == ck.alternative.tier == "quick"
        x = np.linspace(-1, 1, 64 * 32)
        first = _run(k, x, 9)
        assert not ck.chosen            # a quick build would lose the measurement unfairly
        ck.upgrade(wait=True)
        ck.alternative.upgrade(wait=True)
        assert np.array_equal(_run(k, x, 9), first)
        assert ck.chosen
    finally:
        executor._compiled.clear()


def test_small_kernels_get_the_optimized_build_directly(monkeypatch, tmp_path):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DPTX_CPU_QUICK_TIER", raising=False)
    assert not executor.quick_tier_wanted("x\n" * 100)
    assert executor.quick_tier_wanted("x\n" * (executor.QUICK_TIER_LINES + 1))
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", "0")
    assert not executor.quick_tier_wanted("x\n" * (executor.QUICK_TIER_LINES + 1))
