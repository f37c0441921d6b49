"""Valid but less common PTX: the executor either runs it or raises PtxUnsupportedError naming
the instruction and its line. Never another kind of exception, never a silent no-op where a
result can be checked. Also trap."""
import numpy as np
import pytest

import dptx

from ._util import HEADER, SCRATCH, kernel_from_ptx, launch

PROLOGUE = """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r2, shm;
mov.u64 %rd3, shm;
mov.f32 %f1, 0f3F800000;
mov.f32 %f2, 0f40000000;
mov.u32 %r3, 0x3C003C00;
mov.u32 %r4, 7;
mov.b16 %h1, 0x3C00;
"""

EXOTIC = [
    "cvt.rna.tf32.f32 %r1, %f1;",
    "cvt.rn.satfinite.e4m3x2.f32 %h2, %f1, %f2;",
    "cvt.rn.f16x2.e4m3x2 %r1, %h1;",
    "ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r1}, [%r2];",
    "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%f3,%f4,%f5,%f6}, {%r3,%r3}, {%r3}, {%f1,%f1,%f1,%f1};",
    "cp.async.ca.shared.global [%r2], [%rd1], 4;\ncp.async.commit_group;\ncp.async.wait_all;",
    "red.global.add.noftz.f16x2 [%rd1], %r3;",
    "atom.global.add.noftz.f16 %h2, [%rd1], %h1;",
    "mbarrier.init.shared.b64 [%rd3], 1;",
    "fns.b32 %r1, %r4, 0, 1;",
    "vabsdiff4.u32.u32.u32.add %r1, %r3, %r4, %r4;",
    "vadd.s32.s32.s32.sat %r1, %r3, %r4;",
    "createpolicy.fractional.L2::evict_last.b64 %rd2, 1.0;",
    "alloca.u64 %rd2, 16;",
    "stacksave.u64 %rd2;",
    "mov.u32 %r1, %smid;\nmov.u32 %r5, %warpid;\nmov.u32 %r6, %nwarpid;\nmov.u64 %rd2, %gridid;",
    "mov.u64 %rd2, %globaltimer;",
    "mov.u32 %r1, %dynamic_smem_size;\nmov.u32 %r5, %total_smem_size;",
    "griddepcontrol.wait;",
    "pmevent 1;",
    "nanosleep.u32 10;",
    "tanh.approx.f16 %h2, %h1;",
    "ex2.approx.f16x2 %r1, %r3;",
    "abs.f16x2 %r1, %r3;",
    "fma.rn.sat.f16x2 %r1, %r3, %r3, %r3;",
    "min.NaN.f16x2 %r1, %r3, %r3;",
    "max.xorsign.abs.f32 %f3, %f1, %f2;",
    "add.rn.bf16 %h2, %h1, %h1;",
    "mul.rn.bf16x2 %r1, %r3, %r3;",
    "cvt.rn.f16x2.f32 %r1, %f1, %f2;\ncvt.f32.f16 %f3, %h1;",
    "mov.b64 {%r1, %r5}, %rd1;\nmov.b32 {%h2, %h3}, %r1;",
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("inst", EXOTIC, ids=[e.split()[0] for e in EXOTIC])
def test_runs_or_raises_unsupported(inst):
    text = (HEADER + ".shared .align 16 .b8 shm[256];\n.visible .entry k(.param .u64 p)\n{\n" +
            SCRATCH + PROLOGUE + inst + "\nret;\n}\n")
    buf = np.zeros(64, dtype=np.uint32)
    try:
        k = kernel_from_ptx(text)
        launch(k, 1, 32, [buf])
    except dptx.PtxUnsupportedError as e:
        msg = str(e)
        assert "line" in msg and inst.split()[0].split(".")[0] in msg, msg


def test_trap_raises_dptx_error_and_process_continues():
    text = HEADER + ".visible .entry trapk(.param .u64 p)\n{\n" + SCRATCH + """
mov.u32 %r1, %tid.x;
setp.eq.u32 %p1, %r1, 5;
@%p1 trap;
ret;
}
"""
    with pytest.raises(dptx.DptxError) as ei:
        launch(kernel_from_ptx(text, "trapk"), 1, 32, [np.zeros(1, dtype=np.uint32)])
    assert "trapk" in str(ei.value)
    out = np.zeros(1, dtype=np.uint32)
    ok = HEADER + ".visible .entry okk(.param .u64 p)\n{\n" + SCRATCH + """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
st.global.u32 [%rd1], 9;
ret;
}
"""
    launch(kernel_from_ptx(ok, "okk"), 1, 1, [out])
    assert out[0] == 9
