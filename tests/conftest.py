"""Settings of the whole suite, made before any test (or cluster worker, which inherits the
environment) compiles a kernel."""
import contextlib
import fcntl
import os
import shutil
import tempfile

# Every kernel's own form without LLVM's passes, cached on disk, never optimized in the
# background (dptx/cpu/executor.py, tier_policy): compile time is most of a cold run (the
# quick tier's O1 passes took 2.7x as long over tests/isa), and the forms, the translation
# and the results are what the tests check. The other tiers keep their own tests:
# tests/test_cpu_quick_tier.py, and tests/test_corpus_cpu.py (every corpus kernel at O3).
os.environ.setdefault("DPTX_CPU_QUICK_TIER", "unoptimized")

# The suite's clusters (and the scripts' embedded ones: their processes inherit this) keep
# Dask's upkeep to what the tests use: an idle scheduler and two workers otherwise burn about
# 30% of a core (the event loop's tick every 20 ms, the statistical profiler every 10 ms, the
# system monitor every 0.5 s), CPU the tests' own work waits for on 2 cores. No test reads
# the profiler, the tick or the monitor.
for _name, _value in (("DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL", "1s"),
                      ("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False"),
                      ("DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL", "2s")):
    os.environ.setdefault(_name, _value)

import pytest   # noqa: E402 - after the environment is set


@pytest.fixture(params=[pytest.param(False, id="sample"),
                        pytest.param(True, id="every", marks=pytest.mark.exhaustive)])
def every(request):
    """False in the default run: the test checks its sample of cases, those that take
    different code (each test says how it chose them); True under ``pytest -m exhaustive``:
    every combination it lists."""
    return request.param


# -- tests that time speeds, under pytest-xdist ---------------------------------------------------
# The suite runs on every core (``-n auto`` in setup.cfg): most tests wait on round trips
# between processes, and two at once fill a 2-core machine's idle time. A test that measures
# speed or wall-clock bounds (the balancer's split between a fast and a slow worker, a sleep's
# length) needs the machine to itself: it says so with ``@pytest.mark.alone("why")``. Each
# test holds a shared lock on a file of this run while it runs, an ``alone`` test an
# exclusive one; a turnstile lock taken before either keeps the shared holders from starving
# a waiting ``alone`` test (the other worker waits at the turnstile, not in a test).
LOCK_DIR_KEY = "dptx_test_lock_dir"


def pytest_configure(config):
    config.addinivalue_line("markers", "alone(reason): the test measures speed or time and runs "
                            "with no other test of the run beside it (under pytest-xdist)")
    if getattr(config, "workerinput", None) is None and config.pluginmanager.hasplugin("xdist") \
            and config.getoption("numprocesses", None):
        config._dptx_lock_dir = tempfile.mkdtemp(prefix="dptx-tests-")


def pytest_unconfigure(config):
    lock_dir = getattr(config, "_dptx_lock_dir", None)
    if lock_dir:
        shutil.rmtree(lock_dir, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """(xdist, in the controller) Every worker gets this run's lock folder."""
    lock_dir = getattr(node.config, "_dptx_lock_dir", None)
    if lock_dir:
        node.workerinput[LOCK_DIR_KEY] = lock_dir


@contextlib.contextmanager
def _flock(path: str, mode: int):
    with open(path, "a+") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    lock_dir = (getattr(item.config, "workerinput", None) or {}).get(LOCK_DIR_KEY)
    if not lock_dir:                    # a run in one process: nothing runs beside a test
        yield
        return
    turnstile, machine = os.path.join(lock_dir, "turnstile"), os.path.join(lock_dir, "machine")
    if item.get_closest_marker("alone") is not None:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(machine, fcntl.LOCK_EX):
            yield
        return
    with contextlib.ExitStack() as held:
        with _flock(turnstile, fcntl.LOCK_EX):
            held.enter_context(_flock(machine, fcntl.LOCK_SH))
        yield
