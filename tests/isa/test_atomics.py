"""Atomics: atom/red on global and shared memory for add/min/max/inc/dec/and/or/xor/exch/cas
at 32 and 64 bits, integer and float; contention on one counter (old values form a
permutation)."""
import functools

import numpy as np
import pytest

from ._util import GID, launch, ptx_kernel

NP = {"u32": np.uint32, "s32": np.int32, "b32": np.uint32, "f32": np.float32,
      "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f64": np.float64}
REG = {"u32": "%r", "s32": "%r", "b32": "%r", "f32": "%f",
       "u64": "%rd", "s64": "%rd", "b64": "%rd", "f64": "%fd"}


def _global_kernel(op, ty, ncells, red=False):
    size = np.dtype(NP[ty]).itemsize
    R = REG[ty]
    inst = (f"red.global.{op}.{ty} [%rd5], {R}20;" if red else
            f"atom.global.{op}.{ty} {R}21, [%rd5], {R}20;")
    body = GID + f"""
ld.param.u64 %rd1, [pvals];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, {size};
add.u64 %rd3, %rd1, %rd2;
ld.global.{ty} {R}20, [%rd3];
rem.u32 %r4, %r3, {ncells};
mul.wide.u32 %rd4, %r4, {size};
ld.param.u64 %rd5, [pcells];
cvta.to.global.u64 %rd5, %rd5;
add.u64 %rd5, %rd5, %rd4;
{inst}
ld.param.u64 %rd6, [pold];
cvta.to.global.u64 %rd6, %rd6;
add.u64 %rd6, %rd6, %rd2;
{'' if red else f'st.global.{ty} [%rd6], {R}21;'}
ret;"""
    return ptx_kernel(".param .u64 pcells, .param .u64 pold, .param .u64 pvals", body)


def _wrap(x, ty):
    return np.array([x % (1 << (8 * np.dtype(NP[ty]).itemsize))],
                    dtype=f"u{np.dtype(NP[ty]).itemsize}").view(NP[ty])[0]


def _reduce(op, ty, init, vals, bound=None):
    dt = NP[ty]
    acc = init
    for v in vals:
        if op == "add":
            acc = dt(acc + v) if ty[0] == "f" else _wrap(int(acc) + int(v), ty)
        elif op == "min":
            acc = min(acc, v)
        elif op == "max":
            acc = max(acc, v)
        elif op == "and":
            acc = int(acc) & int(v)
        elif op == "or":
            acc = int(acc) | int(v)
        elif op == "xor":
            acc = int(acc) ^ int(v)
        elif op == "inc":
            acc = 0 if acc >= v else acc + 1
        elif op == "dec":
            acc = v if (acc == 0 or acc > v) else acc - 1
    return acc


def _vals(ty, n, seed):
    r = np.random.default_rng(seed)
    if ty == "f32" or ty == "f64":
        return r.integers(-1000, 1000, n).astype(NP[ty]) * 0.25  # exact sums in any order
    info = np.iinfo(NP[ty])
    return r.integers(info.min, info.max, n, dtype=NP[ty], endpoint=True)


CASES = [("add", "u32"), ("add", "s32"), ("add", "u64"), ("add", "f32"), ("add", "f64"),
         ("min", "u32"), ("min", "s32"), ("min", "u64"), ("min", "s64"),
         ("max", "u32"), ("max", "s32"), ("max", "u64"), ("max", "s64"),
         ("and", "b32"), ("or", "b32"), ("xor", "b32"), ("and", "b64"), ("or", "b64"), ("xor", "b64")]


@pytest.mark.parametrize("op,ty", CASES, ids=[f"{o}.{t}" for o, t in CASES])
def test_atom_global_reduction_ops(op, ty):
    n, ncells = 256, 4
    vals = _vals(ty, n, hash((op, ty)) % 1000)
    init = _vals(ty, ncells, 99)
    cells = init.copy()
    old = np.zeros(n, dtype=NP[ty])
    launch(_global_kernel(op, ty, ncells), 4, 64, [cells, old, vals])
    for c in range(ncells):
        mine = vals[c::ncells]
        want = _reduce(op, ty, init[c], mine)
        assert cells[c] == NP[ty](want), (c, cells[c], want)
        # the first operation on a cell returns its initial value
        assert init[c] in old[c::ncells]


