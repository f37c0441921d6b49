"""Control flow: loops with bra, divergent branches, brx.idx jump tables, .func calls with
parameters and return values, recursion; module globals persisting across launches."""
import numpy as np

import dptx

from ._util import GID, HEADER, SCRATCH, kernel_from_ptx, launch, ptx_kernel, run_op, same_ints


def test_divergent_loop_trip_counts():
    # each thread loops a different number of times: collatz steps of its input
    xs = [1, 2, 3, 6, 7, 9, 27, 97, 871, 1]
    body = ("mov.u32 %d, 0;\nmov.u32 %r1, %a;\nLOOP:\nsetp.le.u32 %p1, %r1, 1;\n@%p1 bra DONE;\n"
            "and.b32 %r2, %r1, 1;\nsetp.eq.u32 %p2, %r2, 0;\n@%p2 shr.u32 %r1, %r1, 1;\n"
            "@!%p2 mad.lo.u32 %r1, %r1, 3, 1;\nadd.u32 %d, %d, 1;\nbra.uni LOOP;\nDONE:")
    d = run_op(body, [("a", "u32", xs)], [("d", "u32")])

    def steps(x):
        n = 0
        while x > 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            n += 1
        return n
    same_ints(d, [steps(x) for x in xs], "u32")


def test_brx_idx_jump_table():
    body = """
ts: .branchtargets L0, L1, L2;
brx.idx %a, ts;
L0:
mov.u32 %d, 100;
bra.uni END;
L1:
mov.u32 %d, 200;
bra.uni END;
L2:
mov.u32 %d, 300;
END:"""
    d = run_op(body, [("a", "u32", [0, 1, 2, 2, 1, 0])], [("d", "u32")])
    same_ints(d, [100, 200, 300, 300, 200, 100], "u32")


FUNCS = """
.func (.param .b32 ret) addmul(.param .b32 x, .param .b32 y, .param .b64 z)
{
    .reg .b32 %t<4>;
    .reg .b64 %u<2>;
    ld.param.b32 %t1, [x];
    ld.param.b32 %t2, [y];
    ld.param.b64 %u1, [z];
    cvt.u32.u64 %t3, %u1;
    mad.lo.u32 %t1, %t1, %t2, %t3;
    st.param.b32 [ret], %t1;
    ret;
}
.func (.param .b32 ret) fact(.param .b32 n)
{
    .reg .b32 %t<4>;
    .reg .pred %q;
    ld.param.b32 %t1, [n];
    setp.le.u32 %q, %t1, 1;
    @%q bra BASE;
    sub.u32 %t2, %t1, 1;
    {
    .param .b32 pa;
    st.param.b32 [pa], %t2;
    .param .b32 rv;
    call (rv), fact, (pa);
    ld.param.b32 %t3, [rv];
    }
    mul.lo.u32 %t1, %t1, %t3;
BASE:
    st.param.b32 [ret], %t1;
    ret;
}
"""


def test_call_func_with_params_and_recursion():
    n = 12
    out = np.zeros(2 * n, dtype=np.uint32)
    body = GID + """
{
.param .b32 p0;
st.param.b32 [p0], %r3;
.param .b32 p1;
st.param.b32 [p1], 7;
.param .b64 p2;
st.param.b64 [p2], 1000;
.param .b32 r;
call.uni (r), addmul, (p0, p1, p2);
ld.param.b32 %r4, [r];
}
{
.param .b32 q0;
st.param.b32 [q0], %r3;
.param .b32 r2;
call (r2), fact, (q0);
ld.param.b32 %r5, [r2];
}
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
st.global.v2.u32 [%rd1], {%r4, %r5};
ret;"""
    text = HEADER + FUNCS + ".visible .entry k(.param .u64 pout)\n{\n" + SCRATCH + body + "\n}\n"
    launch(kernel_from_ptx(text), 1, n, [out])
    import math
    o = out.reshape(n, 2)
    assert o[:, 0].tolist() == [t * 7 + 1000 for t in range(n)]
    assert o[:, 1].tolist() == [(math.factorial(t) if t > 1 else t) & 0xFFFFFFFF for t in range(n)]


def test_module_global_persists_across_launches():
    decls = ".global .align 4 .u32 counter = 5;\n"
    text = (HEADER + decls +
            ".visible .entry bump()\n{\n" + SCRATCH +
            "mov.u64 %rd1, counter;\natom.global.add.u32 %r1, [%rd1], 1;\nret;\n}\n"
            ".visible .entry read(.param .u64 pout)\n{\n" + SCRATCH +
            "mov.u64 %rd1, counter;\nld.global.u32 %r1, [%rd1];\nld.param.u64 %rd2, [pout];\n"
            "cvta.to.global.u64 %rd2, %rd2;\nst.global.u32 [%rd2], %r1;\nret;\n}\n")
    mod = dptx.RawModule(ptx=text)
    bump, read = mod.get_function("bump"), mod.get_function("read")
    for _ in range(3):
        launch(bump, 2, 32, [])
    out = np.zeros(1, dtype=np.uint32)
    launch(read, 1, 1, [out])
    assert out[0] == 5 + 3 * 64


def test_lanemask_special_registers_and_nwarps():
    names = ["%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge"]
    body = "\n".join(f"mov.u32 %d{i}, {n};" for i, n in enumerate(names))
    outs = run_op(body, [("a", "u32", [0] * 64)], [(f"d{i}", "u32") for i in range(5)])
    lanes = [i % 32 for i in range(64)]
    same_ints(outs[0], [1 << l for l in lanes], "u32")
    same_ints(outs[1], [(1 << l) - 1 for l in lanes], "u32")
    same_ints(outs[2], [(1 << (l + 1)) - 1 for l in lanes], "u32")
    same_ints(outs[3], [(0xFFFFFFFF << (l + 1)) & 0xFFFFFFFF for l in lanes], "u32")
    same_ints(outs[4], [(0xFFFFFFFF << l) & 0xFFFFFFFF for l in lanes], "u32")


