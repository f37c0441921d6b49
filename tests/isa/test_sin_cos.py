"""sin.approx.f32 and cos.approx.f32 (with and without .ftz), computed inline in double
precision (dptx/cpu/renderer/lowering/sin_cos.py) in both executor forms, libm beyond 2^19.

Reference: numpy's float64 sin/cos of the float inputs (error about 1e-16, far below a float
ulp). Bound: 0.5 ulp plus 2^-10 (correct rounding but for near-halfway cases) up to 2^19,
an ulp beyond (libm's sinf/cosf), far inside what PTX documents for the .approx forms (an
absolute 2^-20.5 within +-100 pi). The two forms must agree
bit for bit; sin keeps the sign of zero; infinities and NaN give NaN."""
import math

import numpy as np
import pytest

from ._util import f32_unary_kernel, run_in_both_forms


def inputs():
    rng = np.random.default_rng(2027)
    half_pi = np.arange(-2000, 2001) * (math.pi / 2)
    near = half_pi.astype(np.float32)
    parts = [
        rng.uniform(-100 * math.pi, 100 * math.pi, 300_000),          # PTX's documented range
        rng.uniform(-4, 4, 100_000),
        rng.uniform(-2.0 ** 19, 2.0 ** 19, 100_000),                   # the inline range
        near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf)),
        np.float32(2) ** -149 * rng.integers(1, 1 << 23, 10_000),     # subnormal inputs
        rng.uniform(-1e-3, 1e-3, 10_000),
        np.exp2(rng.uniform(19, 127, 20_000)) * rng.choice([-1, 1], 20_000),   # libm's range
        [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** 19, -(2.0 ** 19), 2.0 ** 19 + 0.0625,
         3.4e38, -3.4e38, 1e-45, -1e-45, 1.0, math.pi, 2 * math.pi, 1e6, 1e10],
    ]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


@pytest.fixture(scope="module")
def results():
    x = inputs()
    return x, run_in_both_forms(f32_unary_kernel("sin_cos", ['sin.approx.f32', 'cos.approx.f32', 'sin.approx.ftz.f32', 'cos.approx.ftz.f32']), x)


def test_both_forms_agree_bit_for_bit(results):
    _, out = results
    assert np.array_equal(out["0"].view(np.uint32), out["all"].view(np.uint32))


@pytest.mark.parametrize("column, fn", [(0, np.sin), (1, np.cos)])
def test_correctly_rounded_within_a_hair(results, column, fn):
    x, out = results
    finite = np.isfinite(x)
    exact = fn(x[finite].astype(np.float64))
    got = out["all"][finite, column].astype(np.float64)
    documented = np.abs(x[finite]) <= 100 * math.pi
    assert np.abs(got - exact)[documented].max() <= 2.0 ** -20.5     # PTX's bound
    ref32 = exact.astype(np.float32)
    spacing = np.spacing(np.abs(ref32)).astype(np.float64)
    err = np.abs(got - exact) / spacing
    inline = np.abs(x[finite]) <= 2.0 ** 19
    assert inline.sum() > 500_000 and (~inline).sum() > 10_000      # both paths are tested
    assert err[inline].max() <= 0.5 + 2 ** -10, (x[finite][inline][err[inline].argmax()],
                                                 err[inline].max())
    assert err[~inline].max() <= 1.0        # libm's sinf/cosf: within an ulp


def test_specials(results):
    x, out = results
    sin, cos = out["all"][:, 0], out["all"][:, 1]
    for v in (np.inf, -np.inf, np.nan):
        where = (x == v) if not np.isnan(v) else np.isnan(x)
        assert np.isnan(sin[where]).all() and np.isnan(cos[where]).all()
    zero = x == 0
    assert np.array_equal(np.signbit(sin[zero]), np.signbit(x[zero]))      # sin(-0) = -0
    assert np.all(cos[zero] == 1)
    tiny = (x != 0) & (np.abs(x) < 1e-30)
    assert np.array_equal(sin[tiny], x[tiny])                               # sin x = x


def test_ftz_flushes_subnormal_inputs(results):
    x, out = results
    sub = (x != 0) & (np.abs(x) < np.finfo(np.float32).tiny)
    assert sub.sum() > 5_000
    assert np.all(out["all"][sub, 2] == 0) and np.all(out["all"][sub, 3] == 1)
