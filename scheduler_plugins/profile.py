"""Where the work of a launch lies along its grid, apart from how fast each worker is.

A kernel whose blocks do not all cost the same (Mandelbrot rows, a triangular loop, sparse
rows) makes a worker that ran the expensive blocks look slow to a model of blocks per second.
``CostProfile`` is the relative cost of each block along the linear block range of one
(kernel, grid size), piecewise constant over at most ``BINS`` equal bins and normalized to a
mean of 1 per block (a uniform kernel is all ones: costs are block counts, and speeds are the
blocks per second of the plain model). ``ProfileModel`` learns the profiles and each worker's
speed per kernel together, from the chunks of the last few launches: a chunk of blocks
[first, end) that ran ``t`` seconds on worker ``w`` says ``cost(first, end) = t * speed[w]``.

The fit is one nonlinear least-squares problem in both (Gauss-Newton on the log of the
chunk times; see ``fit``), with a penalty on jumps between neighbouring bins. That penalty is
what separates the two where a worker only ever ran its own contiguous range: the profile
must stay smooth across the cut between two workers, so a step in chunk times at a cut is
the workers' speed ratio, not the grid. Ranges that change hands between launches (the plan
moves its cuts, idle workers take queued chunks) pin it down further. Older launches count
less (``decay``), so that a profile that changes (a zoom) is relearned within a few launches. No Dask here; numpy only."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

BINS = 64
ROBUST = 0.2        # relative misfit beyond which a chunk time counts less (log units)


class CostProfile:
    """Relative cost per block over [0, nblocks): ``weights[b]`` for the blocks of bin b."""

    def __init__(self, nblocks: int, weights=None, bins: int = BINS):
        self.nblocks = int(nblocks)
        nbins = max(1, min(bins, self.nblocks))
        self.edges = np.round(np.linspace(0, self.nblocks, nbins + 1)).astype(np.int64)
        self.weights = np.ones(nbins) if weights is None else np.asarray(weights, float)
        if self.weights.shape != (nbins,):
            raise ValueError(f"{nbins} weights expected, got {self.weights.shape}")
        self._cumulative = None

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.edges)

    def overlap(self, first: int, end: int) -> np.ndarray:
        """Blocks of [first, end) in each bin."""
        return self.overlaps([first], [end])[0]

    def overlaps(self, firsts, ends) -> np.ndarray:
        """``overlap`` of many ranges at once: ranges x bins (one numpy call for a fit's
        hundreds of chunks, not one each)."""
        lo = np.clip(np.asarray(firsts)[:, None], self.edges[:-1], self.edges[1:])
        hi = np.clip(np.asarray(ends)[:, None], self.edges[:-1], self.edges[1:])
        return (hi - lo).astype(float)

    def cost(self, first: int, end: int) -> float:
        """The cost of blocks [first, end), in block-equivalents."""
        return float(self.overlap(first, end) @ self.weights)

    def costs(self, chunks) -> np.ndarray:
        """The cost of each chunk's blocks (anything with ``first`` and ``end``)."""
        if not chunks:
            return np.zeros(0)
        return self.overlaps([c.first for c in chunks], [c.end for c in chunks]) @ self.weights

    def total(self) -> float:
        return float(self.sizes @ self.weights)

    def cut(self, fractions: list, first: int = 0, end: int = None) -> list:
        """Block boundaries first = b0 <= b1 <= ... <= bn = end (default: the whole grid)
        splitting the cost of [first, end) in the given fractions (in order), blocks
        interpolated within a bin."""
        end = self.nblocks if end is None else end
        if self._cumulative is None:
            self._cumulative = np.concatenate([[0.0], np.cumsum(self.sizes * self.weights)])
        cumulative, edges = self._cumulative, self.edges.astype(float)
        lo, hi = np.interp([first, end], edges, cumulative)
        targets = np.cumsum([0.0] + [float(f) for f in fractions])
        targets = lo + targets / (targets[-1] or 1.0) * (hi - lo)
        out = [int(round(b)) for b in np.interp(targets, cumulative, edges)]
        out[0], out[-1] = first, end
        for i in range(1, len(out)):
            out[i] = min(max(out[i], out[i - 1]), end)
        return out

    def as_list(self) -> list:
        return [float(w) for w in self.weights]


@dataclass
class Learned:
    """What a plan uses of a kernel's learned profile: where the cost lies, each worker's
    speed in its units (per lane), and how far chunk times stray from them (``spread``,
    ``ProfileModel.spread``; None where unknown)."""
    profile: CostProfile
    speeds: dict
    spread: float = None


