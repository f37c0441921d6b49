"""A soak run (issue 20): mixed launches, copies and array operations on the embedded
cluster while a worker process is killed (and restarted by its nanny) every few seconds.
Every result is checked bitwise against the same operations done with numpy; the memory of
the client and of the workers is sampled. Bounded in minutes.

    python benchmarks/soak.py [--minutes 2] [--kill-every 8] [--workers 3] [--n 1000000]
                              [--copies 1] [--amm-interval 2s]

Exits non-zero on any mismatch or error other than ``DataLostError``: a worker killed after
it made the only copy of an array's current version loses that version (Dask cannot compute
it again once the versions it came from are released); that is counted, said clearly, and
the run goes on from the host's copies. ``--copies 2`` (``dptx.result-copies``) keeps a
second copy of every version that lives an Active Memory Manager round (``--amm-interval``). Integer data only, so that "bitwise" is exact
whatever order a reduction takes.
"""
from __future__ import annotations

import os as _os

import argparse  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

KERNELS = r'''
extern "C" __global__ void add3(const int* a, const int* b, int* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + 3 * b[i];
}
extern "C" __global__ void smooth(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int l = i > 0 ? a[i - 1] : 0, r = i + 1 < n ? a[i + 1] : 0;
    b[i] = (l + 2 * a[i] + r) >> 2;
}
'''


def rss() -> int:
    import psutil
    return psutil.Process().memory_info().rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=2.0)
    ap.add_argument("--kill-every", type=float, default=8.0, help="seconds between kills")
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", default="0,1,2,3,4,5,6",
                    help="the kinds of operation to mix (0 launch, 1 stencil launch, 2 array "
                         "API, 3 slice assignment, 4 upload, 5 copy, 6 sum)")
    ap.add_argument("--copies", type=int, default=1,
                    help="dptx.result-copies: 2 keeps a second copy of every array's pieces")
    ap.add_argument("--amm-interval", default="2s",
                    help="how often Dask's Active Memory Manager makes the copies")
    args = ap.parse_args()
    _os.environ.setdefault("DASK_DPTX__RESULT_COPIES", str(args.copies))
    _os.environ.setdefault("DASK_DISTRIBUTED__SCHEDULER__ACTIVE_MEMORY_MANAGER__INTERVAL",
                           args.amm_interval)
    _os.environ.setdefault("DASK_DPTX__LOCAL__N_WORKERS", str(args.workers))
    _os.environ.setdefault("DASK_DPTX__LOCAL__THREADS_PER_WORKER", "1")
    import dptx

    rng = random.Random(args.seed)
    kinds = [int(k) for k in args.ops.split(",")]
    data = np.random.default_rng(args.seed)
    n = args.n
    mod = dptx.RawModule(KERNELS)
    add3, smooth = mod.get_function("add3"), mod.get_function("smooth")
    host = [data.integers(-1000, 1000, n).astype(np.int32) for _ in range(3)]
    dev = [dptx.asarray(h) for h in host]
    client = dptx.client()
    stop = threading.Event()
    kills = []

    def killer():
        while not stop.wait(args.kill_every):
            try:
                pids = client.run(_os.getpid)
            except Exception:       # noqa: BLE001 - a worker mid-restart: try next time
                continue
            if len(pids) < 2:
                continue            # keep one alive: the point is recovery, not an outage
            victim = rng.choice(sorted(pids))
            _os.kill(pids[victim], signal.SIGKILL)
            kills.append(time.monotonic())

    def op(k: int):
        i, j, o = rng.sample(range(3), 3)
        grid = ((n + 255) // 256,)
        if k == 0:                           # c = a + 3b (a launch)
            add3(grid, (256,), (dev[i], dev[j], dev[o], np.int32(n)))
            host[o] = host[i] + 3 * host[j]
        elif k == 1:                         # a stencil (reads neighbours across chunks)
            smooth(grid, (256,), (dev[i], dev[o], np.int32(n)))
            # in 32-bit arithmetic that wraps, as the kernel's (values grow through op 2)
            padded = np.concatenate([[0], host[i], [0]]).astype(np.int32)
            host[o] = (padded[:-2] + np.int32(2) * padded[1:-1] + padded[2:]) >> 2
        elif k == 2:                         # the array API, elementwise (wraps as numpy does)
            dev[o] = dev[i] * 3 - dev[j]
            host[o] = host[i] * np.int32(3) - host[j]
        elif k == 3:                         # a device-to-device slice assignment
            a = rng.randrange(n // 2)
            dev[o][a:a + n // 4] = dev[i][n // 2:n // 2 + n // 4]
            host[o][a:a + n // 4] = host[i][n // 2:n // 2 + n // 4]
        elif k == 4:                         # an upload of new data
            fresh = data.integers(-1000, 1000, n).astype(np.int32)
            dev[o].set(fresh)
            host[o] = fresh
        elif k == 5:                         # a copy
            dev[o] = dev[i].copy()
            host[o] = host[i].copy()
        elif k == 6:                         # a reduction, checked at once
            got = int(dev[i].astype(np.int64).sum())
            if got != int(host[i].astype(np.int64).sum()):
                raise AssertionError(f"sum of array {i}: {got} != {host[i].astype(np.int64).sum()}")

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    t0 = time.monotonic()
    ops = checks = 0
    samples = {"client": []}
    failures = []
    lost = 0
    try:
        while time.monotonic() - t0 < args.minutes * 60:
            try:
                op(rng.choice(kinds))
                ops += 1
                if ops % 10 == 0:
                    for k in range(3):
                        if not np.array_equal(dev[k].get(), host[k]):
                            failures.append(f"array {k} differs after {ops} operations")
                    checks += 1
            except dptx.DataLostError:
                # a worker died with the only copy of a result: said so, never a wrong
                # value; start again from the host's copies (every array: the failed
                # operation left some as they were before it)
                lost += 1
                dev = [dptx.asarray(h) for h in host]
                continue
            if ops % 10 == 0:
                samples["client"].append(rss())
                try:
                    for w, r in client.run(rss).items():
                        samples.setdefault(w, []).append(r)
                except Exception:   # noqa: BLE001 - a worker mid-restart
                    pass
            if failures:
                break
    except Exception as exc:        # noqa: BLE001 - reported below, exit status 1
        failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        stop.set()
    elapsed = time.monotonic() - t0
    print(f"soak: {elapsed:.0f} s, {ops} operations ({ops / elapsed:.1f}/s), {checks} bitwise "
          f"checks of 3 arrays of {n} int32, {len(kills)} worker kills (every "
          f"{args.kill_every:g} s), {lost} DataLostError (arrays made again from the host), "
          f"{len(failures)} failures (wrong values or other errors)")
    mib = 1 << 20
    c = samples["client"]
    if c:
        print(f"client RSS: first {c[0] / mib:.0f} MiB, max {max(c) / mib:.0f} MiB, "
              f"last {c[-1] / mib:.0f} MiB")
    workers = [v for k, v in samples.items() if k != "client" and v]
    if workers:
        print(f"worker RSS ({len(workers)} processes seen): max "
              f"{max(max(v) for v in workers) / mib:.0f} MiB; last of each "
              + ", ".join(f"{v[-1] / mib:.0f}" for v in workers) + " MiB")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