@pytest.mark.parametrize("op,ty", [("add", "u32"), ("add", "f32"), ("min", "s32"), ("max", "u64"),
                                   ("or", "b32"), ("add", "f64"), ("xor", "b64")])
def test_red_global_reduction_ops(op, ty):
    n, ncells = 192, 3
    vals = _vals(ty, n, 5)
    init = _vals(ty, ncells, 6)
    cells = init.copy()
    old = np.zeros(n, dtype=NP[ty])
    launch(_global_kernel(op, ty, ncells, red=True), 3, 64, [cells, old, vals])
    for c in range(ncells):
        assert cells[c] == NP[ty](_reduce(op, ty, init[c], vals[c::ncells]))


def test_atomic_counter_contention_old_values_form_permutation():
    n = 8192
    cells = np.zeros(1, dtype=np.uint32)
    old = np.zeros(n, dtype=np.uint32)
    vals = np.ones(n, dtype=np.uint32)
    launch(_global_kernel("add", "u32", 1), 32, 256, [cells, old, vals])
    assert cells[0] == n
    assert sorted(old.tolist()) == list(range(n))


@pytest.mark.parametrize("op", ["inc", "dec"])
def test_atom_inc_dec_wraparound(op):
    n, bound = 200, 7
    cells = np.array([3], dtype=np.uint32)
    old = np.zeros(n, dtype=np.uint32)
    vals = np.full(n, bound, dtype=np.uint32)
    launch(_global_kernel(op, "u32", 1), 2, 100, [cells, old, vals])
    if op == "inc":
        assert cells[0] == (3 + n) % (bound + 1)
    else:
        assert cells[0] == (3 - n) % (bound + 1)
    # each value 0..bound is seen as an old value n/(bound+1) times (+-1)
    counts = np.bincount(old, minlength=bound + 1)
    assert counts.sum() == n and counts.max() - counts.min() <= 1 and old.max() <= bound


def test_atom_inc_dec_out_of_range_start():
    # inc: old >= b -> 0 ; dec: old > b or old == 0 -> b
    cells = np.array([50, 50, 0], dtype=np.uint32)
    k_inc = _global_kernel("inc", "u32", 1)
    old = np.zeros(1, dtype=np.uint32)
    c0 = cells[:1].copy()
    launch(k_inc, 1, 1, [c0, old, np.array([10], dtype=np.uint32)])
    assert c0[0] == 0 and old[0] == 50
    c1 = cells[1:2].copy()
    launch(_global_kernel("dec", "u32", 1), 1, 1, [c1, old, np.array([10], dtype=np.uint32)])
    assert c1[0] == 10 and old[0] == 50
    c2 = cells[2:3].copy()
    launch(_global_kernel("dec", "u32", 1), 1, 1, [c2, old, np.array([10], dtype=np.uint32)])
    assert c2[0] == 10 and old[0] == 0


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_exch_old_values_chain(ty):
    n = 128
    cells = np.array([0xABC], dtype=NP[ty])
    old = np.zeros(n, dtype=NP[ty])
    vals = np.arange(1, n + 1, dtype=NP[ty])
    launch(_global_kernel("exch", ty, 1), 2, 64, [cells, old, vals])
    everything = sorted(old.tolist() + [int(cells[0])])
    assert everything == sorted([0xABC] + list(range(1, n + 1)))


def _cas_kernel(ty):
    size = np.dtype(NP[ty]).itemsize
    R = REG[ty]
    body = GID + f"""
add.u32 %r4, %r3, 1;
cvt.u64.u32 %rd20, %r4;
{'mov.b64 %rd21, %rd20;' if size == 8 else 'mov.b32 %r21, %r4;'}
ld.param.u64 %rd5, [pcells];
cvta.to.global.u64 %rd5, %rd5;
atom.global.cas.{ty} {R}22, [%rd5], 0, {R}21;
ld.param.u64 %rd6, [pold];
cvta.to.global.u64 %rd6, %rd6;
mul.wide.u32 %rd2, %r3, {size};
add.u64 %rd6, %rd6, %rd2;
st.global.{ty} [%rd6], {R}22;
ret;"""
    return ptx_kernel(".param .u64 pcells, .param .u64 pold", body)


