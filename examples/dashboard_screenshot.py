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


def screenshot(browser, url, wait=6.0, size=(1100, 950)) -> bytes:
    """PNG of ``url`` once its Bokeh documents arrived over their websocket: headless
    Chromium driven through the DevTools protocol (``--screenshot`` would shoot too early)."""
    import base64
    import json
    import socket
    import urllib.request

    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                 "--disable-quic", "--no-first-run", "--disable-background-networking",
                                 "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                                 f"--user-data-dir={profile}", f"--remote-debugging-port={port}",
                                 f"--window-size={size[0]},{size[1]}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                try:
                    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=1))
                    page = next(t for t in targets if t.get("type") == "page")
                    break
                except Exception:
                    time.sleep(0.1)
            else:
                raise RuntimeError("Chromium did not start its DevTools endpoint")

            async def drive():
                ws = await websocket_connect(page["webSocketDebuggerUrl"], max_message_size=2**28)
                ids = iter(range(1, 1000))

                async def call(method, **params):
                    i = next(ids)
                    await ws.write_message(json.dumps({"id": i, "method": method, "params": params}))
                    while True:
                        msg = json.loads(await ws.read_message())
                        if msg.get("id") == i:
                            return msg.get("result", {})
                await call("Page.enable")
                await call("Page.navigate", url=url)
                import asyncio
                await asyncio.sleep(wait)
                shot = await call("Page.captureScreenshot", format="png")
                ws.close()
                return base64.b64decode(shot["data"])
            return IOLoop.current().run_sync(drive, timeout=wait + 60)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


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
        png = screenshot(browser, url)
        with open(out, "wb") as fh:
            fh.write(png)
        dptx.shutdown()
    print(f"screenshot of {url} written to {out}")


if __name__ == "__main__":
    main(*sys.argv[1:])
