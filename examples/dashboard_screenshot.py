"""Run a few launches on a 2-worker cluster with the dptx scheduler plugin and take a
screenshot of the dashboard's dptx page in headless Chromium (for the README).

    python examples/dashboard_screenshot.py [out.png]
"""
import logging
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from distributed import Client, LocalCluster

import dptx

MANDEL = r'''
extern "C" __global__ void mandelbrot(int* out, int w, int h, int max_iter) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float cr = -2.0f + 3.0f * x / w, ci = -1.2f + 2.4f * y / h, zr = 0, zi = 0;
    int i = 0;
    while (i < max_iter && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr; zi = 2.0f * zr * zi + ci; zr = t; i++;
    }
    out[y * w + x] = i;
}'''
SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}'''


def main(out="docs/dptx-dashboard.png"):
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        raise SystemExit("needs Chromium (apt-get install chromium)")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        mandel = dptx.RawModule(MANDEL).get_function("mandelbrot")
        saxpy = dptx.RawModule(SAXPY).get_function("saxpy")
        img = dptx.zeros((384, 512), np.int32)
        x = dptx.asarray(np.ones(1 << 20, np.float32))
        y = dptx.zeros(1 << 20, np.float32)
        for _ in range(6):
            mandel((32, 24), (16, 16), (img, 512, 384, 300))
            saxpy(((1 << 20) // 256,), (256,), (np.float32(2), x, y, np.int32(1 << 20)))
            img.get()
            time.sleep(0.3)
        url = client.dashboard_link.rsplit("/", 1)[0] + "/individual-dptx"
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--disable-quic", "--no-first-run", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync",
                            f"--user-data-dir={profile}", "--hide-scrollbars",
                            "--window-size=1100,900", "--virtual-time-budget=8000",
                            f"--screenshot={out}", url], check=True, timeout=120,
                           capture_output=True)
        dptx.shutdown()
    print(f"screenshot of {url} written to {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
