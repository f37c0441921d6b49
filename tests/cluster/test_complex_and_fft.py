"""Complex arrays (complex64, complex128) through the array library, and ``dptx.fft``, against
numpy: creation, casts (numpy's ComplexWarning), arithmetic with arrays and Python complex
scalars, numpy's complex ufuncs, its order of complex values (comparisons, minimum/maximum,
sorts, argmax, max), reductions, real/imag views (written through too), products, and every
transform with numpy's shapes, types, lengths, axes and norms; on the mixed cluster the GPU
worker runs the transforms with its (stand-in) cuFFT."""
import warnings

import numpy as np
import pytest

import dptx

RNG = np.random.default_rng(45)


def _complex(shape, T):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(T)


def _close(got, want, rtol):
    got = got.get() if isinstance(got, dptx.ndarray) else np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("T", [np.complex64, np.complex128])
def test_complex_arrays_follow_numpy(client, T):
    rtol = 3e-5 if T == np.complex64 else 1e-12
    x, y = _complex(40, T), _complex(40, T)
    x[3] = y[3] = 1 + 2j            # equal values: the order's ties
    x[5], y[7] = 2 + 1j, 2 + 5j     # equal real parts
    X, Y = dptx.asarray(x), dptx.asarray(y)
    for got, want in [(X + Y, x + y), (X - 2.5, x - 2.5), (X * Y, x * y), (X / Y, x / y),
                      (X * 2j, x * 2j), (3 / X, 3 / x), (-X, -x), (X ** 2, x ** 2),
                      (X.conj(), x.conj()), (abs(X), abs(x)), (dptx.angle(X), np.angle(x)),
                      (X.sum(), x.sum()), (X[:8].prod(), x[:8].prod()), (X.mean(), x.mean()),
                      (X.cumsum(), x.cumsum()), (X @ Y, x @ y), (dptx.vdot(X, Y), np.vdot(x, y)),
                      (X.astype(np.complex128), x.astype(np.complex128)),
                      (dptx.asarray(np.arange(5)).astype(T), np.arange(5).astype(T)),
                      (dptx.full(3, 1 - 2j, T), np.full(3, 1 - 2j, T)),
                      (dptx.linspace(0, 1 + 1j, 7), np.linspace(0, 1 + 1j, 7)),
                      (dptx.where(X.real > 0, X, 0), np.where(x.real > 0, x, 0)),
                      (X.reshape(5, 8) @ Y.reshape(8, 5), x.reshape(5, 8) @ y.reshape(8, 5))]:
        _close(got, want, rtol)
    for name in ("sqrt", "exp", "log", "log10", "log2", "exp2", "sin", "cos", "tan", "sinh",
                 "cosh", "tanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
                 "square", "reciprocal", "sign"):
        _close(getattr(np, name)(X), getattr(np, name)(x), 10 * rtol)
    for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                 "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_xor"):
        _close(getattr(np, name)(X, Y), getattr(np, name)(x, y), 0)
    special = np.array([np.nan + 1j, 1 + np.nan * 1j, np.inf + 0j, 0j, 1 + 1j], T)
    S = dptx.asarray(special)
    for name in ("isnan", "isinf", "isfinite", "logical_not"):
        _close(getattr(np, name)(S), getattr(np, name)(special), 0)
    with np.errstate(invalid="ignore"):
        for got, want in [(X.max(), x.max()), (X.min(), x.min()), (X.argmax(), x.argmax()),
                          (np.sort(X), np.sort(x)), (np.argsort(X, kind="stable"),
                                                     np.argsort(x, kind="stable")),
                          (np.sort(S), np.sort(special)), (S.max(), special.max()),
                          (dptx.unique(dptx.concatenate([X, X])), np.unique(np.concatenate([x, x]))),
                          (dptx.nan_to_num(S), np.nan_to_num(special))]:
            _close(got, want, 0)

    # real and imag are views, as numpy's: read, and written through
    _close(X.real, x.real, 0)
    _close(np.imag(X), np.imag(x), 0)
    Z, z = dptx.asarray(x), x.copy()
    Z.imag[2:6] = 7
    z.imag[2:6] = 7
    Z.real[::3] *= 2
    z.real[::3] *= 2
    _close(Z, z, 0)
    _close(dptx.iscomplex(X), np.iscomplex(x), 0)
    assert dptx.iscomplexobj(X) and not dptx.iscomplexobj(X.real)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _close(X.astype(np.float64), x.real.astype(np.float64), 0)
    assert any(w.category is np.exceptions.ComplexWarning for w in caught)
    with pytest.raises(TypeError):
        np.bitwise_and(X, X)                    # numpy has no such complex loop


