"""GPU and CPU workers together on one launch, side by side from one run (DESIGN.md point 7).

A cluster of one GPU worker and one CPU-only worker (``DPTX_DISABLE_GPU=1``), scheduler plugin
and worker preload as deployed. For each kernel, the makespan of one launch (best of --runs,
after warm-up launches that let the plugin learn each worker's speed):

- balanced: shares in proportion to each worker's measured speed (the default),
- static split: the same share for each worker (``dptx.split = "even"``),
- GPU alone: the CPU worker retired.

Results are checked against the in-process CPU executor every time.

    python benchmarks/coexec.py                 # needs CuPy and an NVIDIA GPU
    python benchmarks/coexec.py --standin       # dry run: the GPU is tests/cupy_standin

With ``--standin`` the "GPU" is the CuPy stand-in of the tests, which runs kernels on this
machine's CPU through dptx's own executor: the run checks that the benchmark and the mixed
cluster work, and its times say nothing about a GPU.
"""
import os as _os
import sys as _sys

# the repository on the import path: the CuPy stand-in lives in tests/
_here = _os.path.dirname(_os.path.abspath(__file__))
_sys.path.insert(0, _os.path.dirname(_here))

import argparse  # noqa: E402
import logging  # noqa: E402
import time  # noqa: E402

import dask.config  # noqa: E402
import numpy as np  # noqa: E402
from distributed import Client, Nanny, Scheduler, SpecCluster  # noqa: E402

import dptx  # noqa: E402
from dptx import cpu  # noqa: E402

SOURCE = r'''
extern "C" __global__ void poly(float* y, int iters) {
    // compute-bound, the same work in every block
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    // memory-bound: what moves between host, workers and the device dominates
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
'''
THREADS = 256


def cluster(standin: bool, cpu_threads: int):
    def worker(env, nthreads):
        return {"cls": Nanny, "options": {"nthreads": nthreads, "preload": ["dptx.worker"],
                                          "env": env, "silence_logs": logging.ERROR}}
    gpu_env = {"DPTX_CUPY_MODULE": "tests.cupy_standin", "DPTX_STANDIN_DEVICES": "1"} \
        if standin else {}
    if standin:  # the stand-in's workers import tests.cupy_standin from the repository
        gpu_env["PYTHONPATH"] = _os.pathsep.join(
            [_os.path.dirname(_here)] + [p for p in [_os.environ.get("PYTHONPATH")] if p])
    return SpecCluster(
        workers={"gpu": worker(gpu_env, 1), "cpu": worker({"DPTX_DISABLE_GPU": "1"}, cpu_threads)},
        scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0",
                                                 "preload": ["scheduler_plugins"]}},
        silence_logs=logging.ERROR)


def timed(run, check, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - t0)
        check(out)
    return best


