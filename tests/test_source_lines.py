"""Errors name the CUDA source line (file.cu:line) next to the PTX line, from the .file/.loc
line information that -lineinfo and -G put in the PTX."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.ptx.source_lines import source_lines, with_source_lines

OVERRUN = '''extern "C" __global__ void overrun(float* a, int n) {
    int i = threadIdx.x;
    float v = a[i] * 2.0f;
    a[i + n] = v;          // line 4: past the end when n is large
}
'''

UNSUPPORTED = '''extern "C" __global__ void barrier_init(unsigned long long* bar) {
    __shared__ unsigned short b[64];
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
    bar[0] = b[0];
}
'''


@pytest.mark.parametrize("flag", ["-lineinfo", "-G"])
def test_a_memory_error_names_the_source_line(flag):
    k = dptx.RawModule(OVERRUN, options=(flag,), name="overrun.cu").get_function("overrun")
    with pytest.raises(dptx.DptxMemoryError) as info:
        cpu.launch(k, 1, 32, [np.ones(32, np.float32), np.int32(1000)])
    text = str(info.value)
    assert "(overrun.cu:4)" in text, text
    line = int(text.split("PTX line ")[1].split()[0])
    assert k.ptx.splitlines()[line - 1].strip().startswith("st.")     # -G: generic st


def test_an_unsupported_instruction_names_the_source_line():
    k = dptx.RawModule(UNSUPPORTED, options=("-lineinfo",), name="bar.cu").get_function("barrier_init")
    with pytest.raises(dptx.PtxUnsupportedError) as info:
        cpu.launch(k, 1, 1, [np.zeros(1, np.uint64)])
    assert "tcgen05" in str(info.value) and "(bar.cu:3)" in str(info.value), str(info.value)


def test_without_line_information_only_the_ptx_line():
    k = dptx.RawModule(OVERRUN).get_function("overrun")
    with pytest.raises(dptx.DptxMemoryError) as info:
        cpu.launch(k, 1, 32, [np.ones(32, np.float32), np.int32(1000)])
    assert ".cu:" not in str(info.value) and "PTX line" in str(info.value)


def test_the_map_follows_loc_directives_per_function():
    ptx = "\n".join([
        '.version 8.0', '.target sm_80', '.address_size 64',
        '.visible .entry f(.param .u64 p)', '{',
        '\t.reg .b32 %r<2>;',
        '\t.loc\t1 10 3',
        '\tmov.u32 %r1, 1;',                 # line 8 <- a.cu:10
        '\t.loc\t2 7 1',
        '\tret;',                            # line 10 <- b.h:7
        '}',
        '.visible .entry g()', '{',
        '\tret;',                            # line 14: no .loc in g yet
        '}',
        '\t.file\t1 "/tmp/x/a.cu"', '\t.file\t2 "b.h"'])
    assert source_lines(ptx) == {8: "a.cu:10", 10: "b.h:7"}
    assert with_source_lines("at PTX line 10 and PTX line 14", ptx) == \
        "at PTX line 10 (b.h:7) and PTX line 14"


def test_a_message_annotated_twice_keeps_each_line_whole():
    """A message that passes through the annotation twice (a worker's error, then the
    client's) is annotated once: "PTX line 311 (gen.py:73)" stays so, where line 31 also has
    a place (a lookahead that backtracked made it "PTX line 31 (gen.py:58)1 (gen.py:73)")."""
    lines = ['.version 8.0', '.target sm_80', '.address_size 64', '.visible .entry f()', '{',
             '\t.reg .b32 %r<3>;', '\t.loc\t1 58 0']
    lines += ['\tmov.u32 %r1, 1;'] * (311 - len(lines) - 2)       # lines 8..309 <- gen.py:58
    lines += ['\t.loc\t1 73 0', '\tmov.u32 %r2, 2;', '\tret;', '}', '\t.file\t1 "/x/gen.py"']
    ptx = "\n".join(lines)
    assert source_lines(ptx)[31] == "gen.py:58" and source_lines(ptx)[311] == "gen.py:73"
    once = with_source_lines("PTX line 311: st.global", ptx)
    assert once == "PTX line 311 (gen.py:73): st.global"
    assert with_source_lines(once, ptx) == once
    assert with_source_lines("PTX line 31: a", ptx) == "PTX line 31 (gen.py:58): a"
