"""How fast each worker runs each kernel: blocks per second of compute per worker thread,
learned from finished chunks (a history-based performance model, as StarPU keeps for
CPU+GPU machines). Stock Dask keeps one duration average per task prefix, which cannot tell
a fast worker from a slow one."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Estimate:
    rate: float              # blocks per second of compute, per thread (per GPU)
    samples: int = 1
    short: bool = False      # learnt only from chunks too short to measure well
    suspects: list = field(default_factory=list)  # recent outlying rates, not yet believed


class ThroughputModel:
    """Exponentially smoothed blocks/s per (kernel, worker).

    A sample more than ``outlier_factor`` away from the estimate is set aside (a page fault
    storm, a JIT compile inside the first chunk, a stalled thread); ``patience`` such samples in
    a row on the same side mean the worker really changed speed (another process started on
    its core), and the estimate jumps to their mean. A chunk that ran less than
    ``short_seconds`` is mostly fixed cost: it counts only while nothing longer was seen.
    """

    def __init__(self, alpha: float = 0.5, outlier_factor: float = 3.0, patience: int = 2,
                 short_seconds: float = 0.002):
        self.alpha = alpha
        self.short_seconds = short_seconds
        self.outlier_factor = outlier_factor
        self.patience = patience
        self._estimates: dict = {}

    def observe(self, kernel: str, worker: str, blocks: int, seconds: float) -> None:
        if blocks <= 0 or seconds <= 0:
            return
        rate = blocks / seconds
        short = seconds < self.short_seconds
        est = self._estimates.get((kernel, worker))
        if est is None or (est.short and not short):
            self._estimates[(kernel, worker)] = Estimate(rate, short=short)
            return
        if short and not est.short:
            # A chunk of a few blocks (the edge of a stencil's range, say) is mostly the
            # launch's fixed cost: it says little about the speed per block.
            return
        ratio = rate / est.rate
        if 1 / self.outlier_factor <= ratio <= self.outlier_factor:
            est.rate += self.alpha * (rate - est.rate)
            est.samples += 1
            est.suspects.clear()
            return
        if est.suspects and (est.suspects[-1] > est.rate) != (rate > est.rate):
            est.suspects.clear()
        est.suspects.append(rate)
        if len(est.suspects) >= self.patience:
            est.rate = sum(est.suspects) / len(est.suspects)
            est.samples += len(est.suspects)
            est.suspects.clear()

    def rate(self, kernel: str, worker: str):
        est = self._estimates.get((kernel, worker))
        return None if est is None else est.rate

    def samples(self, kernel: str, worker: str) -> int:
        est = self._estimates.get((kernel, worker))
        return 0 if est is None else est.samples

    def kernels(self) -> list:
        return sorted({k for k, _ in self._estimates})

    def forget_worker(self, worker: str) -> None:
        for key in [k for k in self._estimates if k[1] == worker]:
            del self._estimates[key]

    def rates_for(self, kernel: str, workers: dict) -> dict:
        """Per-thread rate of every worker for ``kernel`` (see ``rates_for``)."""
        known = {w: self.rate(kernel, w) for w in workers if self.rate(kernel, w) is not None}
        return rates_for(known, workers)

    def snapshot(self, kernels: set = None) -> dict:
        """kernel -> {worker: [blocks/s per thread, samples]} (what clients plan from), of
        every kernel or of ``kernels``."""
        out: dict = {}
        for (kernel, worker), est in self._estimates.items():
            if kernels is None or kernel in kernels:
                out.setdefault(kernel, {})[worker] = [est.rate, est.samples]
        return out


def rates_for(known: dict, priors: dict) -> dict:
    """Per-thread rate of every worker of ``priors`` (address -> prior rate per thread, from
    its device kind): measured where ``known`` has it; else scaled from the measured workers
    by the ratio of priors; else the prior itself."""
    known = {w: r for w, r in known.items() if w in priors}
    if not known:
        return dict(priors)
    # blocks/s per unit of prior, averaged over the measured workers
    scale = sum(known[w] / priors[w] for w in known) / len(known)
    return {w: known.get(w, priors[w] * scale) for w in priors}
