"""ex2.approx.f32 and lg2.approx.f32 (with and without .ftz), computed inline
(dptx/cpu/renderer/lowering/exp_log.py) in both executor forms.

Reference: numpy's float64 exp2/log2 of the float inputs, whose error (about 1e-16
relative) is far below a float ulp. Bound: 0.5 ulp plus 2^-10 (correct rounding but for
near-halfway cases), tighter than PTX's documented error for the .approx forms. The two forms
must agree bit for bit."""
import numpy as np
import pytest

from ._util import f32_unary_kernel, run_in_both_forms

TINY = np.float32(np.finfo(np.float32).tiny)      # smallest normal float


def inputs():
    rng = np.random.default_rng(2026)
    parts = [
        rng.uniform(-160, 140, 200_000),                              # all of ex2's range
        rng.uniform(-1, 1, 50_000),                                   # ex2 near 1, lg2 near 0
        np.exp2(rng.uniform(-149, 128, 200_000)),                     # lg2's positive range
        rng.uniform(0.5, 2.0, 100_000),                               # lg2 near 0
        rng.uniform(-150, -125, 50_000),                              # ex2's subnormal results
        np.float32(2) ** -149 * rng.integers(1, 1 << 23, 20_000),     # subnormal inputs
        [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 0.5, -1.0, 128.0, -149.0, -150.0,
         127.99999, -126.0, 1e-45, -1e-45, np.float32(TINY), 3.4e38],
    ]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


@pytest.fixture(scope="module")
def results():
    x = inputs()
    return x, run_in_both_forms(f32_unary_kernel("exp_log", ['ex2.approx.f32', 'ex2.approx.ftz.f32', 'lg2.approx.f32', 'lg2.approx.ftz.f32']), x)


def test_both_forms_agree_bit_for_bit(results):
    _, out = results
    assert np.array_equal(out["0"].view(np.uint32), out["all"].view(np.uint32))


def ulp_error(got, exact):
    """|got - exact| in units of the float spacing at exact (subnormal spacing below)."""
    ref32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(ref32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / spacing


def test_ex2_is_correctly_rounded_within_a_hair(results):
    x, out = results
    with np.errstate(over="ignore"):
        exact = np.exp2(x.astype(np.float64))
    finite = np.isfinite(x) & (exact < 3.4e38) & (exact >= 2.0 ** -149)
    err = ulp_error(out["all"][finite, 0], exact[finite])
    assert err.max() <= 0.5 + 2 ** -10, (x[finite][err.argmax()], err.max())
    # beyond the range: 0 below 2^-150 (rounded), +inf from 128 on; NaN stays NaN
    assert np.all(out["all"][x >= 128, 0] == np.inf)
    assert np.all(out["all"][x < -151, 0] == 0)
    assert np.isnan(out["all"][np.isnan(x), 0]).all()
    assert out["all"][x == -np.inf, 0][0] == 0.0 and out["all"][x == 0, 0][0] == 1.0


def test_ex2_ftz_flushes_subnormal_results_and_inputs(results):
    x, out = results
    plain, ftz = out["all"][:, 0], out["all"][:, 1]
    sub = (plain != 0) & (np.abs(plain) < TINY)
    assert sub.sum() > 10_000
    assert np.all(ftz[sub] == 0) and not np.signbit(ftz[sub]).any()
    normal = np.isfinite(plain) & (np.abs(plain) >= TINY)
    # a subnormal input is 0 for .ftz: 2^0 = 1, as 2^tiny rounds to 1 anyway
    assert np.array_equal(ftz[normal], plain[normal])


def test_lg2_is_correctly_rounded_within_a_hair(results):
    x, out = results
    positive = np.isfinite(x) & (x > 0)
    exact = np.log2(x[positive].astype(np.float64))
    got = out["all"][positive, 2]
    nonzero = exact != 0
    err = ulp_error(got[nonzero], exact[nonzero])
    assert err.max() <= 0.5 + 2 ** -10, (x[positive][nonzero][err.argmax()], err.max())
    assert np.all(got[~nonzero] == 0)                       # log2(1) = +0
    lg = out["all"][:, 2]
    assert np.all(lg[x == 0] == -np.inf) and lg[x == np.inf][0] == np.inf
    assert np.isnan(lg[(x < 0) | np.isnan(x)]).all()


def test_lg2_ftz_treats_subnormal_inputs_as_zero(results):
    x, out = results
    sub = (x > 0) & (x < TINY)
    assert sub.sum() > 10_000
    assert np.all(out["all"][sub, 3] == -np.inf)
    assert np.all(out["all"][sub, 2] < -126)                 # without .ftz: their logarithm
    normal = (x >= TINY) & np.isfinite(x)
    assert np.array_equal(out["all"][normal, 3], out["all"][normal, 2])
