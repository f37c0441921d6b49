"""Where the blocks of a launch run (DESIGN.md point 8), planned on the client from its copy of
the scheduler plugin's model, with no call to the scheduler.

- Shares follow throughput (``scheduler_plugins.planner``); each worker's share is one
  contiguous range of blocks, cut into a few chunks, as many as the measured overhead per
  chunk and spread of chunk times call for.
- Data stays where it is made: the shares of a kernel (per grid shape) are kept from one
  launch to the next, so that iterative kernels find their data on the worker that wrote
  it, and they move only when the predicted gain of a rebalance, over the next few launches,
  beats the time to move the bytes of the blocks that change worker.
- A kernel's first launch orders the workers along the grid by where the data it touches
  lies (host uploads are spread in the same order), so that each range starts near its data.
- A launch too small to be worth splitting runs as one chunk on the worker holding its data
  (such launches in a row then run as one task, see ``dptx.runtime.stream``); launches whose chunks
  cannot be merged run as one chunk on the fastest worker.
- In 2-D and 3-D grids cuts fall on whole rows (planes) of blocks where possible, so that a
  chunk's footprint is a band of rows that no other chunk writes.
"""
from __future__ import annotations

from dataclasses import dataclass

from scheduler_plugins.model import rates_for
from scheduler_plugins.planner import (Tuning, exploring_rates, proportional_shares,
                                       share_bounds, split_shares)

from .launch import Chunk, window_of

HORIZON = 8                # launches over which a rebalance must pay for itself
IMBALANCE = 0.1            # predicted imbalance below which shares stay (measurements are noisy)
LARGE_IMBALANCE = 1.5      # a makespan this much over the balanced one moves at once
MOVE_MARGIN = 2.0          # the gain must beat the cost of moving by this factor
PERSIST = 3                # model updates in a row that must find the imbalance to move
SMALL_BYTES = 1 << 20      # a launch touching less than this may run away from its data
DISPATCH_SECONDS = 0.001   # the scheduler's time per chunk it hands out (0.8-1.9 ms measured
                           # on 1-32 emulated nodes: benchmarks/scale_out.py's overhead line)


@dataclass
class Shares:
    workers: tuple          # addresses, in block order
    bounds: tuple           # len(workers) + 1 block boundaries
    launches: int = 0
    uneven: int = 0         # model updates in a row that found these shares worth moving
    seen: tuple = ()        # the speeds the last of them was read from


def grid_unit(grid: tuple, parts: int) -> int:
    """Blocks per row (or plane) to align cuts to, when there are rows enough for ``parts``."""
    gx, gy, gz = grid
    if gz > 1 and gz >= 2 * parts:
        return gx * gy
    if gy * gz > 1 and gy * gz >= 2 * parts:
        return gx
    return 1


def data_centres(maps: list) -> dict:
    """worker -> where (0..1 along each buffer) the bytes it holds lie, averaged over the
    buffers, weighted by bytes."""
    total, weight = {}, {}
    for pieces in maps:
        if not pieces.nbytes:
            continue
        for p in pieces.pieces:
            if p.worker is None:
                continue
            mid = (p.start + p.end) / 2 / pieces.nbytes
            total[p.worker] = total.get(p.worker, 0.0) + mid * p.size
            weight[p.worker] = weight.get(p.worker, 0) + p.size
    return {w: total[w] / weight[w] for w in total}


def makespan(cost, throughput: dict, workers: list, bounds) -> float:
    """Seconds until the last of ``workers`` finishes its range of ``bounds`` (``cost(a, b)``:
    the work of blocks [a, b); ``throughput``: per worker address)."""
    return max((cost(a, b) / throughput[w.address] for w, a, b in zip(workers, bounds, bounds[1:])),
               default=0.0)


def holder(maps: list, candidates) -> tuple:
    """(the worker among ``candidates`` expected to hold the most bytes of ``maps``, and the
    share of the bytes it holds)."""
    held = {w: 0 for w in candidates}
    total = 0
    for pieces in maps:
        total += pieces.nbytes
        for p in pieces.pieces:
            if p.worker in held:
                held[p.worker] += p.size
    if not held:
        return None, 0.0
    best = max(sorted(held), key=held.get)
    return best, (held[best] / total if total else 1.0)


