"""The array API on the embedded cluster against numpy on this machine, side by side from one
run (issue 19): ``a * 2 + b`` and ``np.sqrt(a * a + b * b)`` (each also through ``dptx.fuse``)
and ``a.sum()`` on 16M float32, row sums of the same data as (n/128, 128) and (n/8192, 8192),
a concatenation along the second axis (strided writes), a running sum, a boolean selection,
a sort of a quarter of the data (against numpy's default and stable sorts), a 1024 x 1024
float32 matmul, and the library routines (issue 45: matmul 2048 x 2048 in float32 and
float64, ``linalg.solve``/``svd``/``eigh`` of 1000 x 1000, an FFT of 2^22 complex64, on the
devices' libraries, with dptx's own kernels beside for the matmul and the svd:
``dptx.library = "kernels"``); under the sum, the floors Dask itself puts there (its round
trips with no work, each graph in one message: one task, a task per worker, the sum's graph).
Each dptx expression is timed to its result being complete on the devices
(``dptx.synchronize()``), not to reading it back; the best of several runs, dptx and numpy
interleaved. Results are checked against numpy.

    python benchmarks/arrays.py [--n 16777216] [--only linalg]
"""
from __future__ import annotations


import argparse
import time

import numpy as np

import dptx


def best(fn, repeat=7):
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _nothing(i):
    return i


def _combine(*parts):
    return sum(parts)


def _numpy_sum(part):
    return part.sum()


