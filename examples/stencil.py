"""Heat diffusion on a 2D grid: a 5-point stencil over many launches (ping-pong buffers),
checked against the same iteration in numpy."""
import sys
import time

import numpy as np

import dptx

SOURCE = r'''
extern "C" __global__ void heat_step(const float* u, float* v, int nx, int ny, float alpha) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny) return;
    int i = y * nx + x;
    if (x == 0 || y == 0 || x == nx - 1 || y == ny - 1) { v[i] = u[i]; return; }
    v[i] = u[i] + alpha * (u[i - 1] + u[i + 1] + u[i - nx] + u[i + nx] - 4.0f * u[i]);
}
'''


def numpy_steps(u, steps, alpha):
    u = u.copy()
    for _ in range(steps):
        v = u.copy()
        v[1:-1, 1:-1] = u[1:-1, 1:-1] + np.float32(alpha) * (
            u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - np.float32(4.0) * u[1:-1, 1:-1])
        u = v
    return u


def main(nx=256, ny=192, steps=60, alpha=0.2):
    u0 = np.zeros((ny, nx), np.float32)
    u0[ny // 3: 2 * ny // 3, nx // 3: 2 * nx // 3] = 100.0
    kernel = dptx.RawModule(SOURCE).get_function("heat_step")
    a, b = dptx.asarray(u0), dptx.zeros((ny, nx), np.float32)
    block = (32, 8)
    grid = ((nx + 31) // 32, (ny + 7) // 8)
    t0 = time.perf_counter()
    for _ in range(steps):
        kernel(grid, block, (a, b, np.int32(nx), np.int32(ny), np.float32(alpha)))
        a, b = b, a
    result = a.get()
    elapsed = time.perf_counter() - t0
    expected = numpy_steps(u0, steps, alpha)
    err = float(np.max(np.abs(result - expected)))
    ok = err < 1e-3
    print(f"stencil: {steps} launches on {ny}x{nx} in {elapsed:.2f} s, "
          f"max abs error vs numpy {err:.2e} -> {'OK' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