@pytest.mark.parametrize("ty", ["b32", "b64"])
def test_atom_cas_exactly_one_winner(ty):
    n = 96
    cells = np.zeros(1, dtype=NP[ty])
    old = np.full(n, 12345, dtype=NP[ty])
    launch(_cas_kernel(ty), 3, 32, [cells, old])
    winners = np.nonzero(old == 0)[0]
    assert len(winners) == 1
    assert int(cells[0]) == winners[0] + 1
    assert all(int(o) == int(cells[0]) for i, o in enumerate(old) if i != winners[0])


def test_cas_spin_loop_increment():
    # lock-free increment with a CAS retry loop
    n = 256
    body = GID + """
ld.param.u64 %rd5, [pcells];
cvta.to.global.u64 %rd5, %rd5;
RETRY:
ld.volatile.global.u32 %r5, [%rd5];
add.u32 %r6, %r5, 1;
atom.global.cas.b32 %r7, [%rd5], %r5, %r6;
setp.ne.u32 %p1, %r7, %r5;
@%p1 bra RETRY;
ret;"""
    k = ptx_kernel(".param .u64 pcells", body)
    cells = np.array([10], dtype=np.uint32)
    launch(k, 4, 64, [cells])
    assert cells[0] == 10 + n


SH_CASES = [("add", "u32"), ("add", "f32"), ("min", "s32"), ("max", "u32"), ("and", "b32"),
            ("or", "b32"), ("xor", "b32"), ("add", "u64"), ("inc", "u32"), ("dec", "u32"),
            ("exch", "b32"), ("add", "f64"), ("max", "s64")]


@functools.lru_cache(maxsize=None)
def _shared_kernel(op, ty):
    size = np.dtype(NP[ty]).itemsize
    R = REG[ty]
    body = GID + f"""
mov.u32 %r10, scell;
setp.eq.u32 %p1, %r0, 0;
ld.param.u64 %rd7, [pinit];
cvta.to.global.u64 %rd7, %rd7;
@%p1 ld.global.{ty} {R}23, [%rd7];
@%p1 st.shared.{ty} [%r10], {R}23;
bar.sync 0;
ld.param.u64 %rd1, [pvals];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, {size};
add.u64 %rd3, %rd1, %rd2;
ld.global.{ty} {R}20, [%rd3];
atom.shared.{op}.{ty} {R}21, [%r10], {R}20;
ld.param.u64 %rd6, [pold];
cvta.to.global.u64 %rd6, %rd6;
add.u64 %rd6, %rd6, %rd2;
st.global.{ty} [%rd6], {R}21;
bar.sync 0;
@%p1 ld.shared.{ty} {R}24, [%r10];
ld.param.u64 %rd8, [pcells];
cvta.to.global.u64 %rd8, %rd8;
mul.wide.u32 %rd9, %r1, {size};
add.u64 %rd8, %rd8, %rd9;
@%p1 st.global.{ty} [%rd8], {R}24;
ret;"""
    return ptx_kernel(".param .u64 pcells, .param .u64 pold, .param .u64 pvals, .param .u64 pinit",
                      body, decls=".shared .align 8 .b8 scell[8];\n")


@pytest.mark.parametrize("op,ty", SH_CASES, ids=[f"{o}.{t}" for o, t in SH_CASES])
def test_atom_shared_per_block(op, ty):
    nb, bs = 3, 64
    if op in ("inc", "dec"):
        vals = np.full(nb * bs, 9, dtype=NP[ty])
    elif op == "exch":
        vals = np.arange(1, nb * bs + 1, dtype=NP[ty])
    else:
        vals = _vals(ty, nb * bs, 17)
    init = np.array([5], dtype=NP[ty]) if op in ("inc", "dec", "exch") else _vals(ty, 1, 3)
    cells = np.zeros(nb, dtype=NP[ty])
    old = np.zeros(nb * bs, dtype=NP[ty])
    launch(_shared_kernel(op, ty), nb, bs, [cells, old, vals, init])
    for b in range(nb):
        mine = vals[b * bs:(b + 1) * bs]
        if op == "exch":
            everything = sorted(old[b * bs:(b + 1) * bs].tolist() + [int(cells[b])])
            assert everything == sorted([5] + mine.tolist())
        else:
            assert cells[b] == NP[ty](_reduce(op, ty, init[0], mine)), (b, cells[b])