def test_predicated_branch_skips_and_bra_uni():
    out = np.zeros(8, dtype=np.int32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u32 %r4, 0;
setp.lt.u32 %p1, %r0, 4;
@%p1 bra LOW;
add.u32 %r4, %r4, 10;
LOW:
add.u32 %r4, %r4, 1;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r4;
ret;""")
    launch(k, 1, 8, [out])
    assert out.tolist() == [1, 1, 1, 1, 11, 11, 11, 11]


def test_deeper_recursion_and_large_local_arrays():
    rec = """
.func (.param .b32 ret) rsum(.param .b32 n)
{
    .reg .b32 %t<4>;
    .reg .pred %q;
    .local .align 4 .b8 pad[64];
    ld.param.b32 %t1, [n];
    st.local.u32 [pad+60], %t1;
    setp.eq.u32 %q, %t1, 0;
    @%q bra BASE;
    sub.u32 %t2, %t1, 1;
    {
    .param .b32 pa;
    st.param.b32 [pa], %t2;
    .param .b32 rv;
    call (rv), rsum, (pa);
    ld.param.b32 %t3, [rv];
    }
    ld.local.u32 %t1, [pad+60];
    add.u32 %t1, %t1, %t3;
BASE:
    st.param.b32 [ret], %t1;
    ret;
}
"""
    body = GID + """
mov.u64 %rd5, big;
mov.u32 %r6, 0;
FILL:
mul.wide.u32 %rd6, %r6, 4;
add.u64 %rd7, %rd5, %rd6;
mad.lo.u32 %r7, %r6, %r3, 1;
st.local.u32 [%rd7], %r7;
add.u32 %r6, %r6, 1;
setp.lt.u32 %p1, %r6, 512;
@%p1 bra FILL;
mul.lo.u32 %r8, %r3, 97;
and.b32 %r8, %r8, 511;
mul.wide.u32 %rd8, %r8, 4;
add.u64 %rd9, %rd5, %rd8;
ld.local.u32 %r9, [%rd9];
and.b32 %r10, %r3, 63;
{
.param .b32 q0;
st.param.b32 [q0], %r10;
.param .b32 r2;
call (r2), rsum, (q0);
ld.param.b32 %r5, [r2];
}
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
st.global.v2.u32 [%rd1], {%r5, %r9};
ret;"""
    text = (HEADER + rec + ".visible .entry k(.param .u64 pout)\n{\n" + SCRATCH +
            "\t.local .align 4 .b8 big[2048];\n" + body + "\n}\n")
    n = 256
    out = np.zeros(2 * n, dtype=np.uint32)
    launch(kernel_from_ptx(text), 2, 128, [out])
    o = out.reshape(n, 2)
    for t in range(n):
        d = t & 63
        j = (t * 97) & 511
        assert o[t].tolist() == [d * (d + 1) // 2, j * t + 1], t


def test_functions_with_register_parameters_and_returns():
    """Old-style .func with .reg parameters and returns (ZLUDA's multiple_return, vector):
    scalar, predicate and .v2 registers, an immediate argument; parameters are values (the
    callee changing one leaves the caller's register alone)."""
    ptx = HEADER + r"""
.func (.reg .u32 sum, .reg .pred big, .reg .v2 .u32 swapped) f(.reg .u32 x, .reg .v2 .u32 v, .reg .u32 k)
{
    add.u32 sum, v.x, v.y;
    add.u32 sum, sum, x;
    add.u32 sum, sum, k;
    setp.gt.u32 big, sum, 100;
    mov.u32 swapped.x, v.y;
    mov.u32 swapped.y, v.x;
    mov.u32 x, 0;
    ret;
}
.visible .entry k(.param .u64 pout, .param .u64 pin)
{
    .reg .u32 %r<8>; .reg .b64 %rd<8>; .reg .pred %p1;
    .reg .v2 .u32 %v, %w;
    ld.param.u64 %rd1, [pin]; ld.param.u64 %rd2, [pout];
    mov.u32 %r0, %tid.x;
    mul.wide.u32 %rd3, %r0, 16; add.s64 %rd4, %rd1, %rd3;
    ld.global.u32 %r1, [%rd4];
    ld.global.v2.u32 %v, [%rd4+8];
    call (%r2, %p1, %w), f, (%r1, %v, 7);
    selp.u32 %r3, 1, 0, %p1;
    mul.wide.u32 %rd5, %r0, 24; add.s64 %rd6, %rd2, %rd5;
    st.global.u32 [%rd6], %r2;
    st.global.u32 [%rd6+4], %r3;
    st.global.v2.u32 [%rd6+8], %w;
    st.global.u32 [%rd6+16], %r1;
}
"""
    n = 64
    rng = np.random.default_rng(2)
    # rows of (x, pad, v.x, v.y) and (sum, big, swapped.x, swapped.y, x, pad): the .v2
    # accesses 8-byte aligned, as PTX requires
    src = rng.integers(0, 60, (n, 4)).astype(np.uint32)
    out = np.zeros((n, 6), np.uint32)
    launch(kernel_from_ptx(ptx), (1,), (n,), [out, src])
    total = src[:, 0] + src[:, 2] + src[:, 3] + 7
    assert np.array_equal(out[:, 0], total)
    assert np.array_equal(out[:, 1], (total > 100).astype(np.uint32))
    assert np.array_equal(out[:, 2], src[:, 3]) and np.array_equal(out[:, 3], src[:, 2])
    assert np.array_equal(out[:, 4], src[:, 0])      # the callee's mov x, 0 stayed there
