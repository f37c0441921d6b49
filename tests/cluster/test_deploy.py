"""The ways users run dptx: the embedded cluster (examples, settings from the environment) and
a deployed cluster started with the dask CLI and the dptx preloads."""
import os
import pathlib
import socket
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ["vecadd.py", "matmul.py", "black_scholes.py", "histogram.py", "stencil.py"]


def run_python(args, env_extra, timeout=240):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_run_on_the_embedded_cluster(example):
    proc = run_python([f"examples/{example}"], {"DASK_DPTX__LOCAL__N_WORKERS": "2",
                                                "DASK_DPTX__LOCAL__THREADS_PER_WORKER": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout and ("OK" in proc.stdout or "True" in proc.stdout)


def test_local_settings_reach_the_embedded_cluster():
    code = ("import dptx, dptx.runtime.cluster as r; c = r.get_client(); "
            "print(len(c.nthreads()), sorted(set(c.nthreads().values())))")
    proc = run_python(["-c", code], {"DASK_DPTX__LOCAL__N_WORKERS": "3",
                                     "DASK_DPTX__LOCAL__THREADS_PER_WORKER": "1"}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "3 [1]"


def stop_processes(procs) -> None:
    """Terminate the processes a test started, the scheduler (the first) last: a worker whose
    scheduler went first may wait out its reconnection (8 s seen) before it exits. Kill what
    lingers."""
    workers, scheduler = procs[1:], procs[:1]
    for group in (workers, scheduler):
        for p in group:
            p.terminate()
        for p in group:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(300)
def test_deployed_cluster_with_dask_cli(tmp_path):
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = []
    try:
        procs.append(subprocess.Popen(
            [*dask, "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", ":0",
             "--preload", "scheduler_plugins"], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL))
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
                 "--preload", "dptx.worker", "--no-dashboard", "--local-directory", str(tmp_path)],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        code = (
            "import time, dptx, dptx.runtime.cluster as r\n"
            "c = r.get_client()\n"
            "deadline = time.time() + 60\n"
            "while len(c.nthreads()) < 2 and time.time() < deadline: time.sleep(0.2)\n"
            "print('workers', len(c.nthreads()))\n"
            "print('resources', sorted(w['resources'].get('CPU') for w in c.scheduler_info()['workers'].values()))\n"
            "import runpy; runpy.run_path('examples/vecadd.py', run_name='not_main')['main'](100_000) or exit(1)\n")
        proc = run_python(["-c", code], {"DASK_DPTX__SCHEDULER_ADDRESS": address}, timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "workers 2" in proc.stdout and "resources [1.0, 1.0]" in proc.stdout
        assert "matches numpy bitwise: True" in proc.stdout
    finally:
        stop_processes(procs)


@pytest.mark.timeout(300)
def test_a_lost_scheduler_is_reported_at_once(tmp_path):
    """Killing the scheduler under a program: its next dptx call raises ClusterLostError at
    once (not after distributed's 30 s of reconnection attempts), its arrays say they are
    lost, and nothing hangs."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
         str(port), "--dashboard-address", ":0", "--preload", "scheduler_plugins"], cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1",
         "--preload", "dptx.worker", "--no-dashboard", "--local-directory", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    code = (
        "import os, signal, time, numpy as np, dptx\n"
        f"dptx.connect({address!r})\n"
        "c = dptx.client()\n"
        "deadline = time.time() + 60\n"
        "while len(c.nthreads()) < 1 and time.time() < deadline: time.sleep(0.2)\n"
        "a = dptx.asarray(np.arange(10.0))\n"
        "print('before', (a * 2).get().sum())\n"
        f"os.kill({scheduler.pid}, signal.SIGKILL)\n"
        "time.sleep(1)\n"
        "for what in ('a.get()', '(a + 1).get()'):\n"
        "    t0 = time.time()\n"
        "    try:\n"
        "        eval(what)\n"
        "        print(what, 'no error')\n"
        "    except dptx.DptxError as e:\n"
        "        print(what, type(e).__name__, round(time.time() - t0, 1), str(e).split(':')[0])\n")
    try:
        proc = run_python(["-c", code], {}, timeout=120)
        lines = proc.stdout.splitlines()
        assert "before 90.0" in lines, proc.stdout + proc.stderr
        first = next(line for line in lines if line.startswith("a.get()")).split()
        assert first[1] == "ClusterLostError" and float(first[2]) < 5, lines
        second = next(line for line in lines if line.startswith("(a + 1)")).split()
        assert second[3] == "DptxError" and float(second[4]) < 5, lines
        assert "lost" in proc.stdout
    finally:
        for p in (scheduler, worker):
            p.kill()
            p.wait(timeout=20)
