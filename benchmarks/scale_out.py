"""Scale-out on an emulated cluster of 1 to 32 nodes: speed-up, efficiency and METG tables
and a plot, from one run.

Each node is a network namespace with one single-thread ``dask worker --preload dptx.worker``
and a link shaped by ``tc`` (benchmarks/emulated_cluster.py); the scheduler is the real
``dask scheduler --preload scheduler_plugins``. Compute that 2 cores cannot run for 32 nodes
at once is modelled by time: thread 0 of a block ``__nanosleep``s the block's cost (the CPU
executor sleeps without using the core). Every result is checked against numpy.

Workloads:
  uniform     4,096 blocks of 2 ms each
  jacobi      2-D 5-point Jacobi, 20 iterations, halos exchanged over the links, each block
              modelling its sweep at a node's memory bandwidth (the real stencil runs too)
  triangular  block b costs in proportion to b + 1/2 (mean 1 ms): balanced by the plugin
  overhead    launches of empty blocks in 2 chunks per node: CPU per chunk, scheduler and workers
  metg        the smallest chunk duration at which efficiency is >= 50% (at 8 and 32 nodes)
  hetero      a quarter of the nodes 4 times faster (dptx.nanosleep-scale = 0.25 there)

    sudo python benchmarks/scale_out.py [--nodes 1,2,4,8,16,32] [--rate 10gbit]
        [--delay-us 50] [--workloads uniform,jacobi,...] [--plot scale_out.png] [--quick]
    python benchmarks/scale_out.py --scheduler tcp://HOST:8786     # a real cluster
    sudo python benchmarks/scale_out.py --cleanup     # what a killed run left behind
"""
import os as _os

_HERE = _os.path.dirname(_os.path.abspath(__file__))
import argparse
import importlib.util
import math
import time

import dask.config
import numpy as np
from distributed import Client

import dptx
from dptx import cpu


