"""Settings of the whole suite, made before any test (or cluster worker, which inherits the
environment) compiles a kernel."""
import os

# Every kernel's own form at LLVM's quick tier, cached on disk, never optimized in the
# background (dptx/cpu/executor.py, tier_policy): compile time is most of a cold run, and the
# forms, the translation and the results are what the tests check. The O3 builds keep their
# own tests: tests/test_cpu_quick_tier.py and tests/test_corpus_cpu.py (every corpus kernel).
os.environ.setdefault("DPTX_CPU_QUICK_TIER", "only")