@dataclass
class _Chunk:
    launch: int            # the order of its launch (newer: larger)
    first: int
    end: int
    worker: str
    seconds: float


@dataclass
class _Kernel:
    nblocks: int
    chunks: deque = field(default_factory=lambda: deque(maxlen=512))
    launches: list = field(default_factory=list)     # launch ids, oldest first
    profile: CostProfile = None
    speeds: dict = field(default_factory=dict)       # worker -> block-equivalents/s per lane
    stale: bool = False
    covered: dict = field(default_factory=dict)      # launch id -> blocks its chunks ran
    judged: str = None       # the newest launch judged whole (see ``ProfileModel``)
    disagreed: str = None    # the last launch judged that the fit missed
    uneven: bool = False     # the profile kept is not flat (``_prefer_uniform``)


class ProfileModel:
    """Cost profiles per (kernel, grid size) and worker speeds per kernel, from chunk times.

    A profile is given once ``min_launches`` launches back it (plans use blocks per second
    until then), and only where it explains the chunk times better than a uniform one (a
    typical chunk's relative error smaller by ``uneven``, or by ``still_uneven`` to keep a
    profile already taken; else the profile is flat and speeds are blocks per second).
    ``history`` launches are kept; one ``k`` launches old counts ``decay ** k``. When the fit
    misses two whole launches in a row by more than ``changed`` (their chunks' errors over
    their total), the launches before them are dropped: the profile or a worker changed.
    One launch is not enough (a worker stalled by another process for one launch is not a new
    profile, and throwing the history away for it leaves too little to tell the grid from the
    workers), nor is part of one (a launch is judged once its chunks cover the grid).
    ``smoothness`` weighs the penalty on neighbouring bins' difference against the chunk
    times' misfit (both relative)."""

    def __init__(self, history: int = 4, decay: float = 0.5, smoothness: float = 0.3,
                 iterations: int = 8, bins: int = BINS, changed: float = 0.3,
                 min_launches: int = 2, uneven: float = 0.06, still_uneven: float = 0.03):
        self.history, self.decay, self.smoothness = history, decay, smoothness
        self.changed, self.min_launches = changed, min_launches
        self.uneven, self.still_uneven = uneven, still_uneven
        self.iterations, self.bins = iterations, bins
        self._kernels: dict = {}          # (kernel, nblocks) -> _Kernel

    def observe(self, kernel: str, nblocks: int, launch: str, first: int, end: int,
                worker: str, seconds: float) -> None:
        if end <= first or seconds <= 0 or nblocks <= 0:
            return
        k = self._kernels.get((kernel, nblocks))
        if k is None:
            k = self._kernels[(kernel, nblocks)] = _Kernel(nblocks)
        if launch not in k.launches:
            if k.launches and k.covered.get(k.launches[-1], 0) < nblocks:
                k.stale = True      # the launch before never covered the grid: fit what came
            k.launches.append(launch)
            if len(k.launches) > self.history:
                old = k.launches.pop(0)
                k.chunks = deque((c for c in k.chunks if c.launch != old), maxlen=512)
                k.covered.pop(old, None)
        k.chunks.append(_Chunk(launch, int(first), int(end), worker, float(seconds)))
        # Refit when a launch's chunks have covered the grid, not at every chunk: a fit
        # costs milliseconds, a launch on 32 workers brings dozens of chunks, and a part of
        # a launch says little a plan could use (profiles wait for whole launches anyway).
        before = k.covered.get(launch, 0)
        k.covered[launch] = before + int(end) - int(first)
        if before < nblocks <= k.covered[launch]:
            k.stale = True

    def profile(self, kernel: str, nblocks: int):
        """The fitted CostProfile, or None until ``min_launches`` launches of that grid size
        agree (one launch cannot tell where the work lies from a worker that slowed down
        during it: another process starting on its core looks like costly blocks)."""
        k = self._fitted(kernel, nblocks)
        return None if k is None or len(k.launches) < self.min_launches else k.profile

    def speeds(self, kernel: str, nblocks: int) -> dict:
        """worker -> block-equivalents per second per lane, for this grid size's profile
        (empty while ``profile`` is None)."""
        k = self._fitted(kernel, nblocks)
        return {} if k is None or len(k.launches) < self.min_launches else dict(k.speeds)


    def spread(self, kernel: str, nblocks: int):
        """How far this grid size's chunk times stray from the fit: the median of
        |log(predicted / measured)| over the chunks kept (newer launches weigh more), about
        the relative error of a prediction. None while ``profile`` is None."""
        k = self._fitted(kernel, nblocks)
        if k is None or len(k.launches) < self.min_launches:
            return None
        return self._typical_misfit(k, k.profile, k.speeds)

    def _typical_misfit(self, k, profile: CostProfile, speeds: dict):
        """The median of |log(predicted / measured)| over ``k``'s chunks, newer launches
        weighing more (``decay``); None without a chunk of a worker with a speed. A median:
        a chunk that stalled moves it little."""
        chunks = [c for c in k.chunks if speeds.get(c.worker, 0) > 0]
        if not chunks:
            return None
        age = {launch: len(k.launches) - 1 - i for i, launch in enumerate(k.launches)}
        weight = np.array([self.decay ** age.get(c.launch, len(k.launches)) for c in chunks])
        rate = np.array([speeds[c.worker] * c.seconds for c in chunks])
        misfit = np.abs(np.log(np.maximum(profile.costs(chunks), 1e-12) / rate))
        order = np.argsort(misfit)
        cumulative = np.cumsum(weight[order])
        return float(misfit[order][np.searchsorted(cumulative, cumulative[-1] / 2)])

    def keys(self) -> list:
        return sorted(self._kernels)

    def forget_worker(self, worker: str) -> None:
        for k in self._kernels.values():
            if any(c.worker == worker for c in k.chunks):
                k.chunks = deque((c for c in k.chunks if c.worker != worker), maxlen=512)
                k.speeds.pop(worker, None)
                k.stale = True

    def snapshot(self) -> dict:
        """kernel -> {str(nblocks): weights} (what clients plan from; plain data)."""
        out: dict = {}
        for (kernel, nblocks) in self._kernels:
            p = self.profile(kernel, nblocks)
            if p is not None:
                out.setdefault(kernel, {})[str(nblocks)] = p.as_list()
        return out

    # -- fitting -----------------------------------------------------------------------------
    def _fitted(self, kernel: str, nblocks: int):
        k = self._kernels.get((kernel, nblocks))
        if k is None or not k.chunks:
            return None
        if k.stale or k.profile is None:
            previous = k.profile
            k.profile, k.speeds = fit(list(k.chunks), nblocks, k.launches, self.decay,
                                      self.smoothness, self.iterations, self.bins, previous)
            if self._changed(k):
                # two whole launches in a row disagree with the older ones: the profile
                # (or a worker) changed; learn from those two rather than average
                recent = k.launches[-2:]
                k.launches = recent
                k.chunks = deque((c for c in k.chunks if c.launch in recent), maxlen=512)
                k.profile, k.speeds = fit(list(k.chunks), nblocks, k.launches, self.decay,
                                          self.smoothness, self.iterations, self.bins,
                                          previous)
            self._prefer_uniform(k)
            k.stale = False
        return k

    def _prefer_uniform(self, k) -> None:
        """Keep a profile only where it explains how chunk times vary within each worker's
        share of a launch clearly better than every block costing the same: a typical
        chunk's relative error ``uneven`` smaller (``still_uneven`` for a profile already
        kept: without that margin a kernel near the threshold flips between flat and uneven
        from one launch to the next, and a flat plan is far from an uneven kernel's).
        Within a share only: with contiguous shares a step in the profile at a cut and a
        speed ratio fit equally well, and a worker stalled by another process for a whole
        launch says nothing about the grid; noise must not make a uniform kernel look
        uneven."""
        flat = CostProfile(k.nblocks, bins=self.bins)
        misfits = _shape_misfits(k.chunks, flat, k.profile)
        margin = self.still_uneven if k.uneven else self.uneven
        k.uneven = misfits is not None and misfits[0] > misfits[1] + margin
        if not k.uneven:
            speeds = {}
            for w in {c.worker for c in k.chunks}:
                mine = [c for c in k.chunks if c.worker == w]
                speeds[w] = sum(c.end - c.first for c in mine) / sum(c.seconds for c in mine)
            k.profile, k.speeds = flat, speeds

    def _changed(self, k) -> bool:
        """Judge the newest launch once its chunks cover the grid: True where the fit misses
        it by more than ``changed`` and missed the launch before it too."""
        newest = k.launches[-1]
        mine = [c for c in k.chunks if c.launch == newest]
        if len(k.launches) < 3 or k.judged == newest or \
                sum(c.end - c.first for c in mine) < k.nblocks:
            return False
        k.judged = newest
        if _misfit(mine, k.profile, k.speeds) <= self.changed:
            return False
        previous, k.disagreed = k.disagreed, newest
        return previous == k.launches[-2]