def test_atom_generic_address_and_red_shared():
    # atom without a state space on generic pointers to global and shared memory; red.shared
    bs = 64
    cells = np.zeros(2, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pcells", GID + """
ld.param.u64 %rd1, [pcells];
cvta.to.global.u64 %rd1, %rd1;
cvta.global.u64 %rd2, %rd1;
atom.add.u32 %r4, [%rd2], 1;
mov.u64 %rd3, scell;
setp.eq.u32 %p1, %r0, 0;
@%p1 st.shared.u32 [%rd3], 0;
bar.sync 0;
red.shared.add.u32 [%rd3], 2;
cvta.shared.u64 %rd4, %rd3;
atom.add.u32 %r5, [%rd4], 3;
bar.sync 0;
@%p1 ld.shared.u32 %r6, [%rd3];
@%p1 st.global.u32 [%rd1+4], %r6;
ret;""", decls=".shared .align 8 .b8 scell[8];\n")
    launch(k, 1, bs, [cells])
    assert cells.tolist() == [bs, 5 * bs]


def test_atom_shared_cas_and_exch_b64():
    bs = 64
    out = np.zeros(bs, dtype=np.uint64)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u64 %rd10, scell;
setp.eq.u32 %p1, %r0, 0;
@%p1 st.shared.u64 [%rd10], 0;
@%p1 st.shared.u32 [%rd10+8], 0;
bar.sync 0;
add.u32 %r4, %r0, 1;
atom.shared.cas.b32 %r5, [%rd10+8], 0, %r4;
cvt.u64.u32 %rd3, %r4;
shl.b64 %rd3, %rd3, 40;
atom.shared.exch.b64 %rd4, [%rd10], %rd3;
bar.sync 0;
ld.shared.u32 %r6, [%rd10+8];
setp.eq.u32 %p2, %r5, 0;
selp.u64 %rd5, 1, 0, %p2;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
shl.b64 %rd6, %rd5, 63;
cvt.u64.u32 %rd7, %r6;
or.b64 %rd6, %rd6, %rd7;
st.global.u64 [%rd1], %rd6;
ret;""", decls=".shared .align 8 .b8 scell[16];\n")
    launch(k, 1, bs, [out])
    winners = [t for t in range(bs) if int(out[t]) >> 63]
    assert len(winners) == 1
    final = {int(v) & 0xFFFFFFFF for v in out}
    assert final == {winners[0] + 1}


