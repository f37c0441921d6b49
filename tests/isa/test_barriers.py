"""Barriers: bar.sync in loops and uniform branches, named barriers with thread counts,
bar.arrive producer/consumer, bar.red.popc/and/or, early exit of some threads, elect.sync."""
import numpy as np
import pytest

import dptx

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
    # only the member lanes (4..31) execute elect.sync
    body = ("mov.u32 %r1, %laneid;\nmov.u32 %d, 0xdead;\nsetp.ne.u32 %q, 0, 0;\n"
            "setp.lt.u32 %p2, %r1, 4;\n@%p2 bra SKIP;\n"
            "elect.sync %d|%p1, 0xfffffff0;\nmov.pred %q, %p1;\nSKIP:")
    d, q = run_op(body, [("a", "u32", [0] * 64)], [("d", "u32"), ("q", "pred")])
    same_ints(d, [4 if i % 32 >= 4 else 0xDEAD for i in range(64)], "u32")
    same_ints(q, [1 if i % 32 == 4 else 0 for i in range(64)], "u32")


def test_registers_and_local_memory_live_across_sync_points():
    # values of every register class defined before a loop of barriers and shuffles must
    # survive each sync point; local memory too
    nb, bs = 2, 64
    out = np.zeros((nb * bs, 8), dtype=np.uint64)
    text_body = GID + """
and.b32 %r20, %r0, 1;
setp.eq.u32 %p1, %r20, 1;
mul.lo.u32 %r21, %r0, 3;
cvt.u16.u32 %h1, %r21;
mul.lo.u32 %r4, %r3, 7;
cvt.u64.u32 %rd4, %r3;
shl.b64 %rd4, %rd4, 33;
cvt.rn.f32.u32 %f1, %r3;
mul.f32 %f1, %f1, 0f3F000000;
cvt.rn.f64.u32 %fd1, %r3;
mul.f64 %fd1, %fd1, 0d3FD0000000000000;
mov.u64 %rd10, arr;
add.u32 %r22, %r3, 0;
st.local.u32 [%rd10], %r22;
add.u32 %r22, %r3, 1;
st.local.u32 [%rd10+4], %r22;
add.u32 %r22, %r3, 2;
st.local.u32 [%rd10+8], %r22;
add.u32 %r22, %r3, 3;
st.local.u32 [%rd10+12], %r22;
mov.u32 %r5, 0;
mov.u32 %r6, 0;
LOOP:
bar.sync 0;
add.u32 %r5, %r5, %r6;
@%p1 add.u32 %r5, %r5, 100;
shfl.sync.bfly.b32 %r7, %r5, 1, 0x1f, 0xffffffff;
add.u32 %r5, %r5, %r7;
add.u32 %r6, %r6, 1;
setp.lt.u32 %p2, %r6, 5;
@%p2 bra LOOP;
and.b32 %r23, %r3, 3;
mul.wide.u32 %rd11, %r23, 4;
add.u64 %rd12, %rd10, %rd11;
ld.local.u32 %r24, [%rd12];
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 64;
add.u64 %rd1, %rd1, %rd2;
cvt.u64.u32 %rd20, %r5;
st.global.u64 [%rd1], %rd20;
selp.u64 %rd21, 1, 0, %p1;
st.global.u64 [%rd1+8], %rd21;
cvt.u64.u16 %rd22, %h1;
st.global.u64 [%rd1+16], %rd22;
cvt.u64.u32 %rd23, %r4;
st.global.u64 [%rd1+24], %rd23;
st.global.u64 [%rd1+32], %rd4;
mov.b32 %r25, %f1;
cvt.u64.u32 %rd24, %r25;
st.global.u64 [%rd1+40], %rd24;
mov.b64 %rd25, %fd1;
st.global.u64 [%rd1+48], %rd25;
cvt.u64.u32 %rd26, %r24;
st.global.u64 [%rd1+56], %rd26;
ret;"""
    from ._util import HEADER, SCRATCH, kernel_from_ptx
    text = (HEADER + ".visible .entry k(.param .u64 pout)\n{\n" + SCRATCH +
            "\t.local .align 4 .b8 arr[16];\n" + text_body + "\n}\n")
    launch(kernel_from_ptx(text), nb, bs, [out])
    n = nb * bs
    acc = [0] * n
    for i in range(5):
        acc = [(a + i + (100 if (t % bs) % 2 else 0)) & 0xFFFFFFFF for t, a in enumerate(acc)]
        acc = [(acc[t] + acc[t ^ 1]) & 0xFFFFFFFF for t in range(n)]
    for t in range(n):
        tid = t % bs
        want = [acc[t], tid % 2, (tid * 3) & 0xFFFF, t * 7, t << 33,
                int(np.array([t * 0.5], dtype=np.float32).view(np.uint32)[0]),
                int(np.array([t * 0.25], dtype=np.float64).view(np.uint64)[0]), t + (t & 3)]
        assert out[t].tolist() == want, (t, out[t].tolist(), want)


