"""Asynchronous barriers (dptx/cpu/renderer/lowering/async_barrier.py): libcu++'s cuda::barrier with
cuda::memcpy_async through NVRTC (sm_80: cp.async and mbarrier.test_wait; sm_90:
cp.async.bulk, expect_tx and try_wait) against numpy; mbarrier phases, counts, tokens and
transaction bytes in hand-written PTX; a wait that can never end is a deadlock error."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from tests.isa._util import kernel_from_ptx, kernel_text

PIPELINE = r'''#include <cuda/barrier>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void shift(const float* in, float* out) {
    // three rounds: the block copies a tile into shared memory asynchronously, waits on the
    // barrier, and every thread reads its neighbour's element
    __shared__ float tile[256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cg::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    for (int round = 0; round < 3; round++) {
        int base = (blockIdx.x * 3 + round) * 256;
        cuda::memcpy_async(block, tile, in + base, sizeof(float) * 256, bar);
        bar.arrive_and_wait();
        out[base + threadIdx.x] = tile[(threadIdx.x + 1) % 256] * 2.0f;
        bar.arrive_and_wait();
    }
}'''


@pytest.mark.parametrize("arch", ["compute_80", "compute_90"])
def test_libcu_barrier_and_memcpy_async(arch):
    module = dptx.RawModule(PIPELINE, options=("-std=c++17",), arch=arch)
    if arch == "compute_90":
        assert "mbarrier.try_wait" in module.ptx
    else:
        assert "cp.async.mbarrier.arrive" in module.ptx and "mbarrier.test_wait" in module.ptx
    k = module.get_function("shift")
    nb = 4
    x = np.random.default_rng(0).random(nb * 3 * 256).astype(np.float32)
    out = np.zeros_like(x)
    cpu.launch(k, (nb,), (256,), [x, out])
    assert np.array_equal(out, (np.roll(x.reshape(-1, 256), -1, axis=1) * 2).ravel())


MBARRIER = """
.shared .align 8 .b64 bar;
mov.u32 %r0, %tid.x;
mov.u32 %r1, bar;
setp.eq.u32 %p1, %r0, 0;
// thread 0 expects 64 arrivals and 128 transaction bytes
@%p1 mbarrier.init.shared.b64 [%r1], 64;
@%p1 mbarrier.expect_tx.shared.b64 [%r1], 128;
bar.sync 0;
// threads 0-62 arrive: thread 1 for two, thread 2 dropping out of later phases; thread 63
// does not arrive and waits on the parity of phase 0
setp.eq.u32 %p2, %r0, 1;
setp.eq.u32 %p3, %r0, 2;
setp.eq.u32 %p4, %r0, 63;
mov.u32 %r2, 1;
@%p2 mov.u32 %r2, 2;
mov.u32 %r3, 99;
@%p4 bra.uni PARITY;
@%p3 bra.uni DROP;
mbarrier.arrive.shared.b64 %rd5, [%r1], %r2;
bra.uni COUNTED;
DROP:
mbarrier.arrive_drop.shared.b64 %rd5, [%r1];
COUNTED:
mbarrier.pending_count.b64 %r3, %rd5;
@%p1 mbarrier.complete_tx.shared.b64 [%r1], 128;
LOOP:
mbarrier.test_wait.shared.b64 %p5, [%r1], %rd5;
@!%p5 bra.uni LOOP;
PARITY:
mbarrier.test_wait.parity.shared.b64 %p6, [%r1], 0;
@!%p6 bra.uni PARITY;
// phase 0 is complete, phase 1 (parity 1) is not
mbarrier.test_wait.parity.shared.b64 %p7, [%r1], 1;
selp.u32 %r4, 1, 0, %p6;
selp.u32 %r5, 1, 0, %p7;
ld.param.u64 %rd1, [p];
mul.wide.u32 %rd2, %r0, 12;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
st.global.u32 [%rd3+4], %r4;
st.global.u32 [%rd3+8], %r5;
"""


def test_mbarrier_phases_counts_tokens_and_transactions():
    """64 expected arrivals from 63 threads (one arrives for two, one drops out of later
    phases) and 128 transaction bytes: the phase completes only when all are in (thread 0
    counts the bytes off after its own arrival); the tokens then say their phase is done,
    the parities which phase is current; pending_count reads what a token left pending."""
    k = kernel_from_ptx(kernel_text(".param .u64 p", MBARRIER))
    out = np.zeros((64, 3), np.uint32)
    cpu.launch(k, (1,), (64,), [out])
    pending = out[:63, 0].astype(int).tolist()
    assert min(pending) == 0 and max(pending) <= 63 and len(set(pending)) == 63, pending
    assert out[63, 0] == 99                          # thread 63 never arrived
    assert (out[:, 1] == 1).all() and (out[:, 2] == 0).all()


def test_a_wait_that_never_ends_is_a_deadlock():
    body = """
.shared .align 8 .b64 bar;
mov.u32 %r0, %tid.x;
mov.u32 %r1, bar;
setp.eq.u32 %p1, %r0, 0;
@%p1 mbarrier.init.shared.b64 [%r1], 65;
bar.sync 0;
mbarrier.arrive.shared.b64 %rd5, [%r1];
LOOP:
mbarrier.try_wait.shared.b64 %p5, [%r1], %rd5;
@!%p5 bra.uni LOOP;
"""
    k = kernel_from_ptx(kernel_text(".param .u64 p", body))
    with pytest.raises(dptx.DptxError, match="mbarrier phase that never completes") as e:
        cpu.launch(k, (1,), (64,), [np.zeros(1, np.uint32)])
    assert "thread 0 " in str(e.value) and "try_wait" in str(e.value)


def test_bulk_copies_complete_on_an_mbarrier():
    """sm_90's cp.async.bulk: global -> shared counted off an mbarrier's transaction bytes
    (arrive.expect_tx announces them), then shared -> global in a bulk group."""
    body = """
.shared .align 16 .b8 s[1024];
.shared .align 8 .b64 bar;
mov.u32 %r0, %tid.x;
mov.u32 %r1, bar;
mov.u32 %r2, s;
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
setp.eq.u32 %p1, %r0, 0;
@%p1 mbarrier.init.shared::cta.b64 [%r1], 1;
bar.sync 0;
@%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r1], 1024;
@%p1 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r2], [%rd1], 1024, [%r1];
WAIT:
mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;
@!%p2 bra.uni WAIT;
// every thread doubles its word in shared memory, then thread 0 copies it all out
mul.wide.u32 %rd3, %r0, 4;
cvt.u32.u64 %r3, %rd3;
add.u32 %r4, %r2, %r3;
ld.shared.f32 %f1, [%r4];
add.f32 %f1, %f1, %f1;
st.shared.f32 [%r4], %f1;
fence.proxy.async.shared::cta;
bar.sync 0;
@%p1 cp.async.bulk.global.shared::cta.bulk_group [%rd2], [%r2], 1024;
@%p1 cp.async.bulk.commit_group;
@%p1 cp.async.bulk.wait_group 0;
"""
    k = kernel_from_ptx(kernel_text(".param .u64 pin, .param .u64 pout", body))
    x = np.random.default_rng(1).random(256).astype(np.float32)
    out = np.zeros(256, np.float32)
    cpu.launch(k, (1,), (256,), [x, out])
    assert np.array_equal(out, x + x)
