"""Computations written for tinygrad, whose kernels generate.py renders to PTX with
tinygrad's own PTX renderer (on its NULL device: no backend needed). Each takes its inputs as
tinygrad Tensors (shapes in INPUTS) and returns the Tensor to compute; the tests compute the
same with numpy (tests/test_generated_ptx.py, TINYGRAD_REFERENCES)."""
from tinygrad import dtypes


def saxpy_sum(x, y):
    return (x * 3 + y).sum()


def softmax(x):
    return x.softmax(axis=1)


def layer_norm(x):
    return x.layernorm(axis=1)


def matmul(a, b):
    return a @ b


def cumsum(x):
    return x.cumsum()


# name -> (function, input shapes, dtype)
COMPUTATIONS = {
    "saxpy_sum": (saxpy_sum, [(1000,), (1000,)], dtypes.float32),
    "softmax": (softmax, [(16, 100)], dtypes.float32),
    "layer_norm": (layer_norm, [(8, 64)], dtypes.float32),
    "matmul": (matmul, [(32, 48), (48, 40)], dtypes.float32),
    "cumsum": (cumsum, [(300,)], dtypes.float32),
}
