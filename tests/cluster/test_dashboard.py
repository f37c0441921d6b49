"""The dptx dashboard page and JSON state, over HTTP."""
import json
import urllib.request

import numpy as np

import dptx


def fetch(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read().decode()


def dashboard_url(client):
    return client.dashboard_link.rsplit("/", 1)[0]


def test_state_json_and_page(client):
    kernel = dptx.RawModule(r'''extern "C" __global__ void bump(int* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }''').get_function("bump")
    x = dptx.zeros(4096, np.int32)
    for _ in range(2):
        kernel((32,), (128,), (x, 4096))
    assert np.array_equal(x.get(), np.full(4096, 2, np.int32))
    # (the two launches ran fused, each worker's chunk the kernel's first run there: no
    # speed measured yet; the next launch's chunks measure it)
    kernel((32,), (128,), (x, 4096))
    assert np.array_equal(x.get(), np.full(4096, 3, np.int32))

    base = dashboard_url(client)
    status, body = fetch(base + "/dptx/api/state")
    assert status == 200
    state = json.loads(body)
    workers = state["workers"]
    assert set(workers) == set(client.nthreads())
    for addr, w in workers.items():
        assert w["device"] == ("gpu" if w["gpus"] else "cpu") and w["nthreads"] == 1 and w["name"]
    key = kernel.model_key                     # (bump@<its module's digest>)
    assert all(k["name"] == "bump" for w in workers.values() for k in w["kernels"].values()
               if k["title"] == "bump")
    blocks = {addr: w["kernels"].get(key, {}).get("blocks", 0) for addr, w in workers.items()}
    assert sum(blocks.values()) == 32          # the last launch, all its blocks
    shares = [w["kernels"][key]["share"] for w in workers.values() if key in w["kernels"]]
    assert abs(sum(shares) - 1.0) < 1e-9
    rates = [w["kernels"][key]["blocks_per_s"] for w in workers.values()
             if key in w["kernels"]]
    assert any(r is not None for r in rates)
    assert all(r > 0 for r in rates if r is not None)

    status, page = fetch(base + "/individual-dptx")
    assert status == 200 and "bokeh" in page.lower()
    status, main = fetch(base + "/status")
    assert "individual-dptx" in main        # listed in the "More" menu


def test_kernels_appear_under_their_cxx_names(client):
    mod = dptx.RawModule(r'''template <typename T> __global__ void put(T* out, T v) {
        out[blockIdx.x * blockDim.x + threadIdx.x] = v; }''', name_expressions=("put<float>",))
    x = dptx.zeros(16 * 64, np.float32)
    mod.get_function("put<float>")((16,), (64,), (x, 1.5))
    assert (x.get() == 1.5).all()
    status, body = fetch(dashboard_url(client) + "/dptx/api/state")
    titles = {k["title"] for w in json.loads(body)["workers"].values()
              for k in w["kernels"].values() if k["name"] == "_Z3putIfEvPT_S0_"}
    assert titles == {"put<float>"}


def test_kernels_of_one_name_in_two_modules_are_learned_apart(client):
    """The scheduler learns speeds and costs by kernel: two modules' kernels of one name
    (``kernel``, as ElementwiseKernel names its kernels by default) are different code, and
    keep entries of their own (``RawKernel.model_key``: the name and the module's digest)."""
    cheap = dptx.RawModule(r'''extern "C" __global__ void kernel(float* x) {
        x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }''').get_function("kernel")
    dear = dptx.RawModule(r'''extern "C" __global__ void kernel(float* x) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; float v = x[i];
        for (int k = 0; k < 2000; k++) v = v * 0.5f + 1.0f;
        x[i] = v; }''').get_function("kernel")
    assert cheap.name == dear.name == "kernel" and cheap.model_key != dear.model_key
    x = dptx.zeros(64 * 128, np.float32)
    for _ in range(3):
        cheap((64,), (128,), (x,))
        dear((64,), (128,), (x,))
    assert np.allclose(x.get(), 2.0)
    state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
    entries = [(key, k) for w in state["workers"].values() for key, k in w["kernels"].items()
               if k["name"] == "kernel"]
    assert {key for key, _ in entries} == {cheap.model_key, dear.model_key}
    labels = {key: k["label"] for key, k in entries}
    assert len(set(labels.values())) == 2 and all(v.startswith("kernel [") for v in labels.values())
    from dptx.cli import cluster_text
    text = cluster_text(client, client.scheduler.address)   # (`dptx info`'s)
    assert all(f"    {label}: " in text for label in labels.values()), text
