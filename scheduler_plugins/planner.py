"""Planning a launch: how many blocks each worker runs and in how many chunks.

Shares are proportional to throughput, so that every device finishes at about the same time.
Chunk sizes keep the measured per-chunk overhead (Dask's dispatch, window copies: about
1-2 ms) under 5% of the work, while giving each worker thread at least one chunk and, as far
as the measured spread of chunk times calls for, a few more, which leaves the rebalancer
something to move where a prediction was wrong.
"""
from __future__ import annotations

import math
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
    memory: int = 0         # its Dask memory limit in bytes (0: none, or not known)

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


TASK_OVERHEAD = 0.002      # seconds per chunk beyond its kernels, until one is measured
MAX_OVERHEAD = 0.05        # the share of a chunk's time the overhead may take
MIN_CHUNK_SECONDS = TASK_OVERHEAD / MAX_OVERHEAD
DEFAULT_CHUNKS_PER_LANE = 4    # before the spread of chunk times is known
MAX_CHUNKS_PER_LANE = 8
# where the work is long enough: one chunk to run and one an idle worker can take over, and
# chunk times along the grid for the cost profile to learn from
MIN_CHUNKS_PER_LANE = 2


@dataclass(frozen=True)
class Tuning:
    """What a worker's chunks of a kernel are sized from, measured at run time by the
    scheduler plugin: ``overhead``, the seconds a chunk costs the worker beyond its kernels
    (Dask's dispatch, the window copies; ``scheduler_plugins.overhead``), and ``spread``, how
    far chunk times stray from the model's prediction (the median relative misfit; None
    until known)."""
    overhead: float = TASK_OVERHEAD
    spread: float = None

    @property
    def min_chunk_seconds(self) -> float:
        return self.overhead / MAX_OVERHEAD