def workloads(module, blocks: int, iters: int, n: int):
    """(name, description, run() -> result, reference) per kernel; data on the cluster first."""
    poly, saxpy = module.get_function("poly"), module.get_function("saxpy")
    y = dptx.zeros(blocks * THREADS, np.float32)
    ref_y = np.zeros(blocks * THREADS, np.float32)
    cpu.launch(poly, (blocks,), (THREADS,), (ref_y, np.int32(iters)))

    def run_poly():
        poly((blocks,), (THREADS,), (y, np.int32(iters)))
        return y.get()

    rng = np.random.default_rng(0)
    x_host = rng.random(n, dtype=np.float32)
    y_host = rng.random(n, dtype=np.float32)
    x = dptx.asarray(x_host)

    def run_saxpy():
        # y starts over from the same bytes each run (a device-to-device copy)
        out = dptx.asarray(y_host)
        saxpy(((n + THREADS - 1) // THREADS,), (THREADS,), (np.float32(2.0), x, out, np.int32(n)))
        return out.get()
    ref_saxpy = np.float32(2.0) * x_host + y_host
    return [("poly", f"{blocks} blocks x {THREADS} threads x {iters} iterations", run_poly, ref_y),
            ("saxpy", f"{n} floats", run_saxpy, ref_saxpy)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--standin", action="store_true",
                    help="dry run without a GPU: the GPU worker uses tests/cupy_standin")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cpu-threads", type=int, default=max(1, (_os.cpu_count() or 2) - 1),
                    help="threads of the CPU worker")
    ap.add_argument("--blocks", type=int, default=None)
    ap.add_argument("--iters", type=int, default=None)
    ap.add_argument("--n", type=int, default=None, help="saxpy length")
    args = ap.parse_args()
    small = args.standin
    blocks = args.blocks or (128 if small else 8192)
    iters = args.iters or (2000 if small else 20000)
    n = args.n or ((1 << 20) if small else (1 << 26))

    for name in ("distributed", "distributed.core"):       # retiring a worker is no news
        logging.getLogger(name).setLevel(logging.ERROR)
    module = dptx.RawModule(SOURCE)
    rows, learned = {}, {}
    with cluster(args.standin, args.cpu_threads) as c, Client(c, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        dptx.connect(client)
        try:
            info = client.scheduler_info()["workers"]
            by_name = {w["name"]: a for a, w in info.items()}
            devices = client.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.plugins["dptx"].state()["workers"])
            gpu = devices[by_name["gpu"]]
            if not gpu.get("gpus"):
                raise SystemExit(f"the GPU worker has no GPU: {gpu.get('gpu_error')} "
                                 f"(--standin runs without one)")
            print(f"GPU worker: {', '.join(gpu['gpus'])}; CPU worker: {args.cpu_threads} "
                  f"thread(s)" + ("  [STAND-IN: the 'GPU' is this CPU; times are not a GPU's]"
                                  if args.standin else ""))
            loads = workloads(module, blocks, iters, n)
            for name, _, run, ref in loads:
                for _ in range(4):                      # compile everywhere, learn the speeds
                    run()
                check = _checker(name, ref)
                rows[name] = {"balanced": timed(run, check, args.runs)}
                learned[name] = client.run_on_scheduler(
                    lambda dask_scheduler: dask_scheduler.plugins["dptx"].state()["workers"])
                with dask.config.set({"dptx.split": "even"}):
                    rows[name]["static split"] = timed(run, check, args.runs)
            client.retire_workers([by_name["cpu"]])
            for name, _, run, ref in loads:
                rows[name]["GPU alone"] = timed(run, _checker(name, ref), args.runs)
            if args.standin:        # what the stand-in's "GPU" ran, by kernel
                def ran():
                    from collections import Counter
                    from tests.cupy_standin import testing
                    return Counter(r["kernel"] for r in testing.launches())
                print("  stand-in GPU launches:", dict(client.run(ran)[by_name["gpu"]]))
        finally:
            dptx.shutdown()

    print(f"{'kernel':<8}{'balanced (s)':>14}{'static split':>14}{'GPU alone':>12}"
          f"   static/balanced  GPU alone/balanced")
    for name, desc, _, _ in loads:
        r = rows[name]
        print(f"{name:<8}{r['balanced']:>14.4f}{r['static split']:>14.4f}{r['GPU alone']:>12.4f}"
              f"   {r['static split'] / r['balanced']:>15.2f}  {r['GPU alone'] / r['balanced']:>18.2f}"
              f"   ({desc})")
    for name, _, _, _ in loads:
        parts = []
        for label in ("gpu", "cpu"):
            k = learned[name].get(by_name[label], {}).get("kernels", {}).get(name, {})
            parts.append(f"{label} {k.get('blocks_per_s') or 0:.0f} blocks/s, "
                         f"share {k.get('share', 0):.3f}")
        print(f"  {name}, balanced: " + "; ".join(parts))


def _checker(name, ref):
    def check(out):
        if not np.allclose(out, ref, rtol=1e-5, atol=1e-5):
            bad = int(np.flatnonzero(~np.isclose(out, ref, rtol=1e-5, atol=1e-5))[0])
            raise SystemExit(f"{name}: wrong result at element {bad}: {out[bad]} != {ref[bad]}")
    return check


if __name__ == "__main__":
    main()