def _standin_transforms(client) -> set:
    def calls():
        from tests.cupy_standin import testing
        return [c[2] for c in testing.calls() if c[0] == "library"]
    workers = client.scheduler_info()["workers"]
    gpu = next(a for a, w in workers.items() if w["name"] == "gpu")
    return set(client.run(calls, workers=[gpu])[gpu])


@pytest.mark.parametrize("T", [np.float32, np.float64])
def test_fft_follows_numpy(client, cluster_kind, T):
    rtol = 2e-4 if T == np.float32 else 1e-10
    C = np.complex64 if T == np.float32 else np.complex128
    x = RNG.standard_normal((6, 40)).astype(T)
    c = _complex((6, 40), C)
    X, Cd = dptx.asarray(x), dptx.asarray(c)
    for got, want in [
            (dptx.fft.fft(X), np.fft.fft(x)), (dptx.fft.fft(Cd, n=50, axis=0),
                                               np.fft.fft(c, n=50, axis=0)),
            (dptx.fft.ifft(Cd, norm="ortho"), np.fft.ifft(c, norm="ortho")),
            (dptx.fft.fft(Cd, n=25, norm="forward"), np.fft.fft(c, n=25, norm="forward")),
            (dptx.fft.rfft(X), np.fft.rfft(x)), (dptx.fft.rfft(X, n=33), np.fft.rfft(x, n=33)),
            (dptx.fft.irfft(Cd), np.fft.irfft(c)), (dptx.fft.irfft(Cd, n=41), np.fft.irfft(c, n=41)),
            (dptx.fft.hfft(Cd[0]), np.fft.hfft(c[0])), (dptx.fft.ihfft(X[0]), np.fft.ihfft(x[0])),
            (dptx.fft.fft2(Cd), np.fft.fft2(c)), (dptx.fft.ifft2(Cd), np.fft.ifft2(c)),
            (dptx.fft.fftn(Cd, s=(4, 32), axes=(0, 1)), np.fft.fftn(c, s=(4, 32), axes=(0, 1))),
            (dptx.fft.ifftn(Cd, axes=(1,)), np.fft.ifftn(c, axes=(1,))),
            (dptx.fft.rfftn(X), np.fft.rfftn(x)), (dptx.fft.rfft2(X), np.fft.rfft2(x)),
            (dptx.fft.irfftn(Cd, s=(6, 40), axes=(0, 1)), np.fft.irfftn(c, s=(6, 40), axes=(0, 1))),
            (dptx.fft.irfft2(Cd), np.fft.irfft2(c)),
            (np.fft.fft(X), np.fft.fft(x)),                      # numpy's own call, dispatched
            (dptx.fft.fftshift(X), np.fft.fftshift(x)),
            (dptx.fft.ifftshift(X, axes=1), np.fft.ifftshift(x, axes=1)),
            (dptx.fft.fftfreq(10, 0.1), np.fft.fftfreq(10, 0.1)),
            (dptx.fft.rfftfreq(9), np.fft.rfftfreq(9))]:
        _close(got, want, rtol)
    _close(dptx.fft.fft(dptx.arange(8)), np.fft.fft(np.arange(8)), 1e-12)   # ints: float64
    with pytest.raises(ValueError, match="Invalid norm"):
        dptx.fft.fft(X, norm="unitary")
    with pytest.raises(ValueError, match="Invalid number of FFT data points"):
        dptx.fft.fft(X, n=0)
    with pytest.raises(TypeError):
        dptx.fft.rfft(Cd)
    if cluster_kind == "mixed":     # the GPU worker ran the ones on its arrays
        assert _standin_transforms(client) & {"fft.fft", "fft.rfft", "fft.fftn", "fft.irfftn"}
