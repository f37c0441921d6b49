"""The seconds a chunk costs a worker beyond its kernels (scheduler_plugins.overhead), from
given chunk timings: span times busy lanes minus kernel time, per chunk; the compiling first
launch left out; a stalled launch outvoted."""
import pytest

from scheduler_plugins.overhead import OverheadModel


def one_launch(model, launch, worker="w", lanes=1, chunks=4, kernel=0.1, gap=0.003,
               compile_seconds=0.0):
    """``chunks`` back to back on one lane: each ``kernel`` seconds of kernels inside a task
    ``gap`` longer (the first also compiles)."""
    t = 100.0
    for i in range(chunks):
        task = kernel + gap + (compile_seconds if i == 0 else 0.0)
        model.observe("k", launch, worker, lanes, t, t + task, kernel)
        t += task
    model.finish(launch)


def test_per_chunk_overhead_after_the_compiling_launch():
    model = OverheadModel()
    one_launch(model, "L0", compile_seconds=2.0)
    assert model.overhead("k", "w") is None            # the first launch compiled: left out
    one_launch(model, "L1")
    assert model.overhead("k", "w") == pytest.approx(0.003)
    assert model.snapshot() == {"k": {"w": pytest.approx(0.003)}}


def test_a_stalled_launch_is_outvoted_and_lanes_count():
    model = OverheadModel()
    for i in range(5):
        one_launch(model, f"L{i}", gap=0.5 if i == 3 else 0.002)
    assert model.overhead("k", "w") == pytest.approx(0.002)
    # two lanes each running two chunks of 0.1 s, 0.21 s in all: 0.02 s lost over 4 chunks
    two = OverheadModel()
    for launch in ("A", "B"):
        for lane in range(2):
            two.observe("k", launch, "w", 2, 0.0, 0.105, 0.1)
            two.observe("k", launch, "w", 2, 0.105, 0.21, 0.1)
        two.finish(launch)
    assert two.overhead("k", "w") == pytest.approx(0.005)


def test_a_worker_that_leaves_is_forgotten():
    model = OverheadModel()
    for i in range(3):
        one_launch(model, f"L{i}")
    model.forget_worker("w")
    assert model.overhead("k", "w") is None and model.snapshot() == {}
