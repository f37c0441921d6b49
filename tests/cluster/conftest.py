"""The clusters the distributed tests share: 2 worker processes with 1 thread each, first two
CPU workers, then one GPU worker (the CuPy stand-in of ``tests/cupy_standin``, tests only) and
one CPU worker. Every test that takes ``client`` runs on both (ids ``[cpu]`` and ``[mixed]``);
``DPTX_TEST_CLUSTER=cpu`` (or ``mixed``) runs one kind. A test whose subject only CPU workers
have (the CPU executor's bounds checks, fused launches) says so with
``@pytest.mark.cpu_workers("why")`` and is skipped on the mixed cluster."""
import os

import dask.config
import pytest
from distributed import Client

import dptx
from tests.cluster.clusters import cpu_cluster, mixed_cluster

KINDS = [k for k in os.environ.get("DPTX_TEST_CLUSTER", "cpu,mixed").split(",") if k]


def pytest_configure(config):
    config.addinivalue_line("markers", "cpu_workers(reason): the test needs a cluster of CPU "
                            "workers only (skipped on the mixed one)")


# The array library's tests run the same generated kernels on both clusters. On the mixed one
# (what it adds: the GPU path, with ptxas, the block-offset rewrite and the stand-in) the
# default run keeps a test of each family of kernels: these, the heaviest, repeat families
# that lighter mixed tests cover (histograms and products, float16 through the corpus's fp16
# kernels, LU/QR/eigh beside Cholesky, sorts beside unique and quantiles, row and column
# reductions beside the long reductions across pieces, stacked matmul beside matmul/dot), and
# run on the mixed cluster with the exhaustive ones (pytest -m exhaustive).
MIXED_EXHAUSTIVE = {
    "test_binning_interpolation_and_products_follow_numpy",
    "test_float16_computes_as_numpys_half_loops",
    "test_linalg_solve_inv_det_by_lu_on_the_devices",
    "test_sort_and_argsort_as_numpys_stable_sort",
    "test_eigh_and_eigvalsh_follow_numpy",
    "test_qr_is_lapacks_to_rounding",
    "test_column_reductions_walk_rows_in_order",
    "test_row_reductions_in_each_mode",
    "test_matmul_of_stacks_and_dot_of_more_dimensions",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.originalname in MIXED_EXHAUSTIVE and "[mixed" in item.name:
            item.add_marker(pytest.mark.exhaustive)


@pytest.fixture(scope="session", params=KINDS)
def cluster_kind(request):
    if request.param == "mixed":
        from tests.test_ptxas import ptxas
        if not ptxas():
            pytest.skip("the CuPy stand-in needs ptxas (nvidia-cuda-nvcc, the test extra)")
    return request.param


@pytest.fixture(scope="session")
def cluster(cluster_kind):
    with (mixed_cluster() if cluster_kind == "mixed" else cpu_cluster()) as c:
        yield c


@pytest.fixture(scope="session")
def session_client(cluster):
    with Client(cluster, set_as_default=False) as c:
        c.wait_for_workers(2, timeout=120)
        yield c
        dptx.shutdown()


@pytest.fixture
def client(request, cluster_kind, session_client):
    """The session cluster, made dptx's cluster again for each test (tests with clusters of
    their own connect dptx elsewhere)."""
    marker = request.node.get_closest_marker("cpu_workers")
    if marker is not None and cluster_kind != "cpu":
        pytest.skip(f"CPU workers only: {marker.args[0] if marker.args else ''}")
    # a test before may have left a worker restarting (killed on purpose, or a memory limit)
    session_client.wait_for_workers(2, timeout=120)
    dptx.connect(session_client)
    return session_client


@pytest.fixture
def chunks8():
    """Launches split into 8 chunks (4 per worker thread)."""
    with dask.config.set({"dptx.chunks": 8}):
        yield
