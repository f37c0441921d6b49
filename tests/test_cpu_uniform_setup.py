"""Values computed once under divergent control stay scalars in the warp-vectorized form
(``vector_plan._uniform_under_divergence``): nvcc puts a grid-stride loop's setup (the stride,
the global pointers) after ``if (i < n)``, where only some lanes of the last warps run it.
The setup must be recognised, and a register that lanes on two sides of a branch define must
not be (one scalar would carry the other side's value)."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor
from dptx.cpu.renderer.vector_plan import plan_vector
from dptx.ptx.parser import parse


@pytest.fixture(autouse=True)
def _default_forms(monkeypatch):
    """These tests check the warp-vectorized form's choices: the default mode, whatever
    DPTX_CPU_VECTOR the suite runs under (tests that want another set it themselves)."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)


GRID_STRIDE = r'''
extern "C" __global__ void gs(double a, const double* x, double* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}'''

def _kernel(name: str, body: str) -> str:
    """A one-parameter kernel whose %rd4 points at out[tid.x] (%r1: tid.x)."""
    return f'''
.version 7.0
.target sm_80
.address_size 64
.visible .entry {name}(.param .u64 out)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd2, %rd3;
{body}
}}'''


# r9 is defined on both sides of a divergent branch; the side of lanes >= 8 is laid out
# first and its use last, so the other side's definition runs in between: were r9 one
# scalar, those lanes would store 103 instead of 107.
TWO_SIDES = _kernel("two_sides", """
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra LOW;
    mov.u32 %r9, 7;
    bra.uni HIGH_USE;
LOW:
    mov.u32 %r9, 3;
    st.global.u32 [%rd4], %r9;
    bra.uni DONE;
HIGH_USE:
    add.u32 %r10, %r9, 100;
    st.global.u32 [%rd4], %r10;
DONE:
    ret;""")

# r9 is set again under divergent control and read after the join by every lane: lanes
# that skipped the second definition read the first, so it must stay per lane.
AFTER_JOIN = _kernel("after_join", """
    mov.u32 %r9, 5;
    setp.lt.u32 %p1, %r1, 8;
    @%p1 bra JOIN;
    mov.u32 %r9, 11;
JOIN:
    st.global.u32 [%rd4], %r9;
    ret;""")

# the thread index read again under divergent control (nvcc does so in epilogues): per lane,
# whatever the rule for the block's other instructions
TID_LATE = r'''
.version 7.0
.target sm_80
.address_size 64
.visible .entry tid_late(.param .u64 out, .param .u32 n)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %ctaid.x;
    mov.u32 %r5, %ntid.x;
    mad.lo.s32 %r6, %r4, %r5, %r3;
    mul.wide.u32 %rd3, %r6, 4;
    add.s64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r6;
DONE:
    ret;
}'''


def _vector_only(kernel):
    """The warp-vectorized form for every launch (no trial of the per-thread form)."""
    ck = executor.compile_kernel(kernel)
    assert ck.vector, ck.vector_reason
    ck.alternative = None
    ck.chosen.clear()
    return ck


def _plan(ptx: str, name: str):
    module = parse(ptx)
    return plan_vector(module, next(f for f in module.functions if f.name == name))


def test_grid_stride_setup_under_the_bounds_check_is_uniform():
    mod = dptx.RawModule(GRID_STRIDE)
    k = mod.get_function("gs")
    plan = _plan(k.ptx, "gs")
    setup = [inst for inst in next(f for f in parse(k.ptx).functions if f.name == "gs").instructions
             if inst.opcode in ("cvta", "mul") and "wide" not in inst.modifiers]
    assert setup, k.ptx
    names = {op.name for inst in setup for op in inst.operands[:1]}
    # the global pointers and the stride: scalars; the index stays per lane
    assert names and not names & plan.divergent, (names, plan.divergent)
    assert any(name.startswith("%r") for name in plan.divergent)


@pytest.mark.parametrize("n,grid", [(1 << 16, 256), (70_001, 40), (1000, 16), (33, 1)])
def test_grid_stride_loop_matches_numpy_in_the_vector_form(n, grid):
    k = dptx.RawModule(GRID_STRIDE).get_function("gs")
    _vector_only(k)
    rng = np.random.default_rng(n)
    # a few bits each: the product is exact, so the kernel's fma equals numpy's a * x + y
    x, y = rng.integers(0, 1 << 20, n) / 1024.0, rng.integers(0, 1 << 20, n) / 512.0
    want = 2.5 * x + y
    cpu.launch(k, (grid,), (256,), [np.float64(2.5), x, y, np.int32(n)])
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("ptx,name,threads,low,high", [
    (TWO_SIDES, "two_sides", 64, 3, 107),      # defined on both sides of a branch
    (AFTER_JOIN, "after_join", 40, 5, 11),     # read after the join
])
def test_a_register_defined_twice_stays_per_lane(monkeypatch, ptx, name, threads, low, high):
    monkeypatch.setenv("DPTX_CPU_VECTOR", "all")    # the warp form for a plain kernel too
    assert "%r9" in _plan(ptx, name).divergent
    k = dptx.RawModule(ptx=ptx).get_function(name)
    _vector_only(k)
    out = np.zeros(threads, np.uint32)
    cpu.launch(k, (1,), (threads,), [out])
    np.testing.assert_array_equal(out, np.where(np.arange(threads) < 8, low, high).astype(np.uint32))


def test_the_thread_index_read_under_divergent_control_stays_per_lane(monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", "all")
    plan = _plan(TID_LATE, "tid_late")
    assert {"%r3", "%r6", "%rd4"} <= plan.divergent, plan.divergent
    assert not {"%rd2", "%r4", "%r5"} & plan.divergent, plan.divergent
    k = dptx.RawModule(ptx=TID_LATE).get_function("tid_late")
    _vector_only(k)
    out = np.zeros(128, np.uint32)
    cpu.launch(k, (2,), (64,), [out, np.uint32(40)])
    index = np.arange(128, dtype=np.uint32)
    np.testing.assert_array_equal(out, np.where(index % 64 < 40, index, 0).astype(np.uint32))