def _load_emulation():
    spec = importlib.util.spec_from_file_location(
        "emulated_cluster", _os.path.join(_HERE, "emulated_cluster.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


emulation = _load_emulation()

SOURCE = r'''
// Compute modelled by time: thread 0 of the block sleeps ns (nanosleep's longest sleep is
// 1 ms, so in steps); the other threads go on to the block's real (small) work.
__device__ void model(unsigned long long ns) {
    if (threadIdx.x == 0 && threadIdx.y == 0)
        while (ns > 0) {
            unsigned step = ns > 1000000ull ? 1000000u : (unsigned)ns;
            __nanosleep(step);
            ns -= step;
        }
}
__device__ void fill(float* out, unsigned long long ns) {
    model(ns);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 0.5f * i + 1.0f;
}
extern "C" __global__ void uniform(float* out, unsigned long long ns) { fill(out, ns); }
// the overhead and METG sweeps have kernels of their own: the plugin learns a speed per
// kernel, and blocks of another cost under the same name would teach it wrong ones
extern "C" __global__ void empty(float* out, unsigned long long ns) { fill(out, ns); }
extern "C" __global__ void step(float* out, unsigned long long ns) { fill(out, ns); }
extern "C" __global__ void triangular(float* out, unsigned long long mean_ns) {
    // block b costs mean * (2b + 1) / nblocks: a triangle along the grid
    model(mean_ns * (2ull * blockIdx.x + 1) / gridDim.x);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 2.0f * i - 3.0f;
}
extern "C" __global__ void jacobi(const float* u, float* v, int n, unsigned long long ns) {
    // one sweep of the 5-point Jacobi stencil; the border keeps its values
    model(ns);
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= n || y >= n) return;
    int i = y * n + x;
    if (x == 0 || y == 0 || x == n - 1 || y == n - 1) v[i] = u[i];
    else v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - n] + u[i + n]);
}
'''
UNIFORM_BLOCKS, UNIFORM_NS = 4096, 2_000_000
TRIANGLE_BLOCKS, TRIANGLE_MEAN_NS = 4096, 1_000_000
THREADS = 64
JACOBI_BLOCK = (32, 8)
METG_BLOCK_NS = 250_000                 # an OS sleep: the core stays free
METG_BLOCKS_PER_NODE = (1, 2, 4, 8, 16, 32, 64, 128)
METG_STEPS = 8                          # launches back to back per measurement
HETERO_FAST, HETERO_SPEED = 4, 4.0      # every 4th node runs 4 times faster
LEARN = 5                               # launches the plugin learns from before timing


class Workloads:
    """The workloads on one connected cluster of ``n`` nodes (results checked each time)."""

    def __init__(self, n: int, opts, client):
        self.n, self.opts, self.client = n, opts, client
        self.module = dptx.RawModule(SOURCE)
        self.k = {name: self.module.get_function(name) for name in
                  ("uniform", "empty", "step", "triangular", "jacobi")}

    def scheduler_cpu(self) -> float:
        return self.client.run_on_scheduler(process_cpu_seconds)

    def workers_cpu(self) -> float:
        return sum(self.client.run(process_cpu_seconds).values())

    def timed(self, launch, check, learn: int = LEARN, repeat: int = 2) -> dict:
        """Best of ``repeat`` runs of ``launch()`` + synchronize, after ``learn`` runs (the
        result checked after the first); the scheduler's CPU seconds per timed run beside
        it, and the tasks of a run."""
        for k in range(learn if self.n > 1 else 1):
            launch()
            dptx.synchronize()
            if k == 0:
                check()
        best, chunks = math.inf, 0
        cpu0, wcpu0 = self.scheduler_cpu(), self.workers_cpu()
        for _ in range(repeat):
            t0 = time.perf_counter()
            handles = launch()
            dptx.synchronize()
            best = min(best, time.perf_counter() - t0)
            chunks = sum(len(h.futures) for h in handles)
        sched = (self.scheduler_cpu() - cpu0) / repeat
        workers = (self.workers_cpu() - wcpu0) / repeat
        return {"seconds": best, "scheduler_cpu": sched, "workers_cpu": workers,
                "tasks": chunks}

    def uniform(self, blocks=None, ns=None, repeat: int = 2, kernel: str = "uniform") -> dict:
        blocks = blocks or self.opts.uniform_blocks
        ns = UNIFORM_NS if ns is None else ns
        out = dptx.zeros(blocks * THREADS, np.float32)
        want = 0.5 * np.arange(blocks * THREADS, dtype=np.float32) + np.float32(1)

        def check():
            assert np.array_equal(out.get(), want), "uniform: a wrong result"
        return self.timed(lambda: [self.k[kernel]((blocks,), (THREADS,),
                                                  (out, np.uint64(ns)))], check, repeat=repeat)

    def triangular(self) -> dict:
        blocks = self.opts.triangle_blocks
        out = dptx.zeros(blocks * THREADS, np.float32)
        want = 2 * np.arange(blocks * THREADS, dtype=np.float32) - np.float32(3)

        def check():
            assert np.array_equal(out.get(), want), "triangular: a wrong result"
        return self.timed(lambda: [self.k["triangular"](
            (blocks,), (THREADS,), (out, np.uint64(TRIANGLE_MEAN_NS)))], check)

    def jacobi(self) -> dict:
        n, iters = self.opts.jacobi_size, self.opts.jacobi_iterations
        bx, by = JACOBI_BLOCK
        grid = ((n + bx - 1) // bx, (n + by - 1) // by)
        # a block reads and writes its points once: 8 bytes each, at the node's bandwidth
        ns = np.uint64(bx * by * 8 * 1e9 / self.opts.jacobi_bandwidth)
        start = np.random.default_rng(7).random((n, n), dtype=np.float32)
        want = reference_jacobi(start, iters)
        u, v = dptx.asarray(start), dptx.zeros((n, n), np.float32)

        def sweeps():
            a, b = u, v
            handles = []
            for _ in range(iters):
                handles.append(self.k["jacobi"](grid, JACOBI_BLOCK, (a, b, np.int32(n), ns)))
                a, b = b, a
            return handles

        def check():        # (after the first run, from the start field)
            got = (u if iters % 2 == 0 else v).get()
            assert np.array_equal(got, want), "jacobi: a wrong result"
        return self.timed(sweeps, check, learn=1)

    def overhead(self) -> dict:
        """A launch of empty blocks cut into 2 chunks per node: what a chunk costs the
        scheduler and the workers in CPU, and the launch's time."""
        with dask.config.set({"dptx.chunks": 2 * self.n}):
            return self.uniform(blocks=64 * self.n, ns=0, repeat=10, kernel="empty")

    def metg(self) -> list:
        """(blocks per node, seconds, tasks, scheduler CPU) per launch, for launches of
        n * b blocks of METG_BLOCK_NS, METG_STEPS of them back to back and one
        synchronization (as Task Bench runs time steps: a program's launch stream, not a
        round trip per launch)."""
        rows = []
        for b in METG_BLOCKS_PER_NODE:
            blocks = self.n * b
            out = dptx.zeros(blocks * THREADS, np.float32)
            want = 0.5 * np.arange(blocks * THREADS, dtype=np.float32) + np.float32(1)

            def steps():
                return [self.k["step"]((blocks,), (THREADS,), (out, np.uint64(METG_BLOCK_NS)))
                        for _ in range(METG_STEPS)]

            def check():
                assert np.array_equal(out.get(), want), "metg: a wrong result"
            r = self.timed(steps, check)
            rows.append((b, r["seconds"] / METG_STEPS, r["tasks"] / METG_STEPS,
                         r["scheduler_cpu"] / METG_STEPS))
        return rows


def process_cpu_seconds():
    t = _os.times()
    return t.user + t.system


def reference_jacobi(u: np.ndarray, iters: int) -> np.ndarray:
    """numpy's sweeps, in float32 as the kernel computes them (same order of additions)."""
    a = u.copy()
    for _ in range(iters):
        b = a.copy()
        b[1:-1, 1:-1] = np.float32(0.25) * (((a[1:-1, :-2] + a[1:-1, 2:]) + a[:-2, 1:-1])
                                             + a[2:, 1:-1])
        a = b
    return a


def calibrate(opts) -> dict:
    """Seconds per block of each modelled workload, run in this process on one thread (the
    sleeps' real lengths, overshoot included): the ideal splits are computed from these."""
    k = {name: dptx.RawModule(SOURCE).get_function(name) for name in ("uniform", "triangular")}
    out = np.zeros(max(opts.uniform_blocks, opts.triangle_blocks, 512) * THREADS, np.float32)

    def seconds(kernel, blocks, ns):
        cpu.launch(kernel, (8,), (THREADS,), [out, np.uint64(ns)], threads=1)
        t0 = time.perf_counter()
        cpu.launch(kernel, (blocks,), (THREADS,), [out, np.uint64(ns)], threads=1)
        return time.perf_counter() - t0
    sample = min(256, opts.uniform_blocks)
    return {"uniform_block": seconds(k["uniform"], sample, UNIFORM_NS) / sample,
            "triangle_total": seconds(k["triangular"], opts.triangle_blocks, TRIANGLE_MEAN_NS),
            "metg_block": seconds(k["uniform"], 256, METG_BLOCK_NS) / 256}


def metg_of(rows, block_seconds, n) -> tuple:
    """(METG in seconds or None, [(granularity, efficiency)] in the order of the rows, by
    growing work per launch). Granularity: a task's mean duration (the modelled work of a
    launch / its tasks); efficiency: the ideal time / the measured one. METG: where the
    efficiency reaches 50% for good (from that size of launch on, every larger one is at
    least 50% efficient), interpolated on a log scale from the size before."""
    points = []
    for b, seconds, tasks, _ in rows:
        work = n * b * block_seconds
        points.append((work / max(tasks, 1), min(1.0, b * block_seconds / seconds)))
    first = next((i for i in range(len(points)) if all(e >= 0.5 for _, e in points[i:])),
                 None)
    if first is None:
        return None, points
    if first == 0:
        return points[0][0], points          # (at most this: the smallest measured)
    (g0, e0), (g1, e1) = points[first - 1], points[first]
    f = (0.5 - e0) / (e1 - e0)
    return math.exp(math.log(g0) + f * (math.log(g1) - math.log(g0))), points


def run_on(n: int, opts, client, calibration, results: dict) -> None:
    dptx.connect(client)
    try:
        w = Workloads(n, opts, client)
        for name in opts.workloads:
            if name in ("uniform", "triangular", "jacobi"):
                results.setdefault(name, {})[n] = r = getattr(w, name)()
                print(f"  {name:<11} {n:>3} nodes: {r['seconds']:8.3f} s, {r['tasks']:>5} "
                      f"tasks, CPU s/run: scheduler {r['scheduler_cpu']:.3f}, workers "
                      f"{r['workers_cpu']:.3f}", flush=True)
            elif name == "overhead":
                results.setdefault(name, {})[n] = r = w.overhead()
                print(f"  overhead    {n:>3} nodes: {r['seconds'] * 1e3:7.1f} ms a launch of "
                      f"{r['tasks']} chunks; CPU per chunk: scheduler "
                      f"{r['scheduler_cpu'] / r['tasks'] * 1e3:.2f} ms, workers "
                      f"{r['workers_cpu'] / r['tasks'] * 1e3:.2f} ms", flush=True)
            elif name == "metg" and (n in (8, 32) or n == max(opts.nodes)):
                results.setdefault("metg", {})[n] = rows = w.metg()
                m, _ = metg_of(rows, calibration["metg_block"], n)
                print(f"  metg        {n:>3} nodes: " +
                      (f"{m * 1e3:.2f} ms" if m else "efficiency < 50% everywhere"), flush=True)
    finally:
        dptx.shutdown()


def run_hetero(n: int, opts, client, results: dict) -> None:
    dptx.connect(client)
    try:
        w = Workloads(n, opts, client)
        adaptive = w.uniform()
        with dask.config.set({"dptx.split": "even"}):
            even = w.uniform()
        results["hetero"] = {"n": n, "adaptive": adaptive, "even": even}
        print(f"  hetero      {n:>3} nodes: adaptive {adaptive['seconds']:.3f} s, even "
              f"{even['seconds']:.3f} s", flush=True)
    finally:
        dptx.shutdown()


def speeds(n: int) -> list:
    """Relative speed of each node of the heterogeneous run."""
    return [HETERO_SPEED if i % HETERO_FAST == 0 else 1.0 for i in range(n)]


def report(opts, results, calibration, described: str) -> None:
    print(f"\n{described}")
    print("speed-up over one node (efficiency), best of 2 after the plugin learned:")
    names = [w for w in ("uniform", "jacobi", "triangular") if w in results]
    print(f"{'nodes':>6}" + "".join(f"{w:>26}" for w in names))
    for n in opts.nodes:
        cells = []
        for w in names:
            r = results[w]
            if n in r and 1 in r:
                s = r[1]["seconds"] / r[n]["seconds"]
                cells.append(f"{r[n]['seconds']:9.3f} s {s:6.2f}x ({s / n:4.0%})")
            elif n in r:
                cells.append(f"{r[n]['seconds']:9.3f} s{'':>15}")
            else:
                cells.append(f"{'-':>26}")
        print(f"{n:>6}" + "".join(f"{c:>26}" for c in cells))
    if "triangular" in results:
        print("triangular against the ideal split (the cost measured in-process / nodes):")
        for n, r in sorted(results["triangular"].items()):
            ideal = calibration["triangle_total"] / n
            print(f"{n:>6} nodes: {r['seconds']:.3f} s, ideal {ideal:.3f} s: "
                  f"{r['seconds'] / ideal:.2f}x the ideal")
    print("CPU seconds per run, scheduler / all workers (their processes, over the timed runs):")
    for w in names:
        print(f"  {w:<11}" + " ".join(f"{n}:{results[w][n]['scheduler_cpu']:.3f}/"
                                      f"{results[w][n]['workers_cpu']:.3f}"
                                      for n in sorted(results[w])))
    if "overhead" in results:
        print("per-chunk overhead (launches of empty blocks, 2 chunks per node, best of 10):")
        for n, r in sorted(results["overhead"].items()):
            print(f"{n:>6} nodes: {r['seconds'] * 1e3:7.1f} ms a launch, CPU per chunk: "
                  f"scheduler {r['scheduler_cpu'] / r['tasks'] * 1e3:.2f} ms, workers "
                  f"{r['workers_cpu'] / r['tasks'] * 1e3:.2f} ms")
    if "metg" in results:
        print(f"METG (a chunk's mean duration where efficiency reaches 50%; blocks of "
              f"{METG_BLOCK_NS / 1e3:.0f} us modelled, {calibration['metg_block'] * 1e3:.3f} ms "
              f"measured):")
        for n, rows in sorted(results["metg"].items()):
            m, points = metg_of(rows, calibration["metg_block"], n)
            print(f"{n:>6} nodes: METG " + (f"{m * 1e3:.2f} ms" if m else "not reached") +
                  "   (blocks per node: task ms, efficiency) " +
                  ", ".join(f"{row[0]}: {g * 1e3:.2f} {e:.0%}"
                            for row, (g, e) in zip(rows, points)))
    if "hetero" in results:
        h = results["hetero"]
        n = h["n"]
        total = calibration["uniform_block"] * opts.uniform_blocks
        ideal = total / sum(speeds(n))
        print(f"heterogeneous, {n} nodes (every {HETERO_FAST}th {HETERO_SPEED:g}x faster): "
              f"ideal {ideal:.3f} s, adaptive {h['adaptive']['seconds']:.3f} s "
              f"({h['adaptive']['seconds'] / ideal:.2f}x the ideal), even split "
              f"{h['even']['seconds']:.3f} s ({h['even']['seconds'] / ideal:.2f}x)")


# Published figures a user compares with: (nodes, speed-up, label)
ANCHORS = [(32, 7.3, "DistCL (average)"), (32, 29.1, "DistCL (best)"),
           (8, 7.5, "CUDA-for-Clusters")]


def plot(opts, results, path: str, described: str) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install -e '.[bench]')")
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    top = max(opts.nodes)
    ax.plot([1, top], [1, top], "k--", lw=1, label="ideal")
    for w in ("uniform", "jacobi", "triangular"):
        r = results.get(w, {})
        if 1 in r:
            ns = sorted(r)
            ax.plot(ns, [r[1]["seconds"] / r[n]["seconds"] for n in ns], "o-", label=w)
    for n, s, label in ANCHORS:
        ax.plot([n], [s], "s", ms=7, label=f"{label}: {s:g}x on {n}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(opts.nodes, [str(n) for n in opts.nodes])
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if t <= 2 * top]
    ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_xlabel("nodes")
    ax.set_ylabel("speed-up over one node")
    ax.set_title("dptx scale-out (" + described.split(",")[0] + ")", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", default="1,2,4,8,16,32",
                   type=lambda s: sorted({int(x) for x in s.split(",")}),
                   help="cluster sizes (default 1,2,4,8,16,32)")
    p.add_argument("--rate", default="10gbit", help="each link's rate (tc tbf; default 10gbit)")
    p.add_argument("--delay-us", type=float, default=50.0,
                   help="one-way delay per link, where the kernel has netem (default 50)")
    p.add_argument("--workloads", default="uniform,jacobi,triangular,overhead,metg,hetero",
                   type=lambda s: [w for w in s.split(",") if w])
    p.add_argument("--plot", default="scale_out.png", help="the PNG written (default "
                   "scale_out.png)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="a deployed cluster (dask scheduler --preload scheduler_plugins, "
                        "workers --preload dptx.worker): the workloads on 1, 2, 4... of its "
                        "workers and on all of them")
    p.add_argument("--loopback", action="store_true", help="no namespaces, even as root")
    p.add_argument("--quick", action="store_true", help="smaller workloads (a smoke run)")
    p.add_argument("--cleanup", action="store_true",
                   help="remove what a killed run left (namespaces, links) and exit")
    p.add_argument("--jacobi-size", type=int, default=None, help="default 8192 (--quick 512)")
    p.add_argument("--jacobi-iterations", type=int, default=20)
    p.add_argument("--jacobi-bandwidth", type=float, default=10e9,
                   help="a node's memory bandwidth the Jacobi blocks model, bytes/s (10e9)")
    opts = p.parse_args(argv)
    known = {"uniform", "jacobi", "triangular", "overhead", "metg", "hetero"}
    if set(opts.workloads) - known:
        p.error(f"unknown workloads {sorted(set(opts.workloads) - known)}; known: {sorted(known)}")
    opts.uniform_blocks = 256 if opts.quick else UNIFORM_BLOCKS
    opts.triangle_blocks = 256 if opts.quick else TRIANGLE_BLOCKS
    opts.jacobi_size = opts.jacobi_size or (512 if opts.quick else 8192)
    return opts


def main(argv=None):
    opts = parse(argv)
    if opts.cleanup:
        print("removed:", emulation.remove_leftovers() or "nothing")
        return
    calibration = calibrate(opts)
    results = {}
    if opts.scheduler:
        # the same table on real machines: 1, 2, 4... of the cluster's workers, each size
        # through the dptx.workers setting (launches and uploads go only there)
        with Client(opts.scheduler, set_as_default=False) as client:
            addresses = sorted(client.scheduler_info(n_workers=-1)["workers"])
            opts.nodes = sorted({n for n in opts.nodes if n <= len(addresses)} |
                                {len(addresses)})
            for n in opts.nodes:
                print(f"{n} of the {len(addresses)} workers at {opts.scheduler}", flush=True)
                with dask.config.set({"dptx.workers": addresses[:n]}):
                    run_on(n, opts, client, calibration, results)
        described = f"N of the {len(addresses)} workers of the cluster at {opts.scheduler}"
        if "hetero" in opts.workloads:
            print("(hetero needs emulated nodes: a real cluster's speeds are its own)")
    else:
        described = ""
        for n in opts.nodes:
            with emulation.EmulatedCluster(n, opts.rate, opts.delay_us,
                                           loopback=opts.loopback) as cluster:
                described = cluster.describe().replace(f"{n} ", "N ", 1)
                print(cluster.describe(), flush=True)
                with Client(cluster.address, set_as_default=False) as client:
                    cluster.wait(client)
                    run_on(n, opts, client, calibration, results)
        if "hetero" in opts.workloads:
            n = max(opts.nodes)
            env = [{"DASK_DPTX__NANOSLEEP_SCALE": str(1 / s)} for s in speeds(n)]
            with emulation.EmulatedCluster(n, opts.rate, opts.delay_us, node_env=env,
                                           loopback=opts.loopback) as cluster:
                with Client(cluster.address, set_as_default=False) as client:
                    cluster.wait(client)
                    run_hetero(n, opts, client, results)
    report(opts, results, calibration, described)
    if opts.plot and len(opts.nodes) > 1:
        plot(opts, results, opts.plot, described)
    return results


if __name__ == "__main__":
    main()
