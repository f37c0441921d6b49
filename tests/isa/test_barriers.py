"""Barriers: bar.sync in loops and uniform branches, named barriers with thread counts,
bar.arrive producer/consumer, bar.red.popc/and/or, early exit of some threads, elect.sync."""
import numpy as np

from ._util import GID, launch, ptx_kernel, run_op, same_ints

SH = ".shared .align 4 .b8 sh[1024];\n"


def test_tree_reduction_bar_sync_in_loop():
    nb, bs = 3, 128
    a = (np.arange(nb * bs, dtype=np.uint32) * 7 + 3) % 1000
    out = np.zeros(nb, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd1, %rd1, %rd2;
ld.global.u32 %r4, [%rd1];
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r11, %r10, %r5;
st.shared.u32 [%r11], %r4;
bar.sync 0;
shr.u32 %r6, %r2, 1;
LOOP:
setp.ge.u32 %p1, %r0, %r6;
@%p1 bra SKIP;
shl.b32 %r7, %r6, 2;
add.u32 %r8, %r11, %r7;
ld.shared.u32 %r9, [%r8];
ld.shared.u32 %r12, [%r11];
add.u32 %r12, %r12, %r9;
st.shared.u32 [%r11], %r12;
SKIP:
bar.sync 0;
shr.u32 %r6, %r6, 1;
setp.ne.u32 %p2, %r6, 0;
@%p2 bra LOOP;
setp.ne.u32 %p3, %r0, 0;
@%p3 bra DONE;
ld.shared.u32 %r13, [%r10];
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r1, 4;
add.u64 %rd3, %rd3, %rd4;
st.global.u32 [%rd3], %r13;
DONE:
ret;""", decls=SH)
    launch(k, nb, bs, [out, a])
    np.testing.assert_array_equal(out, a.reshape(nb, bs).sum(axis=1))


def test_bar_sync_in_uniform_branches():
    # even blocks rotate left through shared memory, odd blocks rotate right; each path has
    # its own barriers, taken by every thread of the block
    nb, bs = 4, 64
    a = np.arange(nb * bs, dtype=np.int32)
    out = np.zeros(nb * bs, dtype=np.int32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd5, %rd1, %rd2;
ld.global.u32 %r4, [%rd5];
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r11, %r10, %r5;
and.b32 %r6, %r1, 1;
setp.eq.u32 %p1, %r6, 1;
@%p1 bra ODD;
st.shared.u32 [%r11], %r4;
bar.sync 0;
add.u32 %r7, %r0, 1;
bra.uni JOIN;
ODD:
mul.lo.u32 %r4, %r4, 10;
st.shared.u32 [%r11], %r4;
bar.sync 0;
add.u32 %r7, %r0, %r2;
sub.u32 %r7, %r7, 1;
JOIN:
rem.u32 %r7, %r7, %r2;
shl.b32 %r8, %r7, 2;
add.u32 %r9, %r10, %r8;
ld.shared.u32 %r12, [%r9];
bar.sync 0;
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
add.u64 %rd3, %rd3, %rd2;
st.global.u32 [%rd3], %r12;
ret;""", decls=SH)
    launch(k, nb, bs, [out, a])
    blocks = a.reshape(nb, bs)
    want = np.stack([np.roll(blocks[b], -1) if b % 2 == 0 else np.roll(blocks[b] * 10, 1)
                     for b in range(nb)])
    np.testing.assert_array_equal(out.reshape(nb, bs), want)


