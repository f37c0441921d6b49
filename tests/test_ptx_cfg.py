"""CFG construction, dominators, post-dominators and sync points."""
import networkx as nx

from dptx.runtime.nvrtc import compile_to_ptx
from dptx.ptx import parse
from dptx.ptx.cfg import ENTRY, EXIT, build_cfg

LOOP = """
.version 7.0
.target sm_80
.address_size 64
.entry k(.param .u32 n) {
    .reg .pred %p<3>;
    .reg .b32 %r<5>;
    ld.param.u32 %r1, [n];          // block 0
    mov.u32 %r2, 0;
$LOOP:
    bar.sync 0;                     // block 1: loop header with a barrier
    add.u32 %r2, %r2, 1;
    setp.lt.u32 %p1, %r2, %r1;
    @%p1 bra $LOOP;
    setp.eq.u32 %p2, %r2, 7;        // block 2
    @%p2 ret;
    shfl.sync.idx.b32 %r3, %r2, 0, 31, -1;   // block 3
    bar.warp.sync -1;
    bra.uni $END;
    add.u32 %r4, %r4, 1;            // block 4: unreachable
$END:
    exit;                           // block 5
}
"""


def test_blocks_and_edges():
    f = parse(LOOP).function("k")
    cfg = build_cfg(f)
    spans = [(b.start, b.end) for b in cfg.blocks]
    assert spans == [(0, 2), (2, 6), (6, 8), (8, 11), (11, 12), (12, 13)]
    g = cfg.graph
    assert set(g.successors(ENTRY)) == {0}
    assert set(g.successors(0)) == {1}
    assert set(g.successors(1)) == {1, 2}          # predicated back edge + fall-through
    assert set(g.successors(2)) == {EXIT, 3}       # predicated ret
    assert set(g.successors(3)) == {5}             # unconditional branch
    assert set(g.successors(4)) == {5}
    assert set(g.successors(5)) == {EXIT}
    assert cfg.blocks[1].labels == ["$LOOP"]
    assert cfg.reachable_blocks() == {0, 1, 2, 3, 5}
    assert cfg.back_edges() == [(1, 1)]


def test_dominators():
    cfg = build_cfg(parse(LOOP).function("k"))
    idom = cfg.immediate_dominators
    assert idom[1] == 0 and idom[2] == 1 and idom[3] == 2 and idom[5] == 3
    assert cfg.dominates(0, 5) and cfg.dominates(1, 3) and not cfg.dominates(3, 2)
    ipdom = cfg.immediate_post_dominators
    assert ipdom[0] == 1 and ipdom[1] == 2 and ipdom[3] == 5 and ipdom[2] == EXIT
    assert cfg.post_dominates(2, 0) and not cfg.post_dominates(3, 2)


def test_sync_points():
    cfg = build_cfg(parse(LOOP).function("k"))
    points = [(p.instruction, p.block, p.kind) for p in cfg.sync_points]
    assert points == [(2, 1, "cta"), (8, 3, "warp"), (9, 3, "warp")]


def test_brx_idx_edges():
    f = parse("""
    .version 7.0
    .entry k() {
        .reg .b32 %r1;
        mov.u32 %r1, 1;
        brx.idx %r1, $T;
    $T: .branchtargets $A, $B, $C;
    $A:
        bra $C;
    $B:
        ret;
    $C:
        exit;
    }""").function("k")
    cfg = build_cfg(f)
    assert set(cfg.successors(0)) == {1, 2, 3}
    assert set(cfg.successors(1)) == {3}


def test_cfg_of_compiled_kernel_is_consistent():
    ptx = compile_to_ptx(r'''
    extern "C" __global__ void reduce(const float* in, float* out, int n) {
        __shared__ float s[256];
        int t = threadIdx.x;
        float v = 0;
        for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) v += in[i];
        s[t] = v;
        __syncthreads();
        for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
            if (t < stride) s[t] += s[t + stride];
            __syncthreads();
        }
        if (t == 0) out[blockIdx.x] = s[0];
    }''')
    f = parse(ptx).function("reduce")
    cfg = build_cfg(f)
    # every instruction belongs to exactly one block and blocks tile the body
    assert sum(len(b) for b in cfg.blocks) == len(f.instructions)
    assert nx.has_path(cfg.graph, ENTRY, EXIT)
    assert all(nx.has_path(cfg.graph, b, EXIT) for b in cfg.reachable_blocks())
    kinds = [p.kind for p in cfg.sync_points]
    assert kinds.count("cta") == 2
    # the barrier in the loop sits in a block that lies on a cycle
    loop_barrier = cfg.sync_points[1].block
    assert any(loop_barrier in cycle for cycle in nx.simple_cycles(cfg.graph))
