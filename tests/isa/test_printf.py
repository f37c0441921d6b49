"""printf from kernels (CUDA C through NVRTC, and vprintf in hand-written PTX)."""
import numpy as np

from ._util import HEADER, kernel_from_cuda, kernel_from_ptx, launch

SRC = r"""
extern "C" __global__ void hello(const float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("thread %d block %d x=%.2f hex=%x c=%c s=%s ll=%lld\n", threadIdx.x,
                      blockIdx.x, x[i], 0xbeef + i, 'A' + i, "str", -1234567890123LL * i);
}
"""


def test_printf_cuda_c_all_threads(capfd):
    k = kernel_from_cuda(SRC, "hello")
    x = np.arange(6, dtype=np.float32) * 1.25
    launch(k, 2, 4, [x, np.int32(6)])
    out = capfd.readouterr().out
    lines = sorted(l for l in out.splitlines() if l.startswith("thread"))
    want = sorted(f"thread {i % 4} block {i // 4} x={x[i]:.2f} hex={0xbeef + i:x} c={chr(65 + i)} "
                  f"s=str ll={-1234567890123 * i}" for i in range(6))
    assert lines == want


def test_printf_vprintf_hand_written_ptx(capfd):
    fmt = b"v=%d f=%f\n\0"
    init = ", ".join(str(b) for b in fmt)
    text = HEADER + f"""
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 p0, .param .b64 p1);
.global .align 1 .b8 fmtstr[{len(fmt)}] = {{{init}}};
.visible .entry pk()
{{
    .local .align 8 .b8 depot[16];
    .reg .b32 %r<4>;
    .reg .b64 %rd<6>;
    .reg .f64 %fd<2>;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd1, depot;
    cvta.local.u64 %rd2, %rd1;
    st.local.u32 [%rd1], %r1;
    cvt.rn.f64.u32 %fd1, %r1;
    mul.f64 %fd1, %fd1, 0d3FE0000000000000;
    st.local.f64 [%rd1+8], %fd1;
    mov.u64 %rd3, fmtstr;
    cvta.global.u64 %rd4, %rd3;
    {{
    .param .b64 param0;
    st.param.b64 [param0], %rd4;
    .param .b64 param1;
    st.param.b64 [param1], %rd2;
    .param .b32 retval0;
    call.uni (retval0), vprintf, (param0, param1);
    ld.param.b32 %r2, [retval0];
    }}
    ret;
}}
"""
    launch(kernel_from_ptx(text, "pk"), 1, 3, [])
    out = capfd.readouterr().out
    lines = sorted(l for l in out.splitlines() if l.startswith("v="))
    assert lines == [f"v={i} f={i * 0.5:f}" for i in range(3)]


MANY = r"""
extern "C" __global__ void many(int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) printf("line %04d of block %d: %s|%u|%e|%5.1f|%%\n", i, blockIdx.x,
                      (i & 1) ? "odd" : "even", (unsigned)i * 2654435761u, 1.0 / (i + 1), i * 0.5);
}
"""


def test_printf_many_threads_lines_intact(capfd):
    k = kernel_from_cuda(MANY, "many")
    n = 300
    launch(k, 3, 128, [np.int32(n)])
    out = capfd.readouterr().out
    lines = sorted(l for l in out.splitlines() if l.startswith("line "))
    want = sorted(f"line {i:04d} of block {i // 128}: {'odd' if i & 1 else 'even'}|"
                  f"{(i * 2654435761) % 2**32}|{1.0 / (i + 1):e}|{i * 0.5:5.1f}|%" for i in range(n))
    assert lines == want