class LaunchPlanner:
    def __init__(self, model, bandwidth: float = 1e9):
        self.model = model
        self.bandwidth = bandwidth      # bytes/s between workers, for the cost of a move
        self.shares: dict = {}          # (kernel, grid, block) -> Shares
        self.latest: dict = {}          # (grid, block) -> the Shares of its latest launch

    def has_gpus(self) -> bool:
        """Whether any worker runs GPU chunks."""
        return any(w.device == "gpu" and w.gpus for w in self.model.workers())

    def plan(self, kernel: str, grid: tuple, block: tuple, single: bool, maps: list,
             split: str = "adaptive", gpu: bool = True) -> list:
        """The chunks of a launch. ``maps`` are the PieceMaps of the buffers it touches.
        ``split="even"`` gives every worker the same share, whatever its speed (a static
        split, the ``dptx.split`` setting), placed along the data as the adaptive one.
        ``gpu=False``: the GPU path cannot take the kernel, so CPU workers run it all (GPU
        workers only where there is no CPU worker; they then run it on their CPUs)."""
        nblocks = grid[0] * grid[1] * grid[2]
        workers = [w for w in self.model.workers() if w.device == "cpu" or w.gpus]
        if not gpu:
            workers = [w for w in workers if w.device == "cpu"] or workers
        if not workers:
            return [Chunk(0, nblocks)]
        by_address = {w.address: w for w in workers}
        if split == "even":
            measured, rates = {}, {a: 1.0 for a in by_address}
            throughput = dict(rates)
        else:
            measured = self.model.measured(kernel)
            priors = {w.address: w.prior for w in workers}
            rates = rates_for({w: r for w, (r, _) in measured.items()}, priors)
            rates = exploring_rates(rates, {w: n for w, (_, n) in measured.items()})
            throughput = {a: rates[a] * by_address[a].lanes for a in by_address}
        is_measured = any(w in by_address for w in measured)
        # Where the work lies along the grid (scheduler_plugins.profile): shares then cut at
        # equal predicted finish times, in the profile's units of cost and speed.
        learned = None if split == "even" else self.model.profile(kernel, nblocks)
        cost = lambda a, b: b - a                           # noqa: E731 - blocks, uniform
        if learned is not None and any(w in by_address for w in learned.speeds):
            rates = rates_for({w: s for w, s in learned.speeds.items() if w in by_address},
                              {w.address: w.prior for w in workers})
            throughput = {a: rates[a] * by_address[a].lanes for a in by_address}
            cost = learned.profile.cost
        else:
            learned = None

        if single:
            best = max(throughput, key=throughput.get)
            return [self._chunk(0, nblocks, best, by_address)]
        tuning = {} if split == "even" else self.model.tuning(kernel, nblocks)
        near, share = holder(maps, by_address)
        small = sum(p.nbytes for p in maps) <= SMALL_BYTES
        if nblocks == 1 or (is_measured and (small or share >= 0.9) and
                            self._sooner_alone(nblocks, throughput, near, tuning, maps, share)):
            # too little work to split, and the data is in one place: run there
            return [self._chunk(0, nblocks, near, by_address)]

        key = (kernel, tuple(grid), tuple(block))
        previous = self.shares.get(key)
        if previous is None or set(previous.workers) != set(by_address):
            order = self._order(workers, maps)
        else:
            order = [by_address[a] for a in previous.workers]
        unit = grid_unit(grid, sum(w.lanes for w in workers))
        if learned is not None:
            cuts = learned.profile.cut([throughput[w.address] for w in order])
            counts = [b - a for a, b in zip(cuts, cuts[1:])]
        else:
            counts = proportional_shares(nblocks, [throughput[w.address] for w in order])
        bounds = share_bounds(counts, unit)
        if previous is not None and [w.address for w in order] == list(previous.workers):
            bounds = self._keep_or_move(previous, bounds, order, throughput, nblocks, maps,
                                        grid, cost)
        order, bounds = self._follow_latest((tuple(grid), tuple(block)), previous, order,
                                            bounds, by_address, throughput, cost,
                                            is_measured or learned is not None,
                                            sum(p.nbytes for p in maps) / max(1, nblocks))
        moved = previous is not None and tuple(bounds) != previous.bounds
        shares = Shares(tuple(w.address for w in order), tuple(bounds),
                        (previous.launches if previous else 0) + 1,
                        0 if moved or previous is None else previous.uneven,
                        () if moved or previous is None else previous.seen)
        self.shares[key] = self.latest[(tuple(grid), tuple(block))] = shares
        counts = [b - a for a, b in zip(bounds, bounds[1:])]
        chunks = split_shares(order, counts, rates, is_measured, unit,
                              learned.profile if learned is not None else None, tuning)
        return [self._chunk(c.first, c.end, c.worker, by_address) for c in chunks]

    def _sooner_alone(self, nblocks: int, throughput: dict, near: str, tuning: dict,
                      maps: list, share: float) -> bool:
        """Whether the worker that holds the data finishes the launch before all the workers
        would: alone it pays one chunk's overhead; split, each worker pays one, the scheduler
        hands out a chunk per worker one after another (DISPATCH_SECONDS each), and the
        others' shares of the data held by ``near`` travel. (A launch used to run alone
        whenever its work was under 20 overheads: on 32 workers, a launch of 170 ms of work
        ran 170 ms on one worker rather than about 10 ms on all.)"""
        overhead = tuning.get(near, Tuning()).overhead
        alone = nblocks / throughput[near] + overhead
        total = sum(throughput.values())
        others = 1.0 - throughput[near] / total
        moved = share * sum(p.nbytes for p in maps) * others / self.bandwidth
        slowest = max((t.overhead for t in tuning.values()), default=overhead)
        split = nblocks / total + slowest + DISPATCH_SECONDS * len(throughput) + moved
        return alone <= split

    def _keep_or_move(self, previous: Shares, bounds: list, order: list, throughput: dict,
                      nblocks: int, maps: list, grid: tuple, cost=lambda a, b: b - a) -> list:
        """The previous boundaries, unless moving to ``bounds`` gains more time over the next
        HORIZON launches than moving the bytes of the blocks that change worker costs.
        ``cost(a, b)``: the work of blocks [a, b) (their count, or their cost profile's)."""
        old = list(previous.bounds)
        if old == bounds or len(old) != len(bounds):
            return bounds if len(old) != len(bounds) else old

        before, after = (makespan(cost, throughput, order, bs) for bs in (old, bounds))
        if before < (1 + IMBALANCE) * after:
            previous.uneven = 0
            return old          # within the noise of the measurements: stay
        reading = tuple(sorted(throughput.items()))
        if reading != previous.seen:     # a new measurement, not the same one read again
            previous.seen = reading
            previous.uneven += 1
        large = before > LARGE_IMBALANCE * after
        if previous.uneven < PERSIST and not large:
            return old          # one reading is not a trend
        gain = (before - after) * min(HORIZON, previous.launches)
        # A moderate imbalance moves half-way: one noisy measurement cannot swing a range of
        # blocks far, and a real change of speed is followed within a few launches.
        unit = max(1, grid_unit(grid, len(order)))
        halfway = bounds if large else \
            [old[0]] + [a + round((b - a) / 2 / unit) * unit
                        for a, b in zip(old[1:-1], bounds[1:-1])] + [old[-1]]
        moved_blocks = sum(abs(a - b) for a, b in zip(old, halfway))
        bytes_per_block = sum(p.nbytes for p in maps) / max(1, nblocks)
        cost = moved_blocks * bytes_per_block / self.bandwidth
        if moved_blocks == 0 or not all(a <= b for a, b in zip(halfway, halfway[1:])):
            return old
        return halfway if gain > MOVE_MARGIN * cost else old

    def _follow_latest(self, shape: tuple, previous, order: list, bounds: list, by_address: dict,
                       throughput: dict, cost, measured: bool, bytes_per_block: float) -> tuple:
        """(order, bounds) of the latest launch of the same grid and block shape, another
        kernel's, where this kernel has no speeds of its own yet (the other kernel's split
        is the better guess, and its data is there), or where its own split would gain less
        time than moving the bytes of the blocks that change worker costs (the latest launch
        left its data in its split), or where they are within the noise (IMBALANCE) of each
        other: consecutive array operations (``a * 2 + b``) then keep one split, so their
        data stays where the previous one wrote it and they can run fused (``dptx.runtime.stream``).
        Kernels measured at slightly different speeds would otherwise each keep a split of
        their own (8192 vs 9076 of 16384 blocks seen for float32 multiply and add, each
        measured on two workers sharing two cores). Else this kernel's (order, bounds)."""
        latest = self.latest.get(shape)
        if latest is None or latest is previous or tuple(bounds) == latest.bounds \
                or set(latest.workers) != set(by_address) or len(latest.bounds) != len(bounds):
            return order, bounds
        theirs = [by_address[a] for a in latest.workers]
        if not measured:
            return theirs, list(latest.bounds)
        own_span = makespan(cost, throughput, order, bounds)
        their_span = makespan(cost, throughput, theirs, latest.bounds)
        moving = blocks_changing_worker(latest.workers, latest.bounds,
                                        [w.address for w in order], bounds)
        if their_span < (1 + IMBALANCE) * own_span or \
                their_span - own_span <= moving * bytes_per_block / self.bandwidth:
            return theirs, list(latest.bounds)
        return order, bounds

    @staticmethod
    def _order(workers: list, maps: list) -> list:
        """Workers in the order their data lies along the buffers; those with none after."""
        centres = data_centres(maps)
        return sorted(workers, key=lambda w: (w.address not in centres,
                                              centres.get(w.address, 0.0), w.address))

    @staticmethod
    def _chunk(first: int, end: int, address: str, by_address: dict) -> Chunk:
        return Chunk.on(first, end, by_address[address])


