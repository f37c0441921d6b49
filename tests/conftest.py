"""Settings of the whole suite, made before any test (or cluster worker, which inherits the
environment) compiles a kernel."""
import os

# Every kernel's own form without LLVM's passes, cached on disk, never optimized in the
# background (dptx/cpu/executor.py, tier_policy): compile time is most of a cold run (the
# quick tier's O1 passes took 2.7x as long over tests/isa), and the forms, the translation
# and the results are what the tests check. The other tiers keep their own tests:
# tests/test_cpu_quick_tier.py, and tests/test_corpus_cpu.py (every corpus kernel at O3).
os.environ.setdefault("DPTX_CPU_QUICK_TIER", "unoptimized")

import pytest   # noqa: E402 - after the environment is set


@pytest.fixture(params=[pytest.param(False, id="sample"),
                        pytest.param(True, id="every", marks=pytest.mark.exhaustive)])
def every(request):
    """False in the default run: the test checks its sample of cases, those that take
    different code (each test says how it chose them); True under ``pytest -m exhaustive``:
    every combination it lists."""
    return request.param