def _share_deviations(chunks, profile: CostProfile) -> np.ndarray:
    """Per chunk, |log(cost / seconds)| about its (worker, launch) share's median: how well
    ``profile`` explains the chunk's time relative to the others of its share, whatever
    speed the worker ran that launch at. NaN for a chunk alone in its share."""
    seconds = np.array([c.seconds for c in chunks])
    logs = np.log(np.maximum(profile.costs(chunks), 1e-12) / seconds)
    shares: dict = {}
    for i, c in enumerate(chunks):
        shares.setdefault((c.worker, c.launch), []).append(i)
    out = np.full(len(chunks), np.nan)
    for members in shares.values():
        if len(members) > 1:
            mine = logs[members]
            out[members] = np.abs(mine - _median(mine))
    return out


def _median(values: np.ndarray) -> float:
    """np.median of a few values, without its overhead (a fit takes hundreds of shares)."""
    ordered = sorted(values.tolist())
    n = len(ordered)
    return ordered[n // 2] if n % 2 else 0.5 * (ordered[n // 2 - 1] + ordered[n // 2])


def _shape_misfits(chunks, uniform: CostProfile, learned: CostProfile, cap: float = 0.5):
    """(uniform's, learned's) mean share deviation over the chunks (``_share_deviations``),
    each chunk's at most ``cap``: a chunk another process stalled is off by that much under
    every profile, so it weighs the same in both and cannot make either look better. Means,
    not medians: where most chunks lie on a part of the grid whose cost barely varies (the
    last fifth of a triangle) every profile explains those, and a median would say nothing
    of the shares where the cost does vary. None where no share has two chunks."""
    chunks = list(chunks)
    u, l = _share_deviations(chunks, uniform), _share_deviations(chunks, learned)
    known = ~np.isnan(u)
    if not known.any():
        return None
    return (float(np.minimum(u[known], cap).mean()), float(np.minimum(l[known], cap).mean()))


def _misfit(chunks, profile: CostProfile, speeds: dict) -> float:
    """The chunks' errors of prediction over their time (a short chunk's noise counts for as
    little as its time)."""
    chunks = [c for c in chunks if c.worker in speeds]
    if not chunks:
        return 0.0
    seconds = np.array([c.seconds for c in chunks])
    predicted = profile.costs(chunks) / np.array([speeds[c.worker] for c in chunks])
    return float(np.abs(predicted - seconds).sum() / seconds.sum())


def fit(chunks: list, nblocks: int, launches: list, decay: float, smoothness: float,
        iterations: int, bins: int, start: CostProfile = None) -> tuple:
    """(CostProfile, speeds) that best explain the chunk times (see the module docstring).

    The profile and the speeds are fitted together, by Gauss-Newton on the log of the chunk
    times: log seconds_i = log cost_i(c) - log speed[worker_i]. Log misfits are relative (a
    short chunk's noise counts for as little as its time), and no range's cost can go to
    zero with its worker's speed to explain it away. (Solving the two in turn instead creeps
    along the one direction the data leave loose where shares are contiguous: a step at a
    cut between two workers against their speed ratio.) Then twice more with Huber weights:
    a chunk that stalled (another process took its core) is not where the work lies."""
    profile = CostProfile(nblocks, bins=bins)
    if start is not None and start.weights.shape == profile.weights.shape:
        profile.weights = start.weights.copy()
    age = {launch: len(launches) - 1 - i for i, launch in enumerate(launches)}
    weight = np.array([decay ** age.get(c.launch, len(launches)) for c in chunks])
    overlap = profile.overlaps([c.first for c in chunks], [c.end for c in chunks])
    log_t = np.log([c.seconds for c in chunks])
    workers = sorted({c.worker for c in chunks})
    index = np.array([workers.index(c.worker) for c in chunks])
    nbins = len(profile.weights)
    sizes = profile.sizes.astype(float)
    # neighbouring bins' difference, in the misfit's units: a unit step between bins costs
    # as much as a chunk predicted 100% off, times ``smoothness``
    penalty = np.sqrt(smoothness * len(chunks) / max(1, nbins - 1)) * \
        np.diff(np.eye(nbins), axis=0)
    c = profile.weights.copy()
    log_s = np.log(_worker_fit(overlap @ c, np.exp(log_t), weight, index, len(workers)))
    problem = _LogFit(overlap, log_t, index, penalty, sizes, nblocks)
    robust = weight
    for _ in range(3):
        c, log_s = problem.solve(c, log_s, robust, iterations * 2)
        misfit = np.abs(problem.residual(c, log_s))
        robust = weight * np.minimum(1.0, ROBUST / np.maximum(misfit, 1e-12))
    profile.weights = c
    return profile, {w: float(np.exp(s)) for w, s in zip(workers, log_s)}


@dataclass
class _LogFit:
    """min over (c, log_s) of sum_i w_i (log(overlap_i . c) - log_s[worker_i] - log_t_i)^2
    + |penalty . c|^2, with the mean cost per block held at 1 (it fixes the scale)."""
    overlap: np.ndarray
    log_t: np.ndarray
    index: np.ndarray
    penalty: np.ndarray
    sizes: np.ndarray
    nblocks: int

    def residual(self, c, log_s):
        return np.log(np.maximum(self.overlap @ c, 1e-12)) - log_s[self.index] - self.log_t

    def objective(self, c, log_s, weight):
        r = self.residual(c, log_s)
        return weight @ (r * r) + np.sum((self.penalty @ c) ** 2)

    def solve(self, c, log_s, weight, steps):
        nchunks, nbins = self.overlap.shape
        nworkers = len(log_s)
        root_w = np.sqrt(weight)
        current = self.objective(c, log_s, weight)
        for _ in range(steps):
            cost = np.maximum(self.overlap @ c, 1e-12)
            jac = np.zeros((nchunks, nbins + nworkers))
            jac[:, :nbins] = self.overlap / cost[:, None]
            jac[np.arange(nchunks), nbins + self.index] = -1.0
            rows = np.vstack([
                jac * root_w[:, None],
                np.hstack([self.penalty, np.zeros((self.penalty.shape[0], nworkers))]),
                # the step keeps the mean cost: sizes . step = 0
                1e3 * np.concatenate([self.sizes / self.nblocks, np.zeros(nworkers)])[None]])
            rhs = -np.concatenate([root_w * self.residual(c, log_s), self.penalty @ c, [0.0]])
            step = _least_squares(rows, rhs)
            for damping in (1.0, 0.5, 0.25, 0.125, 0.0625):
                trial_c = np.maximum(c + damping * step[:nbins], 1e-3)
                trial_c *= self.nblocks / (self.sizes @ trial_c)
                trial_s = log_s + damping * step[nbins:]
                value = self.objective(trial_c, trial_s, weight)
                if value <= current:
                    break
            else:
                return c, log_s                 # no step improves: at the minimum
            done = current - value <= 1e-9 * max(current, 1e-12)
            c, log_s, current = trial_c, trial_s, value
            if done:
                break
        return c, log_s


def _least_squares(rows: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """argmin |rows . x - rhs|, through the normal equations: rows has a few hundred rows
    (chunks) and ~100 columns (bins, workers), and the smoothness penalty and the mean-cost
    row keep it well conditioned, so a Cholesky solve of the small square system does what
    an SVD (``lstsq``) does at a tenth of its time (the scheduler refits on its event loop:
    at 32 workers, lstsq took 40% of the scheduler's CPU). Falls back to lstsq where the
    system is singular (a worker whose chunks say nothing)."""
    gram = rows.T @ rows
    try:
        factor = np.linalg.cholesky(gram + 1e-12 * np.trace(gram) * np.eye(len(gram)))
    except np.linalg.LinAlgError:
        return np.linalg.lstsq(rows, rhs, rcond=None)[0]
    y = np.linalg.solve(factor, rows.T @ rhs)
    return np.linalg.solve(factor.T, y)


def _worker_fit(cost, seconds, weight, index, nworkers) -> np.ndarray:
    """Per worker, its speed: the cost its chunks did over the time they took (weighted).
    (A fixed time per chunk is not fitted: where a worker's chunks are cut to equal cost,
    it cannot be told apart from the profile; chunk times are kernel times, JIT and copies
    excluded.)"""
    speeds = np.ones(nworkers)
    for w in range(nworkers):
        mine = index == w
        speeds[w] = (weight[mine] @ cost[mine]) / (weight[mine] @ seconds[mine])
    return speeds