def blocks_changing_worker(workers_a, bounds_a, workers_b, bounds_b) -> int:
    """How many blocks run on another worker under split b than under split a (each: worker
    addresses in block order and their len + 1 boundaries)."""
    ranges = {}
    for w, a, b in zip(workers_a, bounds_a, bounds_a[1:]):
        ranges.setdefault(w, []).append((a, b))
    same = 0
    for w, a, b in zip(workers_b, bounds_b, bounds_b[1:]):
        same += sum(max(0, min(b, hi) - max(a, lo)) for lo, hi in ranges.get(w, ()))
    return bounds_b[-1] - bounds_b[0] - same


def edges_apart(chunks: list, footprints: list, maps: list, grid: tuple) -> list:
    """Latency hiding for stencils: a chunk whose window reaches into bytes held by another
    worker at its ends (a halo) is cut into its edges, which wait for those bytes, and its
    interior, which needs none and runs first (it comes first in the graph, so it has the
    higher priority) while the halos travel. Chunks that need nothing remote stay whole."""
    if footprints is None:
        return chunks
    unit = grid_unit(grid, 1)
    interiors, edges = [], []
    for chunk, row in zip(chunks, footprints):
        head = tail = False
        for pieces, fp in zip(maps, row or ()):
            if fp is None or chunk.worker is None:
                continue
            lo, hi = window_of(fp[0], fp[1], pieces.nbytes)
            parts = pieces.overlapping(lo, hi)
            if len(parts) < 2:
                continue
            head |= parts[0].worker != chunk.worker and parts[0].size * 8 < hi - lo
            tail |= parts[-1].worker != chunk.worker and parts[-1].size * 8 < hi - lo
        n = chunk.end - chunk.first
        # One row of blocks (one block in 1-D): its halo reads are what the neighbour
        # sends, and its piece is small enough for the neighbour's edge to take whole in
        # the next launch, with no cut task.
        width = unit
        if not (head or tail) or n < (head + tail + 1) * width:
            interiors.append(chunk)
            continue
        a = chunk.first + (width if head else 0)
        b = chunk.end - (width if tail else 0)
        interiors.append(Chunk(a, b, chunk.worker, chunk.device))
        if head:
            edges.append(Chunk(chunk.first, a, chunk.worker, chunk.device))
        if tail:
            edges.append(Chunk(b, chunk.end, chunk.worker, chunk.device))
    return interiors + edges if edges else chunks
