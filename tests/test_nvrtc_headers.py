"""CUDA C that includes the C library headers real kernels include compiles under NVRTC
(dptx's device-side stand-ins), and a host-only header gets an error that says so."""
import math
import subprocess
import sys

import numpy as np
import pytest

import dptx

SOURCE = r'''
#include <stdio.h>
#include <assert.h>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmath>
#include <cstdint>
extern "C" __global__ void consts(double* d, int64_t* i, float* f) {
    d[0] = M_PI; d[1] = M_SQRT2; d[2] = DBL_EPSILON;
    f[0] = FLT_MAX; f[1] = INFINITY; f[2] = sqrtf(f[3]);
    i[0] = INT_MAX; i[1] = LLONG_MIN; i[2] = UINT32_MAX; i[3] = (int64_t)sizeof(size_t);
    i[4] = abs(-7); i[5] = offsetof(float2, y);
    assert(i[6] == 0);
    memset(&i[7], 0xff, sizeof(int64_t));
}'''


def test_c_library_headers_compile_and_mean_what_c_says():
    k = dptx.RawModule(SOURCE).get_function("consts")
    d, i, f = np.zeros(3), np.zeros(8, np.int64), np.array([0, 0, 0, 2.25], np.float32)
    dptx.cpu.launch(k, 1, 1, [d, i, f])
    assert d.tolist() == [math.pi, math.sqrt(2), np.finfo(np.float64).eps]
    assert f[0] == np.finfo(np.float32).max and f[1] == np.inf and f[2] == 1.5
    assert i.tolist() == [2**31 - 1, -2**63, 2**32 - 1, 8, 7, 4, 0, -1]


def test_host_only_headers_are_named():
    with pytest.raises(dptx.CompileError, match=r"unistd\.h is not available to NVRTC.*device-side"):
        dptx.RawModule('#include <unistd.h>\nextern "C" __global__ void k() {}')
    with pytest.raises(dptx.CompileError, match=r"cuda\.h declares host functions.*__CUDACC_RTC__"):
        dptx.RawModule('#include "cuda.h"\nextern "C" __global__ void k() {}')


def test_executors_are_attributes_of_the_package():
    """``import dptx; dptx.cpu.launch`` as the README writes it, in a fresh interpreter."""
    code = "import dptx, sys; assert 'dptx.cpu' not in sys.modules; print(dptx.cpu.launch.__name__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "launch", out.stderr


def test_compiling_leaves_the_interpreters_bytes_alone(tmp_path):
    """NVRTC writes its log and PTX into buffers dptx gives it: an empty log is one NUL
    byte, and written into ``b" " * 1`` (the interpreter's shared one-byte object) it made
    every later ``" ".encode()`` of the process a NUL (``print(a, b)`` printed one). Run in a
    fresh process (a regression would poison this one), with an empty NVRTC cache so that
    NVRTC runs."""
    code = (
        "import dptx.runtime.nvrtc as n\n"
        "ptx, _ = n.compile_module('extern \"C\" __global__ void k(int* p) { *p = 1; }')\n"
        "assert '.entry k' in ptx, ptx\n"
        "print(list(' '.encode()), list(bytes([32])), list('x'.encode()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={**__import__("os").environ,
                                            "DPTX_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[32] [32] [120]\n", repr(done.stdout)