def test_named_barriers_with_thread_counts():
    # threads 0..63 use barrier 1 (64 threads), 64..127 barrier 2 (64 threads); each group
    # reverses its half through shared memory
    bs = 128
    a = np.arange(2 * bs, dtype=np.uint32) * 3
    out = np.zeros(2 * bs, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd5, %rd1, %rd2;
ld.global.u32 %r4, [%rd5];
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r11, %r10, %r5;
st.shared.u32 [%r11], %r4;
setp.ge.u32 %p1, %r0, 64;
@%p1 bra SECOND;
bar.sync 1, 64;
mov.u32 %r6, 63;
sub.u32 %r7, %r6, %r0;
bra.uni READ;
SECOND:
bar.sync 2, 64;
mov.u32 %r6, 191;
sub.u32 %r7, %r6, %r0;
READ:
shl.b32 %r8, %r7, 2;
add.u32 %r9, %r10, %r8;
ld.shared.u32 %r12, [%r9];
bar.sync 0;
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
add.u64 %rd3, %rd3, %rd2;
st.global.u32 [%rd3], %r12;
ret;""", decls=SH)
    launch(k, 2, bs, [out, a])
    want = np.concatenate([np.concatenate([blk[:64][::-1], blk[64:][::-1]]) for blk in a.reshape(2, bs)])
    np.testing.assert_array_equal(out, want)


def test_bar_arrive_producer_consumer():
    # warps 0-1 produce into shared memory and bar.arrive; warps 2-3 bar.sync then consume
    bs = 128
    out = np.zeros(bs, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u32 %r10, sh;
setp.ge.u32 %p1, %r0, 64;
@%p1 bra CONSUMER;
mul.lo.u32 %r4, %r0, %r0;
add.u32 %r4, %r4, 1;
shl.b32 %r5, %r0, 2;
add.u32 %r6, %r10, %r5;
st.shared.u32 [%r6], %r4;
bar.arrive 1, 128;
mov.u32 %r12, 0;
bra.uni STORE;
CONSUMER:
bar.sync 1, 128;
sub.u32 %r7, %r0, 64;
shl.b32 %r8, %r7, 2;
add.u32 %r9, %r10, %r8;
ld.shared.u32 %r12, [%r9];
STORE:
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd3, %rd2;
st.global.u32 [%rd3], %r12;
ret;""", decls=SH)
    launch(k, 1, bs, [out])
    want = [0] * 64 + [t * t + 1 for t in range(64)]
    assert out.tolist() == want


def test_bar_red_popc_and_or():
    bs = 96
    flags = ([1 if i % 5 == 0 else 0 for i in range(bs)] + [1] * bs + [0] * bs)
    body = ("setp.ne.u32 %p1, %a, 0;\nbar.red.popc.u32 %d, 0, %p1;\n"
            "bar.red.and.pred %p2, 0, %p1;\nbar.red.or.pred %p3, 0, %p1;\n"
            "bar.red.popc.u32 %e, 1, !%p1;\nmov.pred %q, %p2;\nmov.pred %s, %p3;")
    d, e, q, s_ = run_op(body, [("a", "u32", flags)], [("d", "u32"), ("e", "u32"), ("q", "pred"), ("s", "pred")],
                         block_size=bs)
    wd, we, wq, ws = [], [], [], []
    for b in range(3):
        blk = flags[b * bs:(b + 1) * bs]
        wd += [sum(blk)] * bs
        we += [bs - sum(blk)] * bs
        wq += [int(all(blk))] * bs
        ws += [int(any(blk))] * bs
    same_ints(d, wd, "u32")
    same_ints(e, we, "u32")
    same_ints(q, wq, "u32")
    same_ints(s_, ws, "u32")


def test_early_exit_some_threads():
    bs = 64
    out = np.full(2 * bs, 0xFFFFFFFF, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u32 n", GID + """
ld.param.u32 %r4, [n];
setp.ge.u32 %p1, %r3, %r4;
@%p1 exit;
and.b32 %r5, %r3, 3;
setp.eq.u32 %p2, %r5, 3;
@%p2 ret;
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd3, %rd2;
mul.lo.u32 %r6, %r3, 5;
st.global.u32 [%rd3], %r6;
ret;""")
    launch(k, 2, bs, [out, np.uint32(100)])
    want = [i * 5 if (i < 100 and i % 4 != 3) else 0xFFFFFFFF for i in range(2 * bs)]
    assert out.tolist() == want


def test_exit_after_barrier_then_warp_op_among_survivors():
    # all threads meet at bar.sync, odd lanes exit, even lanes shuffle among themselves
    bs = 64
    out = np.full(bs, 0xFFFFFFFF, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", GID + """
bar.sync 0;
and.b32 %r4, %r0, 1;
setp.eq.u32 %p1, %r4, 1;
@%p1 exit;
mul.lo.u32 %r5, %r0, 10;
shfl.sync.bfly.b32 %r6, %r5, 2, 0x1f, 0x55555555;
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd3, %rd2;
st.global.u32 [%rd3], %r6;
ret;""")
    launch(k, 1, bs, [out])
    want = [((i ^ 2) * 10) if i % 2 == 0 else 0xFFFFFFFF for i in range(bs)]
    assert out.tolist() == want


def test_elect_sync_picks_lowest_member():
    body = ("mov.u32 %r1, %laneid;\nelect.sync %d|%p1, 0xfffffff0;\nmov.pred %q, %p1;")
    d, q = run_op(body, [("a", "u32", [0] * 64)], [("d", "u32"), ("q", "pred")])
    same_ints(d, [4] * 64, "u32")
    same_ints(q, [1 if i % 32 == 4 else 0 for i in range(64)], "u32")
