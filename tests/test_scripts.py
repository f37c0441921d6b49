"""Programs as users write them, run as files from a scratch folder: top-level code with no
``if __name__ == "__main__":`` guard on the embedded cluster, and a clean exit (no error
lines, exit status 0)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# where the programs users copy are written: the README's first kernel and first array
# program, then the kernels and arrays pages
PAGES = [ROOT / "README.md", ROOT / "docs" / "kernels.md", ROOT / "docs" / "arrays.md"]


def using_it_snippets() -> list:
    """The Python blocks of the README and of the kernels and arrays pages, as written there
    (the README's first kernel first)."""
    return [block for page in PAGES
            for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)]


def snippet_with(text: str) -> str:
    return next(c for c in using_it_snippets() if text in c)


def frameworks_page_program(marker: str) -> str:
    """The Python block of docs/frameworks.md that holds ``marker``."""
    page = ROOT / "docs" / "frameworks.md"
    return next(block for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
                if marker in block)


def run_script(tmp_path, code: str) -> subprocess.CompletedProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script = tmp_path / "script.py"
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def assert_clean(done: subprocess.CompletedProcess) -> None:
    assert done.returncode == 0, done.stderr
    for word in ("Traceback", "ERROR", "Error", "Exception", "Warning"):
        assert word not in done.stderr, done.stderr


@pytest.mark.timeout(600)
def test_readme_snippet_runs_as_a_plain_script(tmp_path):
    code = using_it_snippets()[0]
    assert "__main__" not in code           # as a CuPy user writes it
    done = run_script(tmp_path, code)
    assert_clean(done)
    assert done.stdout.strip().splitlines()[-1] == "[1. 3. 5. 7.]"


@pytest.mark.timeout(600)
def test_readme_templates_views_streams_and_handle_snippet(tmp_path):
    code = snippet_with("name_expressions")
    for shown in ("name_expressions", "dptx.Stream()", "dptx.Event()", "stream=s",
                  "get_elapsed_time", "distributed.wait(handle)", "[1 << 19:]"):
        assert shown in code
    done = run_script(tmp_path, code)
    assert_clean(done)
    lines = done.stdout.strip().splitlines()
    assert lines[0] == "[1. 1. 3. 3.] True"
    ms, link = lines[1].split(" ms on ")
    assert float(ms) >= 0 and link.startswith("http://")


LOOP = r'''
import numpy as np
import dptx

step = dptx.RawModule(r"""
extern "C" __global__ void step(float* u, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] = 0.5f * u[i] + 1.0f;
}""").get_function("step")
n = 1 << 16
u = dptx.zeros(n, dtype=np.float32)
for _ in range(20):
    step((n // 256,), (256,), (u, np.int32(n)))
want = np.zeros(n, np.float32)
for _ in range(20):
    want = np.float32(0.5) * want + np.float32(1.0)
print(bool((u.get() == want).all()), dptx.client().ncores() and len(dptx.client().ncores()))
# u, the module and the cluster are still alive here: the exit closes them quietly
'''


@pytest.mark.timeout(600)
def test_a_top_level_loop_of_launches_exits_cleanly_with_arrays_alive(tmp_path):
    done = run_script(tmp_path, LOOP)
    assert_clean(done)
    ok, workers = done.stdout.split()
    assert ok == "True" and int(workers) >= 1


def test_the_embedded_clusters_teardown_reports_are_dropped():
    """The in-process scheduler's "Batched Comm Closed" INFO reports (with a traceback, at
    every exit, after the cluster restored its log levels) do not reach the user; errors of
    the same logger do."""
    import logging

    from dptx.runtime.local_cluster import _quiet_teardown
    _quiet_teardown()
    logger = logging.getLogger("distributed.batched")
    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())
    handler, level = Keep(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        logger.info("Batched Comm Closed %r", "<TCP (closed)>")
        logger.info("something else")
        logger.error("Batched Comm Closed in a failure")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert seen == ["something else", "Batched Comm Closed in a failure"]


@pytest.mark.timeout(600)
def test_readme_array_api_snippet(tmp_path):
    import textwrap
    code = textwrap.dedent(snippet_with("ReductionKernel"))
    done = run_script(tmp_path, code)
    assert_clean(done)
    out = done.stdout
    assert "3.7416575 11.224972  19.131126" in out          # the row norms of arange(12)
    assert "[186. 224. 262.]" in out                        # the last row of the product


@pytest.mark.timeout(600)
def test_a_script_ending_with_work_it_did_not_wait_for_exits_cleanly(tmp_path):
    """The last line submits work and the script ends at once: the exit abandons it quietly
    (before the fix, Dask's "cannot schedule new futures after interpreter shutdown" ERROR
    came at about two exits in three; several runs so that a race shows)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(2) as pool:          # (two at a time: each waits on its cluster)
        runs = [pool.submit(run_script, tmp_path / str(i), "import dptx\nx = dptx.ones(3)\n")
                for i in range(4)]
        for done in runs:
            assert_clean(done.result())


SLOW_TEARDOWN = '''
import time
import psutil
kill = psutil.Process.kill
def kill_slowly(process):     # widens the window between Dask killing a nanny's children and
    kill(process)             # the nanny itself, where a CI run once caught the nanny
    time.sleep(0.5)           # starting a new worker and a new resource tracker
psutil.Process.kill = kill_slowly
import dptx
print(dptx.ones(3).get())
'''


@pytest.mark.timeout(600)
def test_the_exit_stops_each_nanny_before_killing_its_children(tmp_path):
    """A nanny left running while its worker is killed restarts it, and the user's terminal
    gets "resource_tracker: process died unexpectedly" and KeyError tracebacks at exit."""
    done = run_script(tmp_path, SLOW_TEARDOWN)
    assert_clean(done)
    assert done.stdout.strip() == "[1. 1. 1.]"
