"""benchmarks/scale_out.py on a small emulated cluster: 4 nodes, each a network namespace
with a shaped link where this runs as root (loopback otherwise), the real dask scheduler and
worker CLIs; its workloads' results are checked bitwise against numpy inside the benchmark
(an assertion there fails this test), and nothing it made is left behind: namespaces, links,
the bridge, processes. Timings are printed, never asserted."""
import importlib.util
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    # by path: benchmarks/ is not a package
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def emulation():
    return load("emulated_cluster")


def made_here(emulation) -> list:
    """Namespaces and links of this process's emulated clusters (their names carry its pid)."""
    tag = f"{emulation.PREFIX}-{os.getpid()}-"
    short = f"{emulation.PREFIX}{os.getpid()}"
    run = lambda *cmd: subprocess.run(cmd, capture_output=True, text=True).stdout  # noqa: E731
    names = [line.split()[0] for line in run("ip", "netns", "list").splitlines() if line]
    links = [line.split(":")[1].strip().split("@")[0]
             for line in run("ip", "-o", "link", "show").splitlines()]
    return [n for n in names if n.startswith(tag)] + [n for n in links if n.startswith(short)]


@pytest.mark.timeout(600)
def test_the_workloads_run_right_on_four_emulated_nodes_and_leave_nothing(emulation, capsys):
    scale_out = load("scale_out")
    results = scale_out.main(["--quick", "--nodes", "4", "--workloads",
                              "uniform,jacobi,triangular", "--plot", ""])
    out = capsys.readouterr().out
    why = emulation.can_emulate()
    assert ("4 emulated nodes (a network namespace each)" in out) == (why is None), out
    for name in ("uniform", "jacobi", "triangular"):
        r = results[name][4]
        assert r["seconds"] > 0 and r["tasks"] >= 1, r
    # 20 sweeps of the 512 x 512 field, one launch each, cut among the workers
    assert results["jacobi"][4]["tasks"] >= 20
    assert made_here(emulation) == []


@pytest.mark.timeout(300)
def test_an_error_inside_removes_everything_and_nodes_get_their_settings(emulation):
    from distributed import Client
    env = [{"DASK_DPTX__NANOSLEEP_SCALE": "0.25"}, {}]
    with pytest.raises(RuntimeError, match="on purpose"):
        with emulation.EmulatedCluster(2, node_env=env) as cluster:
            with Client(cluster.address, set_as_default=False) as client:
                cluster.wait(client)
                scales = client.run(lambda: __import__("dask").config.get(
                    "dptx.nanosleep-scale"))
                names = client.run(lambda dask_worker: dask_worker.name)
                by_node = {names[a]: float(s) for a, s in scales.items()}
                assert by_node == {"node-0": 0.25, "node-1": 1.0}, by_node
                if cluster.emulated:
                    hosts = sorted(a.split("//")[1].split(":")[0] for a in scales)
                    assert hosts == sorted(cluster.node_ips), (hosts, cluster.node_ips)
                    assert len(made_here(emulation)) == 2 + 2 + 1   # 2 namespaces, 2 veths, bridge
            raise RuntimeError("on purpose")
    assert cluster.leftovers() == [] and made_here(emulation) == []


@pytest.mark.skipif(os.geteuid() != 0 if hasattr(os, "geteuid") else True,
                    reason="namespaces need root")
def test_leftovers_of_a_killed_run_are_removed(emulation):
    if emulation.can_emulate() is not None:
        pytest.skip(emulation.can_emulate())
    dead = 2 ** 22 + 12345          # above pid_max's default: no process has it
    assert not os.path.exists(f"/proc/{dead}")
    name = f"{emulation.PREFIX}-{dead}-0"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        assert name in emulation.remove_leftovers()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    assert name not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                      text=True).stdout


def test_metg_is_read_where_efficiency_crosses_half(emulation):
    scale_out = load("scale_out")
    # blocks per node, seconds, tasks, scheduler CPU: efficiency 25%, 40%, 60%, 90%
    block = 0.001
    rows = [(b, b * block / e, 8, 0.0)              # 8 nodes, a chunk each: b ms chunks
            for b, e in ((1, 0.25), (2, 0.40), (4, 0.60), (8, 0.90))]
    metg, points = scale_out.metg_of(rows, block, 8)
    grains = [g for g, _ in points]
    assert grains == sorted(grains)
    assert [round(e, 2) for _, e in points] == [0.25, 0.40, 0.60, 0.90]
    # between the 40% and 60% points, halfway on a log scale
    assert np.isclose(metg, np.sqrt(grains[1] * grains[2]))
    # a dip below 50% after a point above it: METG is where it stays above
    rows[0] = (1, 1 * block / 0.55, 8, 0.0)
    metg, _ = scale_out.metg_of(rows, block, 8)
    assert np.isclose(metg, np.sqrt(grains[1] * grains[2]))
    rows[-1] = (8, 8 * block / 0.3, 8, 0.0)             # never for good
    assert scale_out.metg_of(rows, block, 8)[0] is None