def chunk_count(share: int, rate: float, lanes: int, measured: bool,
                tuning: Tuning = Tuning()) -> int:
    """How many chunks a worker's share of ``share`` blocks is cut into: at least one per lane,
    none shorter than ``tuning.min_chunk_seconds`` (the overhead stays under 5% of the work),
    and per lane about sqrt(spread * seconds / overhead): each chunk costs ``overhead``, and
    what the predictions miss by (``spread`` of the lane's time) is balanced at the end at
    the grain of a chunk (idle workers take queued chunks), so n chunks leave about
    spread * seconds / n; the sum is least there. Exact predictions give MIN_CHUNKS_PER_LANE
    per lane; noisy ones more, up to MAX_CHUNKS_PER_LANE. Unknown kernels (``measured``
    False): two per lane."""
    if share <= 0:
        return 0
    if not measured:
        return max(1, min(share, 2 * lanes))
    seconds_per_lane = share / (rate * lanes)
    if tuning.spread is None:
        wanted = DEFAULT_CHUNKS_PER_LANE
    else:
        wanted = round(math.sqrt(tuning.spread * seconds_per_lane / max(tuning.overhead, 1e-6)))
    fits = int(seconds_per_lane // tuning.min_chunk_seconds)
    per_lane = max(1, min(MAX_CHUNKS_PER_LANE, max(MIN_CHUNKS_PER_LANE, wanted), fits))
    count = max(1, min(share, per_lane * lanes))
    if seconds_per_lane < tuning.min_chunk_seconds:
        # Too little work to keep every lane busy beyond the overhead: fewer, larger chunks.
        count = max(1, min(count, int(share / (rate * tuning.min_chunk_seconds)) or 1))
    return count


def split(worker: str, first: int, end: int, count: int, unit: int = 1) -> list:
    """[first, end) cut into ``count`` nearly equal chunks, cuts on multiples of ``unit``
    blocks where that leaves every chunk non-empty."""
    n = end - first
    count = max(1, min(count, n))
    cuts = [first + round(n * i / count) for i in range(count + 1)]
    if unit > 1:
        aligned = [cuts[0]] + [round(c / unit) * unit for c in cuts[1:-1]] + [cuts[-1]]
        if all(a < b for a, b in zip(aligned, aligned[1:])):
            cuts = aligned
    return [Chunk(worker, a, b) for a, b in zip(cuts, cuts[1:])]


def plan_launch(nblocks: int, workers: list, rates: dict, *, measured: bool = True,
                single_chunk: bool = False, unit: int = 1) -> list:
    """Chunks (worker, first block, end block) covering [0, nblocks) in order: each worker's
    share, in proportion to its throughput, contiguous and in the order of ``workers``.

    ``rates`` are blocks/s per lane. ``measured`` False means the rates are priors (an unknown
    kernel): then chunk durations are unknown, and each lane gets two chunks where the grid
    allows. ``single_chunk`` gives the whole launch to the fastest worker (kernels whose chunks
    cannot be merged). Cuts fall on multiples of ``unit`` blocks where possible (rows of a
    2-D grid, so that a chunk's footprint is whole rows)."""
    if nblocks <= 0 or not workers:
        return []
    if single_chunk:
        best = max(workers, key=lambda w: rates[w.address] * w.lanes)
        return [Chunk(best.address, 0, nblocks)]
    shares = proportional_shares(nblocks, [rates[w.address] * w.lanes for w in workers])
    return split_shares(workers, shares, rates, measured, unit)


def share_bounds(shares: list, unit: int = 1) -> list:
    """Boundaries of consecutive shares of these sizes, moved to multiples of ``unit`` where
    that keeps every non-empty share non-empty."""
    bounds = [0]
    for share in shares:
        bounds.append(bounds[-1] + share)
    if unit > 1:
        aligned = [bounds[0]] + [round(b / unit) * unit for b in bounds[1:-1]] + [bounds[-1]]
        if all((a < b) == (s > 0) for a, b, s in zip(aligned, aligned[1:], shares)):
            bounds = aligned
    return bounds


def guided_fractions(count: int) -> list:
    """Shares of a worker's range for its ``count`` chunks, shrinking toward the end (guided
    self-scheduling): the last chunk is about half the first, so that when the worker runs
    dry the chunks left elsewhere to take over are small."""
    return [2 * count - i for i in range(count)]


def split_shares(workers: list, shares: list, rates: dict, measured: bool, unit: int = 1,
                 profile=None, tuning: dict = None) -> list:
    """Each worker's share cut into chunks. With a cost ``profile`` (a CostProfile), the
    chunks split the share's cost, in guided (shrinking) fractions, and ``rates`` are in its
    units; else equal numbers of blocks. ``tuning``: worker -> Tuning (run-time measurements;
    the defaults where absent)."""
    tuning = tuning or {}
    bounds = share_bounds(shares, unit)
    chunks = []
    for w, a, b in zip(workers, bounds, bounds[1:]):
        if b <= a:
            continue
        tune = tuning.get(w.address, Tuning())
        if profile is None:
            count = chunk_count(b - a, rates[w.address], w.lanes, measured, tune)
            chunks.extend(split(w.address, a, b, count, unit))
            continue
        work = profile.cost(a, b)
        count = chunk_count(max(1, round(work)), rates[w.address], w.lanes, measured, tune)
        count = max(1, min(count, (b - a) // max(1, unit)))
        cuts = profile.cut(guided_fractions(count), a, b)
        if unit > 1:
            aligned = [a] + [round(c / unit) * unit for c in cuts[1:-1]] + [b]
            if all(x < y for x, y in zip(aligned, aligned[1:])):
                cuts = aligned
        chunks.extend(Chunk(w.address, x, y) for x, y in zip(cuts, cuts[1:]) if y > x)
    return chunks


def exploring_rates(rates: dict, samples: dict, min_samples: int = 3,
                    floor: float = 0.25) -> dict:
    """Explore while unsure: a worker with fewer than ``min_samples`` measurements of a kernel
    gets at least ``floor`` of the best rate, so that one bad first measurement cannot starve
    it of the chunks that would correct it."""
    best = max(rates.values())
    return {w: (max(r, floor * best) if samples.get(w, 0) < min_samples else r)
            for w, r in rates.items()}


def even_plan(nblocks: int, workers: list) -> list:
    """Equal shares per worker regardless of speed, two chunks per lane (for comparison)."""
    rates = {w.address: 1.0 / w.lanes for w in workers}
    return plan_launch(nblocks, workers, rates, measured=False)
