"""numpy's linear algebra as library routines (``dptx.library = "device"``, the default): one
task on the worker holding the operands, run there with its device's library (numpy's LAPACK
and BLAS on a CPU worker; CuPy's, the stand-in's here, on the GPU worker), results as numpy
gives them; numpy's LinAlgError at the call; the setting checked."""
import dask.config
import numpy as np
import pytest

import dptx

RNG = np.random.default_rng(45)


def _on(client, name: str):
    """The address of the worker called ``name`` ("gpu" on the mixed cluster), or of any."""
    workers = client.scheduler_info()["workers"]
    return next((a for a, w in workers.items() if w["name"] == name), sorted(workers)[0])


def _placed(host: np.ndarray, worker: str):
    """A device array of ``host`` whose one piece the client expects on ``worker`` (small
    uploads go to the workers in turn)."""
    for _ in range(8):
        a = dptx.asarray(host)
        if a._buffer.pieces.pieces[0].worker == worker:
            return a
    raise AssertionError(f"no upload landed on {worker}")


def _library_calls(client, worker: str) -> list:
    def calls():
        try:
            from tests.cupy_standin import testing
        except ImportError:
            return []
        return [c for c in testing.calls() if c[0] == "library"]
    return client.run(calls, workers=[worker])[worker]


def _close(got, want, T):
    rtol = 2e-4 if T == np.float32 else 1e-9
    np.testing.assert_allclose(got.get(), want, rtol=rtol, atol=rtol * max(1.0, np.abs(want).max()))


@pytest.mark.parametrize("T", [np.float64, np.float32])
def test_routines_follow_numpy_where_the_operands_live(client, cluster_kind, T):
    worker = _on(client, "gpu")
    before = len(_library_calls(client, worker))
    a = RNG.standard_normal((40, 40)).astype(T)
    spd = (a @ a.T + 40 * np.eye(40)).astype(T)
    tall = RNG.standard_normal((50, 30)).astype(T)
    b = RNG.standard_normal((40, 3)).astype(T)
    A, S, W, B = (_placed(x, worker) for x in (a, spd, tall, b))
    stack = RNG.standard_normal((3, 20, 20)).astype(T)
    D = _placed(stack, worker)

    for got, want in [(A @ B, a @ b), (D @ D, stack @ stack), (W.T @ W, tall.T @ tall),
                      (dptx.linalg.solve(A, B), np.linalg.solve(a, b)),
                      (dptx.linalg.solve(A, B[:, 0]), np.linalg.solve(a, b[:, 0])),
                      (dptx.linalg.solve(D, D[0]), np.linalg.solve(stack, stack[0])),
                      (dptx.linalg.inv(A), np.linalg.inv(a)),
                      (dptx.linalg.det(A), np.linalg.det(a)),
                      (dptx.linalg.det(D), np.linalg.det(stack)),
                      (dptx.linalg.cholesky(S), np.linalg.cholesky(spd)),
                      (dptx.linalg.cholesky(S, upper=True), np.linalg.cholesky(spd).T),
                      (dptx.linalg.eigvalsh(S), np.linalg.eigvalsh(spd)),
                      (dptx.linalg.eigvalsh(S, UPLO="U"), np.linalg.eigvalsh(spd, UPLO="U")),
                      (dptx.linalg.svd(W, compute_uv=False), np.linalg.svd(tall, compute_uv=False))]:
        assert got.dtype == want.dtype and got.shape == np.shape(want)
        _close(got, want, T)
    sign, logdet = dptx.linalg.slogdet(A)
    want = np.linalg.slogdet(a)
    assert sign.get() == want.sign
    _close(logdet, want.logabsdet, T)

    # factorizations: numpy's factors (the same LAPACK on a CPU worker), up to rounding
    w, v = dptx.linalg.eigh(S)
    _close(w, np.linalg.eigh(spd).eigenvalues, T)
    _close(v @ dptx.asarray(np.diag(w.get())) @ v.T, spd, T)
    for full in (True, False):
        u, s, vh = dptx.linalg.svd(W, full_matrices=full)
        want = np.linalg.svd(tall, full_matrices=full)
        assert (u.shape, s.shape, vh.shape) == (want.U.shape, want.S.shape, want.Vh.shape)
        _close(s, want.S, T)
        k = s.shape[0]
        _close((u[:, :k] * s) @ vh[:k], tall, T)
    for mode in ("reduced", "complete"):
        q, r = dptx.linalg.qr(W, mode=mode)
        want = np.linalg.qr(tall, mode=mode)
        assert (q.shape, r.shape) == (want.Q.shape, want.R.shape)
        _close(q @ r, tall, T)
        _close(q.T @ q, np.eye(q.shape[1]), T)
    assert dptx.linalg.qr(W, mode="r").shape == np.linalg.qr(tall, mode="r").shape

    if cluster_kind == "mixed":     # the GPU worker ran them with its (stand-in) library
        ran = {c[2] for c in _library_calls(client, worker)[before:]}
        assert {"matmul", "linalg.solve", "linalg.inv", "linalg.det", "linalg.slogdet",
                "linalg.cholesky", "linalg.eigh", "linalg.eigvalsh", "linalg.svd",
                "linalg.qr"} <= ran, ran


def test_a_routine_numpy_refuses_raises_numpys_error_at_the_call(client):
    singular = dptx.asarray(np.ones((4, 4)))
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        dptx.linalg.inv(singular)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        dptx.linalg.solve(singular, dptx.ones(4))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        dptx.linalg.cholesky(dptx.asarray(-np.eye(3)))
    assert float(dptx.linalg.det(singular).get()) == 0.0      # (det never fails)
    with pytest.raises(np.linalg.LinAlgError):
        dptx.linalg.svd(dptx.ones(3))                          # numpy's argument checks first
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        dptx.ones((3, 4)) @ dptx.ones((3, 4))


def test_the_setting_picks_the_path(client):
    a = RNG.standard_normal((24, 24))
    with dask.config.set({"dptx.library": "kernels"}):
        from dptx.runtime import library_call
        assert not library_call.enabled()
        np.testing.assert_allclose(dptx.linalg.inv(dptx.asarray(a)).get(), np.linalg.inv(a),
                                   rtol=1e-8, atol=1e-10)
    with dask.config.set({"dptx.library": "lapack"}):
        with pytest.raises(ValueError, match="dptx.library is 'lapack'"):
            dptx.linalg.inv(dptx.asarray(a))


def test_a_large_product_is_split_by_the_rows_each_worker_holds(client, monkeypatch):
    """A product whose first operand lies on both workers: each computes the rows it holds
    (the second operand comes to it whole), and the result's rows stay where they were
    made."""
    from dptx.runtime import library_call
    monkeypatch.setattr(library_call, "SPLIT_FROM", 1)
    a, b = RNG.standard_normal((300, 200)), RNG.standard_normal((200, 50))
    A = dptx.asarray(a)         # (480 kB: spread over the workers)
    assert len({p.worker for p in A._buffer.pieces.pieces}) == 2
    C = A @ dptx.asarray(b)
    holders = [p.worker for p in C._buffer.pieces.pieces]
    assert len(holders) == 2 and len(set(holders)) == 2
    np.testing.assert_allclose(C.get(), a @ b, rtol=1e-10)
    np.testing.assert_allclose((A[10:250] @ dptx.asarray(b)).get(), a[10:250] @ b, rtol=1e-10)
