"""A cluster of 2 worker processes with 1 thread each (as the issue asks), shared by the
distributed tests of a session."""
import logging
import dask.config
import pytest
from distributed import Client, LocalCluster

import dptx


@pytest.fixture(scope="session")
def cluster():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as c:
        yield c


@pytest.fixture(scope="session")
def session_client(cluster):
    with Client(cluster, set_as_default=False) as c:
        yield c
        dptx.shutdown()


@pytest.fixture
def client(session_client):
    """The session cluster, made dptx's cluster again for each test (tests with clusters of
    their own connect dptx elsewhere)."""
    dptx.connect(session_client)
    return session_client


@pytest.fixture
def chunks8():
    """Launches split into 8 chunks (4 per worker thread)."""
    with dask.config.set({"dptx.chunks": 8}):
        yield
