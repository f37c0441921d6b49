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
    config.addinivalue_line("markers", "client_side(reason): what the test checks happens in "
                            "the client and the scheduler, the same whatever devices the "
                            "workers have: its run on the mixed cluster is exhaustive")


# The array library's tests run the same generated kernels on both clusters; what the mixed
# one adds is the GPU path (ptxas, the block-offset rewrite, the stand-in). The default run
# keeps on it a test of each family of the array library's kernels (the cheapest that covers
# it; every test runs on the CPU cluster) and the rest run there with the exhaustive ones
# (pytest -m exhaustive).
MIXED_SAMPLE = {
    "test_ufuncs_as_dptx_functions_with_their_methods",          # element-wise, ufunc methods
    "test_fuse_makes_one_kernel_with_numpys_types",               # fused kernels
    "test_reductions_on_every_kind_of_worker",                    # reductions
    "test_long_reductions_across_pieces_and_warps",               # reductions across pieces
    "test_running_sums_and_products",                             # scans
    "test_set_operations_follow_numpy",                           # sorts, unique
    "test_integer_array_indexing_follows_numpy",                  # gathers
    "test_selecting_where_a_mask_is_true",                        # compaction
    "test_ufunc_at_of_integers_by_atomics",                       # atomics
    "test_matmul_and_dot",                                        # products
    "test_linalg_cholesky_on_the_devices",                        # factorizations
    "test_histogram2d_and_histogramdd_follow_numpy",              # binning
    "test_strided_views_follow_numpy",                            # views
    "test_creation_matches_numpy_bit_for_bit",                    # creation
    "test_conversions_and_linspace_as_numpy_rounds",              # casts, ranges
    "test_outputs_that_overlap_inputs_give_numpys_results",       # out= overlaps
    "test_fft_follows_numpy",                                     # library routines: FFT
}
ARRAY_TESTS = ("test_array_api.py", "test_array_functions.py", "test_complex_and_fft.py",
               "test_index_objects_and_dtype.py")
# test_mixed_cluster.py runs the corpus on a mixed cluster (an even split, the stand-in's
# launches counted; a sample of it by default): test_corpus_cluster's run there is exhaustive.
MIXED_ELSEWHERE = ("test_corpus_cluster.py",)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "[mixed" not in item.name:
            continue
        if item.path.name in MIXED_ELSEWHERE or item.get_closest_marker("client_side") or (
                item.path.name in ARRAY_TESTS and item.originalname not in MIXED_SAMPLE):
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


@pytest.fixture(params=["device", "kernels"])
def linalg_path(request):
    """numpy's linear algebra both ways (the ``dptx.library`` setting): as library routines
    on the devices (numpy's LAPACK on CPU workers, CuPy's on the GPU stand-in), and as
    dptx's own kernels."""
    with dask.config.set({"dptx.library": request.param}):
        yield request.param


@pytest.fixture
def kernels():
    """numpy's linear algebra as dptx's own kernels (``dptx.library = "kernels"``): for the
    tests of what those kernels promise beyond numpy's (each sum in order, bit for bit)."""
    with dask.config.set({"dptx.library": "kernels"}):
        yield

