"""The dptx command (``dptx check``, ``dptx info``) and ``python -m dptx.check``, run as a user
would from a folder outside the repository."""
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
from distributed import Client

import dptx
from tests.cluster.clusters import cpu_cluster


def run(args, cwd, timeout=600):
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def dptx_command() -> list:
    found = shutil.which("dptx", path=str(pathlib.Path(sys.executable).parent))
    if found is None:
        pytest.skip("the dptx console script is not installed (pip install -e .)")
    return [found]


def test_check_runs_the_shipped_corpus_from_any_folder(tmp_path):
    done = run([sys.executable, "-m", "dptx.check", "--only", "saxpy", "matmul_tiled_f32",
                "--sub-grids"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "80 cases" in done.stdout and "all cases agree" in done.stdout
    assert done.stdout.count("  ok  ") == 2
    same = run(dptx_command() + ["check", "--only", "saxpy"], tmp_path)
    assert same.returncode == 0 and "all cases agree" in same.stdout, same.stdout + same.stderr


def test_check_names_an_unknown_case(tmp_path):
    done = run(dptx_command() + ["check", "--only", "no_such_kernel"], tmp_path)
    assert done.returncode == 2
    assert "no case named no_such_kernel" in done.stderr and "saxpy" in done.stderr


def test_info_without_a_cluster_describes_this_machine(tmp_path):
    done = run(dptx_command() + ["info"], tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"dptx {dptx.__version__}: NVRTC " in done.stdout
    assert "CPU cores; GPUs: " in done.stdout and "embedded cluster" in done.stdout


@pytest.mark.timeout(600)
def test_info_shows_a_clusters_workers_and_learned_kernels(tmp_path):
    with cpu_cluster() as cluster, Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            k = dptx.RawModule(r'''extern "C" __global__ void twice(float* x) {
                x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }''').get_function("twice")
            x = dptx.ones(64 * 128, np.float32)
            for _ in range(3):
                k((64,), (128,), (x,))
            assert (x.get() == 8).all()
            done = run(dptx_command() + ["info", "--scheduler", cluster.scheduler_address],
                       tmp_path, timeout=300)
        finally:
            dptx.shutdown()
    assert done.returncode == 0, done.stderr
    assert "2 workers" in done.stdout and done.stdout.count(": cpu, 1 threads") == 2
    assert "learned kernels" in done.stdout and "twice: " in done.stdout


def test_info_says_when_the_scheduler_cannot_be_reached(tmp_path):
    done = run(dptx_command() + ["info", "--scheduler", "tcp://127.0.0.1:9"], tmp_path,
               timeout=300)
    assert done.returncode == 1 and "cannot reach the scheduler at tcp://127.0.0.1:9" in done.stderr
