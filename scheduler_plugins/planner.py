"""Planning a launch: how many blocks each worker runs and in how many chunks.

Shares are proportional to throughput, so that every device finishes at about the same time.
Chunk sizes keep Dask's per-task overhead (about 1-2 ms) under 5% of the work, while giving
each worker thread at least one chunk and, where the work is long enough, a few more, which
leaves the rebalancer something to move if a prediction was wrong.
"""
from __future__ import annotations

from dataclasses import dataclass

# Prior throughput per thread, in blocks/s, for a kernel nothing is known about. Only the
# ratio between device kinds matters for the first split; measurements replace it.
CPU_THREAD_PRIOR = 1.0
GPU_PRIOR = 40.0


@dataclass(frozen=True)
class WorkerInfo:
    address: str
    nthreads: int
    device: str = "cpu"     # "cpu" | "gpu"
    gpus: int = 0

    @property
    def lanes(self) -> int:
        """Chunks the worker runs at once: its threads, or one per GPU."""
        return max(1, self.gpus if self.device == "gpu" else self.nthreads)

    @property
    def prior(self) -> float:
        return GPU_PRIOR if self.device == "gpu" else CPU_THREAD_PRIOR


@dataclass(frozen=True)
class Chunk:
    worker: str
    first: int
    end: int

    @property
    def blocks(self) -> int:
        return self.end - self.first


def proportional_shares(total: int, weights: list) -> list:
    """Integers summing to ``total`` in proportion to ``weights`` (largest remainders)."""
    s = float(sum(weights))
    if total <= 0 or s <= 0:
        return [0] * len(weights)
    exact = [total * w / s for w in weights]
    shares = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in order[:total - sum(shares)]:
        shares[i] += 1
    return shares


def plan_launch(nblocks: int, workers: list, rates: dict, *, task_overhead: float = 0.002,
                max_overhead: float = 0.05, max_chunks_per_lane: int = 4,
                measured: bool = True, single_chunk: bool = False) -> list:
    """Chunks (worker, first block, end block) covering [0, nblocks) in order.

    ``rates`` are blocks/s per lane. ``measured`` False means the rates are priors (an unknown
    kernel): then chunk durations are unknown, and each lane gets two chunks where the grid
    allows. ``single_chunk`` gives the whole launch to the fastest worker (kernels whose chunks
    cannot be merged)."""
    if nblocks <= 0 or not workers:
        return []
    if single_chunk:
        best = max(workers, key=lambda w: rates[w.address] * w.lanes)
        return [Chunk(best.address, 0, nblocks)]
    throughput = [rates[w.address] * w.lanes for w in workers]
    shares = proportional_shares(nblocks, throughput)
    min_chunk_seconds = task_overhead / max_overhead
    chunks, start = [], 0
    for w, share in zip(workers, shares):
        if share == 0:
            continue
        lanes = w.lanes
        if measured:
            seconds_per_lane = share / (rates[w.address] * lanes)
            per_lane = int(seconds_per_lane // min_chunk_seconds)
            per_lane = max(1, min(max_chunks_per_lane, per_lane))
        else:
            per_lane = 2
        count = max(1, min(share, per_lane * lanes))
        if measured and share / (rates[w.address] * lanes) < min_chunk_seconds:
            # Too little work to keep every lane busy beyond the overhead: fewer, larger chunks.
            count = max(1, min(count, int(share / (rates[w.address] * min_chunk_seconds)) or 1))
        base, extra = divmod(share, count)
        for i in range(count):
            size = base + (1 if i < extra else 0)
            chunks.append(Chunk(w.address, start, start + size))
            start += size
    return chunks


def even_plan(nblocks: int, workers: list) -> list:
    """Equal shares per worker regardless of speed, two chunks per lane (for comparison)."""
    rates = {w.address: 1.0 / w.lanes for w in workers}
    return plan_launch(nblocks, workers, rates, measured=False)
