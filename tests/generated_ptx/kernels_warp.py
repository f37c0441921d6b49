"""Kernels written for Warp (warp-lang), compiled to PTX by generate.py with Warp's own
compiler (``wp.compile_aot_module``, no GPU needed). Warp passes its launch bounds and each
array by value as structs (tests/test_generated_ptx.py's ``warp_*`` helpers build them)."""
import warp as wp


@wp.kernel
def saxpy(x: wp.array(dtype=float), y: wp.array(dtype=float), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i]


@wp.kernel
def stencil(src: wp.array2d(dtype=float), dst: wp.array2d(dtype=float)):
    i, j = wp.tid()
    n, m = src.shape[0], src.shape[1]
    if i > 0 and j > 0 and i < n - 1 and j < m - 1:
        dst[i, j] = src[i - 1, j] + src[i + 1, j] + src[i, j - 1] + src[i, j + 1] - 4.0 * src[i, j]


@wp.kernel
def histogram(keys: wp.array(dtype=int), bins: wp.array(dtype=int)):
    wp.atomic_add(bins, keys[wp.tid()] % 16, 1)


@wp.kernel
def norms(v: wp.array(dtype=wp.vec3), out: wp.array(dtype=float), total: wp.array(dtype=float)):
    i = wp.tid()
    n = wp.length(v[i])
    out[i] = n
    wp.atomic_add(total, 0, n)