def test_bar_sync_same_id_at_different_instructions_per_warp():
    # warp 0 writes and waits at one bar.sync 0, warp 1 waits at another bar.sync 0 and then
    # reads what warp 0 wrote: barriers are matched by id, not by instruction
    out = np.zeros(64, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r11, %r10, %r5;
setp.ge.u32 %p1, %r0, 32;
@%p1 bra READER;
mul.lo.u32 %r4, %r0, 11;
st.shared.u32 [%r11], %r4;
bar.sync 0;
mov.u32 %r12, 0;
bra.uni OUT;
READER:
bar.sync 0;
sub.u32 %r6, %r11, 128;
ld.shared.u32 %r12, [%r6];
OUT:
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r12;
ret;""", decls=SH)
    launch(k, 1, 64, [out])
    assert out.tolist() == [0] * 32 + [t * 11 for t in range(32)]


def test_large_block_reduction_1024_threads_2d_grid():
    bs = 1024
    grid = (2, 2)
    a = (np.arange(4 * bs, dtype=np.uint64) * 2654435761) % 1000
    a = a.astype(np.uint32)
    out = np.zeros(4, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", """
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r13, %ctaid.y;
mov.u32 %r14, %nctaid.x;
mad.lo.u32 %r1, %r13, %r14, %r1;
mov.u32 %r2, %ntid.x;
mad.lo.u32 %r3, %r1, %r2, %r0;
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
setp.lt.u32 %p1, %r0, %r6;
shl.b32 %r7, %r6, 2;
add.u32 %r8, %r11, %r7;
@%p1 ld.shared.u32 %r9, [%r8];
@%p1 ld.shared.u32 %r12, [%r11];
@%p1 add.u32 %r12, %r12, %r9;
@%p1 st.shared.u32 [%r11], %r12;
bar.sync 0;
shr.u32 %r6, %r6, 1;
setp.ne.u32 %p2, %r6, 0;
@%p2 bra LOOP;
setp.eq.u32 %p3, %r0, 0;
ld.shared.u32 %r15, [%r10];
ld.param.u64 %rd3, [pout];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r1, 4;
add.u64 %rd3, %rd3, %rd4;
@%p3 st.global.u32 [%rd3], %r15;
ret;""", decls=".shared .align 4 .b8 sh[4096];\n")
    launch(k, grid, bs, [out, a])
    np.testing.assert_array_equal(out, a.reshape(4, bs).sum(axis=1))


def test_barrier_spellings_and_counted_bar_red():
    # barrier.sync / barrier.sync.aligned / bar.cta.sync are the same CTA barrier
    bs = 64
    out = np.zeros(bs, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r11, %r10, %r5;
st.shared.u32 [%r11], %r0;
barrier.sync 0;
xor.b32 %r6, %r0, 1;
shl.b32 %r7, %r6, 2;
add.u32 %r8, %r10, %r7;
ld.shared.u32 %r12, [%r8];
barrier.sync.aligned 0;
add.u32 %r12, %r12, 1000;
st.shared.u32 [%r11], %r12;
bar.cta.sync 0;
xor.b32 %r6, %r0, 2;
shl.b32 %r7, %r6, 2;
add.u32 %r8, %r10, %r7;
ld.shared.u32 %r13, [%r8];
setp.lt.u32 %p1, %r0, 32;
bar.red.popc.u32 %r14, 1, %p1;
add.u32 %r13, %r13, %r14;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd1, %rd1, %rd2;
st.global.u32 [%rd1], %r13;
ret;""", decls=SH)
    launch(k, 1, bs, [out])
    assert out.tolist() == [((t ^ 2) ^ 1) + 1000 + 32 for t in range(bs)]


_TWO_WARPS = """
mov.u32 %r0, %tid.x;
shr.u32 %r1, %r0, 5;
setp.eq.u32 %p1, %r1, 0;
@%p1 bra.uni W0;
{warp1}
bra.uni DONE;
W0:
{warp0}
DONE:
ld.param.u64 %rd1, [p];
mul.wide.u32 %rd2, %r0, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r5;
"""


def test_barriers_with_different_ids_do_not_meet():
    """Warp 0 at bar.sync 1, 64 and warp 1 at bar.sync 2, 64: neither barrier gets its 64
    threads; a GPU hangs, dptx reports the deadlock (they used to complete together), naming
    a thread that waits there."""
    body = _TWO_WARPS.format(warp0="bar.sync 1, 64;", warp1="bar.sync 2, 64;")
    k = ptx_kernel(".param .u64 p", "mov.u32 %r5, 0;\n" + body)
    with pytest.raises(dptx.DptxError, match="deadlock") as e:
        launch(k, (1,), (64,), [np.zeros(64, np.uint32)])
    assert "thread 0 " in str(e.value) and "bar.sync 1, 64" in str(e.value)


def test_a_counted_barrier_completes_while_another_waits_for_the_cta():
    """Warp 1 passes bar.sync 1, 32 (its own 32 threads) while warp 0 waits at the CTA-wide
    bar.sync 0; warp 1 then reaches bar.sync 0 too and both go on (this was reported as a
    deadlock: threads at different barriers while one waits for the whole CTA)."""
    body = _TWO_WARPS.format(
        warp0="bar.sync 0;\nmov.u32 %r5, 10;",
        warp1="bar.sync 1, 32;\nmov.u32 %r5, 20;\nbar.sync 0;\nadd.u32 %r5, %r5, 1;")
    k = ptx_kernel(".param .u64 p", "mov.u32 %r5, 0;\n" + body)
    out = np.zeros(64, np.uint32)
    launch(k, (1,), (64,), [out])
    assert out.tolist() == [10] * 32 + [21] * 32


def test_a_deadlock_names_a_waiting_thread_not_one_that_exited():
    """Threads 32-63 exit, threads 0-31 wait at bar.sync 1, 64 for 64 threads."""
    body = """
mov.u32 %r0, %tid.x;
setp.ge.u32 %p1, %r0, 32;
@%p1 bra.uni OUT;
bar.sync 1, 64;
OUT:
"""
    k = ptx_kernel(".param .u64 p", body)
    with pytest.raises(dptx.DptxError, match="deadlock") as e:
        launch(k, (1,), (64,), [np.zeros(1, np.uint32)])
    thread = int(str(e.value).split("thread ")[1].split()[0])
    assert thread < 32, str(e.value)
