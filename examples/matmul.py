"""Tiled shared-memory matrix multiply (barriers in the k loop), checked against numpy."""
import sys

import numpy as np

import dptx

TILE = 16
SOURCE = r'''
#define TILE %d
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        int ka = t * TILE + threadIdx.x, kb = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
        Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}
''' % TILE


def main(M=200, N=300, K=250):
    rng = np.random.default_rng(1)
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    kernel = dptx.RawModule(SOURCE).get_function("matmul")
    dA, dB = dptx.asarray(A), dptx.asarray(B)
    dC = dptx.zeros((M, N), dtype=np.float32)
    grid = ((N + TILE - 1) // TILE, (M + TILE - 1) // TILE)
    kernel(grid, (TILE, TILE), (dA, dB, dC, np.int32(M), np.int32(N), np.int32(K)))
    C = dC.get()
    expected = A.astype(np.float64) @ B.astype(np.float64)
    err = float(np.max(np.abs(C - expected)))
    ok = err < 1e-3
    print(f"matmul {M}x{K} @ {K}x{N}: max abs error vs numpy {err:.2e} -> {'OK' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
