"""Warp-level operations: shfl.sync (up/down/bfly/idx with clamp/segment operand and the
predicate output, partial member masks), vote.sync, activemask, match.sync, redux.sync."""
import numpy as np
import pytest

from ._util import run_op, same_ints, u

N = 128  # four warps in two blocks of 64
LANE = np.arange(N) % 32
VALS = [(i * 2654435761) & 0xFFFFFFFF for i in range(N)]


def _shfl_ref(vals, mode, b, c):
    out, preds = [], []
    for t in range(len(vals)):
        lane = t % 32
        base = t - lane
        bval = b & 0x1F
        cval = c & 0x1F
        segmask = (c >> 8) & 0x1F
        max_lane = (lane & segmask) | (cval & ~segmask & 0x1F)
        min_lane = lane & segmask
        if mode == "up":
            j = lane - bval
            p = j >= max_lane
        elif mode == "down":
            j = lane + bval
            p = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            p = j <= max_lane
        else:
            j = min_lane | (bval & ~segmask & 0x1F)
            p = j <= max_lane
        if not p:
            j = lane
        out.append(vals[base + j])
        preds.append(int(p))
    return out, preds


SHFL = [("up", 1, 0), ("up", 5, 0), ("up", 2, 0x1000), ("down", 1, 0x1F), ("down", 3, 0x181F),
        ("down", 31, 0x1F), ("bfly", 1, 0x1F), ("bfly", 16, 0x1F), ("bfly", 4, 0x181F),
        ("bfly", 12, 0x181F), ("idx", 5, 0x1F), ("idx", 3, 0x181F), ("idx", 40, 0x1F),
        ("idx", 7, 0x1C1F), ("down", 2, 0x0F), ("up", 1, 0x3), ("up", 33, 0),
        ("down", 1, 0xFFFFE01F), ("bfly", 35, 0x1F)]


@pytest.mark.parametrize("mode,b,c", SHFL, ids=[f"{m}-{b}-{c:#x}" for m, b, c in SHFL])
def test_shfl_sync_modes(mode, b, c):
    d, p = run_op(f"shfl.sync.{mode}.b32 %d|%p1, %a, {b}, {c}, 0xffffffff;\nmov.pred %q, %p1;",
                  [("a", "b32", VALS)], [("d", "b32"), ("q", "pred")])
    want, wp = _shfl_ref(VALS, mode, b, c)
    same_ints(d, want, "b32")
    same_ints(p, wp, "u32")


def test_shfl_sync_register_operands_and_f32():
    fv = [float(i) * 0.5 for i in range(N)]
    bs = [(i * 7) % 32 for i in range(N)]
    d = run_op("shfl.sync.idx.b32 %d, %a, %b, 0x1f, -1;", [("a", "f32", fv), ("b", "u32", bs)],
               [("d", "f32")])
    np.testing.assert_array_equal(d, [fv[(i - i % 32) + bs[i]] for i in range(N)])


def test_shfl_sync_partial_member_mask():
    # only lanes 0..15 execute the shuffle, with membermask 0x0000ffff
    body = ("mov.u32 %r1, %laneid;\nmov.u32 %d, 0xdead;\nsetp.lt.u32 %p1, %r1, 16;\n"
            "@!%p1 bra SKIP;\nshfl.sync.bfly.b32 %d, %a, 1, 0x1f, 0x0000ffff;\nSKIP:")
    d = run_op(body, [("a", "b32", VALS)], [("d", "b32")])
    want = [VALS[i ^ 1] if i % 32 < 16 else 0xDEAD for i in range(N)]
    same_ints(d, want, "b32")


