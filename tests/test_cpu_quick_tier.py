"""The quick compile tier (dptx/cpu/executor.py, dptx/cpu/forms.py).

A large kernel not yet in the disk cache first runs a quick stand-in (its plain per-thread
form, LLVM's O1 passes and fast instruction selection) while a child process translates and
builds the optimized form into the cache; a later launch swaps it in. Both forms perform the
same operations per thread: results are bit for bit the same, and the next process loads the
optimized form from the cache at once, without translating."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor, forms

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
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", "1")
    executor._compiled.clear()
    yield
    executor._compiled.clear()


def _run(kernel, x, terms):
    y = np.zeros_like(x)
    cpu.launch(kernel, (x.size // 64,), (64,), [x, y, np.int32(x.size), np.int32(terms)])
    return y


def test_a_quick_stand_in_runs_first_and_the_optimized_form_replaces_it(fresh, monkeypatch):
    k = dptx.RawModule(SOURCE).get_function("poly")
    ck = executor.compile_kernel(k)
    # the stand-in: the plain per-thread form at the quick tier
    assert ck.tier == "quick" and not ck.vector and ck.alternative is None
    x = np.linspace(-1, 1, 64 * 8)
    quick = _run(k, x, 37)
    np.testing.assert_allclose(quick, reference(x, 37), rtol=1e-12)
    ck.upgrade(wait=True)
    # the optimized form, translated and built by the child: warp-vectorized for its loop
    assert ck.tier == "optimized" and ck.vector and ck.alternative is not None
    optimized = _run(k, x, 37)
    assert np.array_equal(quick, optimized)          # the same operations, in either form
    # the next process (here: a fresh in-memory cache) loads the optimized form from the
    # disk cache at once, without translating the kernel
    executor._compiled.clear()

    def no_translation(*args, **kwargs):
        raise AssertionError("a cached form was translated again")
    monkeypatch.setattr(forms, "Translation", no_translation)
    again = executor.compile_kernel(k)
    assert again is not ck and again.tier == "optimized" and again.vector
    assert np.array_equal(_run(k, x, 37), optimized)


def test_an_optimized_build_that_could_not_start_is_made_in_the_foreground(fresh, monkeypatch):
    monkeypatch.setattr(forms, "build_in_background", lambda *args: None)
    k = dptx.RawModule(SOURCE).get_function("poly")
    ck = executor.compile_kernel(k)
    assert ck.tier == "quick"
    x = np.linspace(0, 2, 64 * 4)
    quick = _run(k, x, 5)
    ck.upgrade()                    # nothing is building: it compiles here, at once
    assert ck.tier == "optimized"
    assert np.array_equal(_run(k, x, 5), quick)


def test_the_two_forms_are_measured_only_once_both_are_optimized(fresh):
    k = dptx.RawModule(SOURCE + "// measured").get_function("poly")
    ck = executor.compile_kernel(k)
    x = np.linspace(-1, 1, 64 * 32)
    first = _run(k, x, 9)
    assert not ck.chosen            # a quick build would lose the measurement unfairly
    ck.upgrade(wait=True)
    ck.alternative.upgrade(wait=True)
    assert ck.tier == ck.alternative.tier == "optimized"
    assert np.array_equal(_run(k, x, 9), first)
    assert ck.chosen


@pytest.mark.parametrize("setting, tier", [("only", "quick"), ("unoptimized", "unoptimized")])
def test_one_tier_builds_the_form_itself_and_caches_it(fresh, monkeypatch, setting, tier):
    """DPTX_CPU_QUICK_TIER=only, =unoptimized (test suites): the kernel's own form at that
    tier, on disk for the next process, and nothing built in the background."""
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", setting)
    monkeypatch.setattr(forms, "build_in_background", None)     # never called
    k = dptx.RawModule(SOURCE + f"// {setting}").get_function("poly")
    ck = executor.compile_kernel(k)
    assert ck.tier == tier and ck.vector and ck._building is None
    x = np.linspace(-1, 1, 64 * 4)
    y = _run(k, x, 11)
    np.testing.assert_allclose(y, reference(x, 11), rtol=1e-12)
    executor._compiled.clear()
    monkeypatch.setattr(forms, "Translation", None)            # never called
    again = executor.compile_kernel(k)
    assert again.tier == tier and again.vector
    assert np.array_equal(_run(k, x, 11), y)


def test_the_policy_follows_the_kernels_size(monkeypatch):
    monkeypatch.delenv("DPTX_CPU_QUICK_TIER", raising=False)
    small = dptx.RawModule('extern "C" __global__ void add(float* a, const float* b) '
                           '{ a[threadIdx.x] += b[threadIdx.x]; }').get_function("add")
    assert executor.tier_policy(small.module, "add") == "optimized"
    # 40 barriers, each with its own arithmetic: the warp-vectorized form is large
    body = "".join(f"s[threadIdx.x] += {i}.5f; __syncthreads();" for i in range(40))
    big = dptx.RawModule('extern "C" __global__ void big(float* p) { __shared__ float s[64]; '
                         's[threadIdx.x] = p[threadIdx.x]; __syncthreads();' + body +
                         ' p[threadIdx.x] = s[threadIdx.x]; }').get_function("big")
    assert forms.estimated_ir_lines(big.module, "big") > executor.QUICK_TIER_LINES
    assert executor.tier_policy(big.module, "big") == "quick first"
    for setting, policy in (("0", "optimized"), ("1", "quick first"), ("only", "quick only"),
                            ("unoptimized", "unoptimized")):
        monkeypatch.setenv("DPTX_CPU_QUICK_TIER", setting)
        assert executor.tier_policy(small.module, "add") == policy


def test_a_form_is_keyed_by_everything_it_is_made_from():
    ptx = dptx.RawModule(SOURCE).ptx
    base = forms.form_key(ptx, "poly", "1", 16, "optimized")
    assert base == forms.form_key(ptx, "poly", "1", 16, "optimized")
    assert len({base, forms.form_key(ptx + " ", "poly", "1", 16, "optimized"),
                forms.form_key(ptx, "poly", "0", 16, "optimized"),
                forms.form_key(ptx, "poly", "1", 1, "optimized"),
                forms.form_key(ptx, "poly", "1", 16, "quick")}) == 5