def test_atomics_with_memory_order_and_scope_qualifiers():
    # the forms libcu++ emits: atom.<sem>.<scope>.global..., ld.acquire / st.release
    n = 256
    cells = np.zeros(4, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pcells", GID + """
ld.param.u64 %rd1, [pcells];
cvta.to.global.u64 %rd1, %rd1;
atom.acq_rel.gpu.global.add.u32 %r4, [%rd1], 1;
atom.relaxed.sys.global.max.u32 %r5, [%rd1+4], %r3;
red.release.gpu.global.add.u32 [%rd1+8], 2;
atom.acquire.cta.global.or.b32 %r6, [%rd1+12], 1;
fence.acq_rel.gpu;
ld.acquire.gpu.global.u32 %r7, [%rd1];
st.release.gpu.global.u32 [%rd1+12], 1;
ret;""")
    launch(k, 2, n // 2, [cells])
    assert cells.tolist() == [n, n - 1, 2 * n, 1]


def test_shared_counter_contention_1024_threads_permutation():
    bs = 1024
    old = np.zeros(2 * bs, dtype=np.uint32)
    final = np.zeros(2, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pold, .param .u64 pfinal", GID + """
mov.u64 %rd10, scnt;
setp.eq.u32 %p1, %r0, 0;
@%p1 st.shared.u32 [%rd10], 0;
bar.sync 0;
atom.shared.inc.u32 %r4, [%rd10], 0xffffffff;
ld.param.u64 %rd1, [pold];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r4;
bar.sync 0;
ld.shared.u32 %r5, [%rd10];
ld.param.u64 %rd3, [pfinal];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r1, 4;
add.u64 %rd3, %rd3, %rd4;
@%p1 st.global.u32 [%rd3], %r5;
ret;""", decls=".shared .align 4 .b8 scnt[4];\n")
    launch(k, 2, bs, [old, final])
    assert final.tolist() == [bs, bs]
    for b in range(2):
        assert sorted(old[b * bs:(b + 1) * bs].tolist()) == list(range(bs))


VECTOR_ATOMICS = r'''
#include <cuda_fp16.h>
extern "C" __global__ void vatom(float2* p2, float4* p4, float4* olds, const float* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&p2[i % 3], make_float2(1.0f, x[i]));
    olds[i] = atomicAdd(&p4[i % 2], make_float4(x[i], 2.0f, -x[i], 0.25f));
}'''


def test_vector_atomics_sm90_from_cuda_under_contention():
    """sm_90 atomicAdd on float2/float4: atom/red.global.v2/.v4.f32.add, each element atomic.
    Values are multiples of 1/4 with sums exact in f32, so any order gives the same totals."""
    from ._util import kernel_from_cuda
    k = kernel_from_cuda(VECTOR_ATOMICS, "vatom", options=("-arch=compute_90",))
    assert ".v2.f32" in k.ptx and ".v4.f32" in k.ptx
    n = 1024
    x = (np.arange(n) % 13 * 0.25).astype(np.float32)
    p2 = np.zeros((3, 2), np.float32)
    p4 = np.zeros((2, 4), np.float32)
    olds = np.zeros((n, 4), np.float32)
    launch(k, 8, 128, [p2, p4, olds, x])
    idx = np.arange(n)
    np.testing.assert_array_equal(p2[:, 0], [np.count_nonzero(idx % 3 == j) for j in range(3)])
    np.testing.assert_array_equal(p2[:, 1], [x[idx % 3 == j].sum() for j in range(3)])
    for j in range(2):
        sel = idx % 2 == j
        np.testing.assert_array_equal(p4[j], [x[sel].sum(), 2.0 * sel.sum(), -x[sel].sum(), 0.25 * sel.sum()])
        # each old value is a partial sum seen by one thread: the constant lanes show every count once
        np.testing.assert_array_equal(np.sort(olds[sel, 1]), 2.0 * np.arange(sel.sum()))
        np.testing.assert_array_equal(np.sort(olds[sel, 3]), 0.25 * np.arange(sel.sum()))


def test_vector_atomics_half_types_and_returned_vectors():
    """atom.global.v2.f32.add returns the old vector; red .v4.f16x2 and .v8.bf16 add each element."""
    k = ptx_kernel(".param .u64 pf, .param .u64 ph, .param .u64 pb, .param .u64 pold", GID + """
ld.param.u64 %rd1, [pf];
cvta.to.global.u64 %rd1, %rd1;
ld.param.u64 %rd2, [ph];
cvta.to.global.u64 %rd2, %rd2;
ld.param.u64 %rd3, [pb];
cvta.to.global.u64 %rd3, %rd3;
mov.f32 %f1, 0f3F800000;
mov.f32 %f2, 0fC0000000;
atom.global.v2.f32.add {%f3, %f4}, [%rd1+8], {%f1, %f2};
mov.b32 %r4, 0x3C003800;
red.global.add.noftz.v4.f16x2 [%rd2], {%r4, %r4, %r4, %r4};
mov.b16 %h1, 0x3F80;
red.global.add.noftz.v8.bf16 [%rd3], {%h1, %h1, %h1, %h1, %h1, %h1, %h1, %h1};
ld.param.u64 %rd4, [pold];
cvta.to.global.u64 %rd4, %rd4;
mul.wide.u32 %rd5, %r3, 8;
add.u64 %rd4, %rd4, %rd5;
st.global.v2.f32 [%rd4], {%f3, %f4};
ret;""")
    n = 256
    f = np.zeros(4, np.float32)
    h = np.zeros(8, np.float16)
    bf = np.zeros(8, np.uint16)
    old = np.zeros((n, 2), np.float32)
    launch(k, 2, 128, [f, h, bf, old])
    np.testing.assert_array_equal(f, [0, 0, n, -2 * n])
    np.testing.assert_array_equal(h, np.tile(np.float16([0.5, 1.0]), 4) * n)
    np.testing.assert_array_equal((bf.astype(np.uint32) << 16).view(np.float32), np.full(8, float(n)))
    np.testing.assert_array_equal(np.sort(old[:, 0]), np.arange(n))
    np.testing.assert_array_equal(np.sort(-old[:, 1]), 2.0 * np.arange(n))