def _per_warp(flags):
    return [flags[w * 32:(w + 1) * 32] for w in range(len(flags) // 32)]


PRED = ([1] * 32 + [1 if i % 3 else 0 for i in range(32)] + [0] * 32 + [1 if i == 17 else 0 for i in range(32)])


def test_vote_sync_all_any_uni_ballot():
    body = ("setp.ne.u32 %p1, %a, 0;\nvote.sync.all.pred %va, %p1, 0xffffffff;\n"
            "vote.sync.any.pred %vy, %p1, 0xffffffff;\nvote.sync.uni.pred %vu, %p1, 0xffffffff;\n"
            "vote.sync.ballot.b32 %vb, %p1, 0xffffffff;\nvote.sync.any.pred %vn, !%p1, 0xffffffff;")
    va, vy, vu, vb, vn = run_op(body, [("a", "u32", PRED)],
                                [("va", "pred"), ("vy", "pred"), ("vu", "pred"), ("vb", "b32"),
                                 ("vn", "pred")])
    wa, wy, wu, wb, wn = [], [], [], [], []
    for w in _per_warp(PRED):
        ballot = sum(bit << i for i, bit in enumerate(w))
        wa += [int(all(w))] * 32
        wy += [int(any(w))] * 32
        wu += [int(all(w) or not any(w))] * 32
        wb += [ballot] * 32
        wn += [int(not all(w))] * 32
    same_ints(va, wa, "u32")
    same_ints(vy, wy, "u32")
    same_ints(vu, wu, "u32")
    same_ints(vb, wb, "b32")
    same_ints(vn, wn, "u32")


def test_vote_ballot_partial_mask_only_counts_members():
    # lanes 0..7 vote with membermask 0xff
    body = ("mov.u32 %r1, %laneid;\nmov.u32 %d, 0;\nsetp.ge.u32 %p2, %r1, 8;\n@%p2 bra SKIP;\n"
            "setp.ne.u32 %p1, %a, 0;\nvote.sync.ballot.b32 %d, %p1, 0xff;\nSKIP:")
    d = run_op(body, [("a", "u32", PRED)], [("d", "b32")])
    want = []
    for w in _per_warp(PRED):
        m = sum(bit << i for i, bit in enumerate(w[:8]))
        want += [m] * 8 + [0] * 24
    same_ints(d, want, "b32")


def test_activemask_divergent_and_converged():
    body = ("mov.u32 %r1, %laneid;\nactivemask.b32 %e;\nmov.u32 %d, 0;\nrem.u32 %r2, %r1, 3;\n"
            "setp.ne.u32 %p1, %r2, 0;\n@%p1 bra SKIP;\nactivemask.b32 %d;\nSKIP:")
    d, e = run_op(body, [("a", "u32", [0] * 96)], [("d", "b32"), ("e", "b32")], block_size=48)
    # blocks of 48 threads: warp 0 full, warp 1 has 16 lanes
    div = sum(1 << i for i in range(32) if i % 3 == 0)
    full = [0xFFFFFFFF] * 32 + [0xFFFF] * 16
    same_ints(e, full * 2, "b32")
    # inside the branch, PTX only guarantees the mask holds the executing lane and lanes that
    # took the branch; lockstep execution (every GPU, and this executor) gives all of them
    for t in range(96):
        tb = t % 48
        lane = tb % 32
        branch = div if tb < 32 else div & 0xFFFF
        if lane % 3 == 0:
            m = int(d[t])
            assert m & (1 << lane) and (m & ~branch) == 0, (t, hex(m))
            assert m == branch, (t, hex(m))
        else:
            assert int(d[t]) == 0


def test_match_any_and_all():
    keys = [(i % 32) % 5 for i in range(N - 32)] + [7] * 32  # last warp: all equal
    d, e, p = run_op("match.any.sync.b32 %d, %a, 0xffffffff;\n"
                     "match.all.sync.b32 %e|%p1, %a, 0xffffffff;\nmov.pred %q, %p1;",
                     [("a", "b32", keys)], [("d", "b32"), ("e", "b32"), ("q", "pred")])
    wd, we, wp = [], [], []
    for w in _per_warp(keys):
        alleq = len(set(w)) == 1
        for k in w:
            wd.append(sum(1 << i for i, x in enumerate(w) if x == k))
            we.append(0xFFFFFFFF if alleq else 0)
            wp.append(int(alleq))
    same_ints(d, wd, "b32")
    same_ints(e, we, "b32")
    same_ints(p, wp, "u32")


def test_match_any_b64():
    keys = [((i % 4) << 40) | 5 for i in range(64)]
    d = run_op("match.any.sync.b64 %d, %a, 0xffffffff;", [("a", "b64", keys)], [("d", "b32")])
    want = []
    for w in _per_warp(keys):
        want += [sum(1 << i for i, x in enumerate(w) if x == k) for k in w]
    same_ints(d, want, "b32")


def test_redux_sync_all_ops():
    vals = [u((i * 2654435761) ^ (i << 7)) for i in range(N)]
    sv = [v - (1 << 32) if v >> 31 else v for v in vals]
    body = ("redux.sync.add.u32 %d0, %a, 0xffffffff;\nredux.sync.min.u32 %d1, %a, 0xffffffff;\n"
            "redux.sync.max.u32 %d2, %a, 0xffffffff;\nredux.sync.min.s32 %d3, %a, 0xffffffff;\n"
            "redux.sync.max.s32 %d4, %a, 0xffffffff;\nredux.sync.and.b32 %d5, %a, 0xffffffff;\n"
            "redux.sync.or.b32 %d6, %a, 0xffffffff;\nredux.sync.xor.b32 %d7, %a, 0xffffffff;\n"
            "redux.sync.add.s32 %d8, %a, 0xffffffff;")
    outs = run_op(body, [("a", "u32", vals)], [(f"d{i}", "u32") for i in range(9)])
    import functools
    import operator
    for w in range(N // 32):
        ws, wsv = vals[w * 32:(w + 1) * 32], sv[w * 32:(w + 1) * 32]
        want = [sum(ws), min(ws), max(ws), min(wsv), max(wsv), functools.reduce(operator.and_, ws),
                functools.reduce(operator.or_, ws), functools.reduce(operator.xor, ws), sum(wsv)]
        for i, x in enumerate(want):
            same_ints(outs[i][w * 32:(w + 1) * 32], [x] * 32, "u32")


def test_redux_sync_partial_mask():
    body = ("mov.u32 %r1, %laneid;\nmov.u32 %d, 0;\nand.b32 %r2, %r1, 1;\nsetp.ne.u32 %p1, %r2, 0;\n"
            "@%p1 bra SKIP;\nredux.sync.add.u32 %d, %a, 0x55555555;\nSKIP:")
    vals = list(range(N))
    d = run_op(body, [("a", "u32", vals)], [("d", "u32")])
    want = []
    for w in range(N // 32):
        s = sum(vals[w * 32 + i] for i in range(0, 32, 2))
        want += [s if i % 2 == 0 else 0 for i in range(32)]
    same_ints(d, want, "u32")


def test_bar_warp_sync_and_shfl_in_loop():
    # warp reduction through a loop of shfl.down; lane 0 holds the warp sum
    body = ("mov.u32 %r1, 16;\nmov.u32 %d, %a;\nbar.warp.sync 0xffffffff;\nLOOP:\n"
            "shfl.sync.down.b32 %r2, %d, %r1, 0x1f, 0xffffffff;\nadd.u32 %d, %d, %r2;\n"
            "shr.u32 %r1, %r1, 1;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra LOOP;")
    vals = [i * 3 + 1 for i in range(N)]
    d = run_op(body, [("a", "u32", vals)], [("d", "u32")])
    for w in range(N // 32):
        assert int(d[w * 32]) == sum(vals[w * 32:(w + 1) * 32])


def test_vote_ballot_in_partial_warp_with_activemask():
    # blocks of 48 threads: the second warp has 16 lanes; use activemask as member mask
    flags = [1 if (i * 7) % 3 == 0 else 0 for i in range(96)]
    body = ("activemask.b32 %r1;\nsetp.ne.u32 %p1, %a, 0;\nvote.sync.ballot.b32 %d, %p1, %r1;\n"
            "mov.u32 %e, %r1;")
    d, e = run_op(body, [("a", "u32", flags)], [("d", "b32"), ("e", "b32")], block_size=48)
    want_d, want_e = [], []
    for b in range(2):
        blk = flags[b * 48:(b + 1) * 48]
        w0 = sum(f << i for i, f in enumerate(blk[:32]))
        w1 = sum(f << i for i, f in enumerate(blk[32:]))
        want_d += [w0] * 32 + [w1] * 16
        want_e += [0xFFFFFFFF] * 32 + [0xFFFF] * 16
    same_ints(d, want_d, "b32")
    same_ints(e, want_e, "b32")


def test_warp_reduction_in_1024_thread_blocks():
    body = ("mov.u32 %r1, 16;\nmov.u32 %d, %a;\nLOOP:\n"
            "shfl.sync.bfly.b32 %r2, %d, %r1, 0x1f, 0xffffffff;\nadd.u32 %d, %d, %r2;\n"
            "shr.u32 %r1, %r1, 1;\nsetp.ne.u32 %p1, %r1, 0;\n@%p1 bra LOOP;")
    vals = [(i * 37) % 1001 for i in range(2048)]
    d = run_op(body, [("a", "u32", vals)], [("d", "u32")], block_size=1024)
    want = []
    for w in range(2048 // 32):
        want += [sum(vals[w * 32:(w + 1) * 32])] * 32
    same_ints(d, want, "u32")


def test_lanes_follow_linear_thread_index_in_3d_blocks():
    from ._util import launch, ptx_kernel
    out = np.zeros(64 * 2, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", """
mov.u32 %r0, %tid.x;
mov.u32 %r1, %tid.y;
mov.u32 %r2, %tid.z;
mad.lo.u32 %r3, %r2, 4, %r1;
mad.lo.u32 %r3, %r3, 8, %r0;
shfl.sync.bfly.b32 %r4, %r3, 9, 0x1f, 0xffffffff;
mov.u32 %r5, %laneid;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
st.global.v2.u32 [%rd1], {%r4, %r5};
ret;""")
    launch(k, 1, (8, 4, 2), [out])
    o = out.reshape(64, 2)
    assert o[:, 0].tolist() == [(t & ~31) | ((t % 32) ^ 9) for t in range(64)]
    assert o[:, 1].tolist() == [t % 32 for t in range(64)]