def dask_floors(a):
    """Runs of task graphs, each sent in one message (as dptx sends a launch) and waited for.
    With tasks that compute nothing (Dask's round trips alone): one task; a task per worker
    (the least a launch over data held by every worker can be); that, then one task on the
    first worker combining their results (a sum's graph). Then the sum's graph with numpy's
    own sum of each worker's share of ``a`` (scattered there first) in place of dptx's
    kernel: the best a sum through Dask can do here."""
    import dask
    from distributed import wait

    from dptx.runtime.cluster import get_client
    client = get_client()
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])

    def task(fn, *args, worker):
        with dask.annotate(workers=[worker], allow_other_workers=False):
            return dask.delayed(fn, pure=False)(*args)

    shares = [client.scatter(share, workers=[w])
              for share, w in zip(np.array_split(a, len(workers)), workers)]

    def per_worker():
        return [task(_nothing, i, worker=w) for i, w in enumerate(workers)]
    return [("  Dask alone: 1 task", lambda: wait(client.compute(
                task(_nothing, 0, worker=workers[0])))),
            ("  Dask alone: per worker", lambda: wait(client.compute(per_worker()))),
            ("  Dask alone: sum's graph", lambda: wait(client.compute(
                task(_combine, *per_worker(), worker=workers[0])))),
            ("  Dask + numpy's sums", lambda: wait(client.compute(task(
                _combine, *[task(_numpy_sum, s, worker=w) for s, w in zip(shares, workers)],
                worker=workers[0]))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 24)
    ap.add_argument("--only", choices=["linalg"], default=None,
                    help="only the library routines")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    if args.only == "linalg":
        report(library_rows(rng), "library routines")
        return
    a, b = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    da, db = dptx.asarray(a), dptx.asarray(b)
    rows = []

    def dptx_run(expr):
        def run():
            r = expr()
            dptx.synchronize()
            return r
        return run

    axpb = dptx.fuse(lambda x, y: x * 2 + y)
    hyp = dptx.fuse(lambda x, y: np.sqrt(x * x + y * y))
    cases = [
        ("a * 2 + b", lambda x, y: x * 2 + y),
        ("  fused", lambda x, y: axpb(x, y) if isinstance(x, dptx.ndarray) else x * 2 + y),
        ("np.sqrt(a*a + b*b)", lambda x, y: np.sqrt(x * x + y * y)),
        ("  fused", lambda x, y: hyp(x, y) if isinstance(x, dptx.ndarray) else np.sqrt(x * x + y * y)),
        ("a.sum()", lambda x, y: x.sum()),
    ]
    for name, f in cases:
        got = f(da, db)
        want = f(a, b)
        np.testing.assert_allclose(np.asarray(got.get() if isinstance(got, dptx.ndarray) else got),
                                   want, rtol=1e-5 if name != "a.sum()" else 1e-4)
        rows.append((name, best(dptx_run(lambda: f(da, db))), best(lambda: f(a, b))))
    # the floors under a.sum() here: Dask alone running graphs that compute nothing (one task,
    # a task per worker, the sum's graph), then the sum's graph with numpy's sums of the
    # workers' shares, each against numpy's whole sum
    for name, run in dask_floors(a):
        rows.append((name, best(run, repeat=15), best(lambda: a.sum())))
    # reductions to many outputs: a warp per row (short rows), a block per row (long ones)
    for nrows, ncols in ((args.n // 128, 128), (args.n // 8192, 8192)):
        if nrows == 0 or args.n % ncols:
            continue        # (a --n too small or not a multiple for these shapes)
        host, dev = a.reshape(nrows, ncols), da.reshape(nrows, ncols)
        np.testing.assert_allclose(dev.sum(axis=1).get(), host.sum(axis=1), rtol=1e-4)
        rows.append((f"sum(axis=1) {nrows}x{ncols}", best(dptx_run(lambda: dev.sum(axis=1))),
                     best(lambda: host.sum(axis=1))))
    # strided views and data-dependent sizes: the same data as a square
    side = int(np.sqrt(args.n))
    sq, dsq = a[:side * side].reshape(side, side), da[:side * side].reshape(side, side)
    mask, dmask = a > 0.5, da > 0.5
    more = [
        (f"concatenate axis=1 {side}^2", lambda: dptx.concatenate([dsq, dsq], axis=1),
         lambda: np.concatenate([sq, sq], axis=1)),
        ("a.cumsum()", lambda: da.cumsum(), lambda: a.cumsum()),
        ("a[a > 0.5]", lambda: da[dmask], lambda: a[mask]),
    ]
    for name, dev_run, host_run in more:
        np.testing.assert_allclose(dev_run().get(), host_run(), rtol=1e-3)
        rows.append((name, best(dptx_run(dev_run), repeat=3), best(host_run, repeat=3)))
    # a sort (a stable merge sort on the devices): against numpy's default sort and its
    # stable one (the same values; numpy's default is not stable)
    q = args.n // 4
    part, dpart = a[:q], da[:q]
    np.testing.assert_array_equal(np.sort(dpart).get(), np.sort(part))
    t_sort = best(dptx_run(lambda: np.sort(dpart)), repeat=3)
    rows.append((f"np.sort(a[:{q}])", t_sort, best(lambda: np.sort(part), repeat=3)))
    rows.append(("  numpy kind='stable'", t_sort,
                 best(lambda: np.sort(part, kind="stable"), repeat=3)))
    m = 1024
    A, B = rng.random((m, m), dtype=np.float32), rng.random((m, m), dtype=np.float32)
    dA, dB = dptx.asarray(A), dptx.asarray(B)
    np.testing.assert_allclose((dA @ dB).get(), A @ B, rtol=1e-4)
    rows.append((f"matmul {m}x{m} f32", best(dptx_run(lambda: dA @ dB), repeat=3),
                 best(lambda: A @ B, repeat=3)))
    rows.extend(library_rows(rng))
    report(rows, f"{args.n} float32 elements")


def report(rows, what: str) -> None:
    print(f"dptx array API on the embedded cluster vs numpy, {what}; best of runs")
    print(f"{'expression':<28}{'dptx (ms)':>11}{'numpy (ms)':>12}{'dptx/numpy':>12}")
    for name, d, n in rows:
        print(f"{name:<28}{d * 1e3:>11.1f}{n * 1e3:>12.1f}{d / n:>12.2f}")


def library_rows(rng) -> list:
    """numpy's linear algebra on the devices' libraries (one task on the worker holding the
    operands: numpy's BLAS/LAPACK there), the operands on the devices already; the matmul and
    the svd through dptx's own kernels too. Results checked against numpy."""
    import dask.config

    def timed(expr, repeat=3):
        def run():
            r = expr()
            dptx.synchronize()
            return r
        return best(run, repeat=repeat)

    rows = []
    m = 2048
    for T in (np.float32, np.float64):
        A, B = rng.random((m, m)).astype(T), rng.random((m, m)).astype(T)
        dA, dB = dptx.asarray(A), dptx.asarray(B)
        np.testing.assert_allclose((dA @ dB).get(), A @ B, rtol=1e-4 if T == np.float32 else 1e-10)
        rows.append((f"matmul {m}x{m} {np.dtype(T).name}", timed(lambda: dA @ dB),
                     best(lambda: A @ B, repeat=3)))
    n = 1000
    a = rng.standard_normal((n, n))
    spd = a @ a.T + n * np.eye(n)
    b = rng.standard_normal((n, 1))
    da, dspd, db = dptx.asarray(a), dptx.asarray(spd), dptx.asarray(b)
    np.testing.assert_allclose(dptx.linalg.solve(da, db).get(), np.linalg.solve(a, b), rtol=1e-8)
    np.testing.assert_allclose(dptx.linalg.svd(da, compute_uv=False).get(),
                               np.linalg.svd(a, compute_uv=False), rtol=1e-9)
    np.testing.assert_allclose(dptx.linalg.eigh(dspd)[0].get(), np.linalg.eigh(spd)[0],
                               rtol=1e-9)
    rows.append((f"linalg.solve {n}x{n}", timed(lambda: dptx.linalg.solve(da, db)),
                 best(lambda: np.linalg.solve(a, b), repeat=3)))
    rows.append((f"linalg.svd {n}x{n}", timed(lambda: dptx.linalg.svd(da), repeat=2),
                 best(lambda: np.linalg.svd(a), repeat=2)))
    rows.append((f"linalg.eigh {n}x{n}", timed(lambda: dptx.linalg.eigh(dspd), repeat=2),
                 best(lambda: np.linalg.eigh(spd), repeat=2)))
    z = (rng.standard_normal(1 << 22) + 1j * rng.standard_normal(1 << 22)).astype(np.complex64)
    dz = dptx.asarray(z)
    np.testing.assert_allclose(dptx.fft.fft(dz).get(), np.fft.fft(z), rtol=1e-3, atol=1e-2)
    rows.append(("fft 2^22 complex64", timed(lambda: dptx.fft.fft(dz)),
                 best(lambda: np.fft.fft(z), repeat=3)))
    with dask.config.set({"dptx.library": "kernels"}):
        k = 1024
        A = rng.random((k, k)).astype(np.float32)
        dA = dptx.asarray(A)
        rows.append((f"  kernels: matmul {k} f32", timed(lambda: dA @ dA), best(lambda: A @ A)))
        s = 300
        small = rng.standard_normal((s, s))
        ds = dptx.asarray(small)
        rows.append((f"  kernels: svd {s}x{s}", timed(lambda: dptx.linalg.svd(ds), repeat=1),
                     best(lambda: np.linalg.svd(small), repeat=3)))
    return rows


if __name__ == "__main__":
    main()
