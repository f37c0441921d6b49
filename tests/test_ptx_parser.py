"""The PTX front-end on hand-written PTX: every construct, round-trips and error positions."""
import pathlib

import pytest

from dptx import PtxSyntaxError
from dptx.ptx import (Addr, AddrList, CallPrototype, Directive, Imm, Instruction, Label, Pair,
                      ParamList, Reg, RegDecl, Scope, Sym, SymInit, TargetTable, Vec, parse,
                      print_module)

SAMPLES = pathlib.Path(__file__).parent / "ptx_samples"


def sample(name):
    return (SAMPLES / name).read_text()


def find(function, text):
    """The first instruction whose printed form starts with ``text``."""
    for inst in function.instructions:
        if str(inst).startswith(text):
            return inst
    raise AssertionError(f"no instruction starting with {text!r}")


@pytest.mark.parametrize("name", ["old_style.ptx", "modern.ptx", "triton_style.ptx"])
def test_samples_round_trip(name):
    m = parse(sample(name))
    printed = print_module(m)
    assert parse(printed) == m
    # Printing is stable: a second round gives the same text.
    assert print_module(parse(printed)) == printed


def test_old_style_module_header_and_globals():
    m = parse(sample("old_style.ptx"))
    assert m.version == "6.5"
    assert m.target == ("sm_70", "texmode_independent", "debug")
    assert m.address_size == 64
    g = {v.name: v for v in m.global_variables}
    assert g["counters"].dims == (2, 3) and g["counters"].align == 4
    assert g["counters"].init == ((Imm(1), Imm(2), Imm(3)), (Imm(4), Imm(5), Imm(7)))
    assert g["counters"].size == 24
    assert g["counters_ptr"].init == SymInit("counters", 0, generic=True)
    assert g["counters_plus"].init == SymInit("counters", 8)
    assert g["scale"].space == "const" and g["scale"].init == Imm(0x40000000, "f32")
    assert g["dscale"].init == Imm(0x4000000000000000, "f64")
    # octal 017 = 15, hex negative
    assert g["negs"].init == (Imm(-1), Imm(-16), Imm(15))
    assert g["bits"].init == Imm(11)
    assert g["dyn_smem"].dims == (None,) and g["dyn_smem"].size is None
    assert g["dyn_smem"].linkage == ("extern",) and g["dyn_smem"].align == 16
    assert g["weak_var"].linkage == ("weak",)


def test_old_style_functions():
    m = parse(sample("old_style.ptx"))
    add_one = m.function("add_one")
    assert add_one.kind == "func" and add_one.returns[0].space == "reg"
    assert add_one.params[0].name == "in"
    # Registers declared as function parameters resolve as registers in the body.
    assert add_one.instructions[0].operands == (Reg("out"), Reg("in"), Imm(1))
    twice = m.function("twice")
    assert twice.is_declaration and "noreturn" in twice.performance
    assert twice.linkage == ("visible",)
    vprintf = m.function("vprintf")
    assert vprintf.linkage == ("extern",) and [p.name for p in vprintf.params] == ["fmt", "args"]

    k = m.function("scale_array")
    assert k.is_kernel and m.kernels == [k]
    assert k.performance == {"maxntid": (256, 1, 1), "minnctapersm": (2,)}
    data, n, info = k.params
    assert data.ptr and data.ptr_space == "global" and data.ptr_align == 4 and data.type == "u64"
    assert info.type == "b8" and info.dims == (16,) and info.align == 8 and info.size == 16
    assert [(p.name, off) for p, off in k.param_layout()] == [("data", 0), ("n", 8), ("info", 16)]
    assert k.param_size == 32
    regs = k.registers
    assert regs["tid"] == ("u32", None) and regs["quad"] == ("f32", 4) and regs["p"] == ("pred", None)
    assert [v.name for v in k.local_variables] == ["scratch", "tile"]


def test_old_style_instructions():
    k = parse(sample("old_style.ptx")).function("scale_array")
    mov = find(k, "mov.u32 tid")
    assert mov.operands == (Reg("tid"), Reg("%tid", "x"))
    assert mov.destinations == (Reg("tid"),) and mov.sources == (Reg("%tid", "x"),)
    setp = find(k, "setp.ge.u32")
    assert setp.operands[0] == Pair(Reg("p"), Reg("q"))
    assert setp.types == ("u32",) and setp.modifiers == ("ge", "u32")
    bra = find(k, "@p bra")
    assert bra.guard == Reg("p") and bra.operands == (Sym("DONE"),)
    assert find(k, "st.f32").operands[0] == Addr(Reg("addr"), 0)
    assert find(k, "st.f32").destinations == ()
    assert find(k, "st.shared.f32").operands[0] == Addr(Sym("tile"), 4)
    vec = find(k, "ld.shared.v4.f32")
    assert vec.operands[0] == Vec((Reg("quad", "x"), None, Reg("quad", "z"), None))
    assert find(k, "ld.param.b32").operands[1] == Addr(Sym("info"), 8)
    assert find(k, "ld.u32").operands[1] == Addr(None, 16)
    assert find(k, "mov.u32 tmp, -1").operands[1] == Imm(-1)
    assert find(k, "mov.u32 tmp, 0xffffffffU").operands[1] == Imm(0xFFFFFFFF, "int", True)
    assert find(k, "add.u32 tmp, tmp, 17").operands[2] == Imm(17)  # (2 << 3) + 1
    neg = find(k, "@!q")
    assert neg.guard == Reg("q", None, True)
    assert k.labels["DONE"] == len(k.instructions) - 1


def test_modern_sample():
    m = parse(sample("modern.ptx"))
    assert m.target == ("sm_90a",)
    assert m.aliases == [("alias", "kernel_alias", "helper")]
    k = m.function("modern")
    assert k.performance["reqntid"] == (128, 1, 1)
    assert k.performance["explicitcluster"] == ()
    assert k.performance["reqnctapercluster"] == (2, 1, 1)
    assert k.params[1].dims == (24,) and k.params[1].align == 8
    assert [(p.name, off) for p, off in k.param_layout()] == [
        ("modern_param_0", 0), ("modern_param_1", 8), ("modern_param_2", 32)]
    ld = find(k, "@%p1 ld.global.L2::evict_last.b32")
    assert ld.modifiers == ("global", "L2::evict_last", "b32")
    assert ld.operands == (Vec((Reg("%r4"),)), Addr(Reg("%rd1"), 0))
    assert find(k, "ld.global.nc").operands[1] == Addr(Reg("%rd1"), -16)
    shfl = find(k, "shfl.sync.bfly.b32")
    assert shfl.operands == (Pair(Reg("%r5"), Reg("%p2")), Reg("%r4"), Imm(16), Imm(31), Imm(-1))
    assert find(k, "mov.f32 %f5, 1.5").operands[1] == Imm(1.5, "float")
    assert find(k, "mov.f64").operands[1] == Imm(0xBFF0000000000000, "f64")
    # -0f3F800000 is the bit pattern with the sign flipped
    assert find(k, "add.f32").operands[2] == Imm(0xBF800000, "f32")
    assert find(k, "mbarrier").modifiers == ("try_wait", "parity", "shared::cta", "b64")
    assert find(k, "lop3").operands[-1] == Imm(0x96)
    calls = [i for i in k.instructions if i.opcode == "call"]
    assert calls[0].modifiers == ("uni",)
    assert calls[0].operands == (ParamList((Sym("retval0"),)), Sym("helper"), ParamList((Sym("param0"),)))
    assert calls[0].destinations == (ParamList((Sym("retval0"),)),)
    assert calls[1].operands[1] == Reg("%rd4") and calls[1].operands[3] == Sym("prototype_0")
    scopes = [s for s in k.body if isinstance(s, Scope)]
    assert len(scopes) == 2
    assert isinstance(scopes[0].body[0], RegDecl) and scopes[0].body[0].name == "temp_param_reg"
    proto = next(s for s in scopes[1].body if isinstance(s, CallPrototype))
    assert proto.name == "prototype_0" and proto.returns[0].type == "b32"
    table = next(s for s in k.statements() if isinstance(s, TargetTable))
    assert table.kind == "branchtargets" and table.targets == ("$L__BB0_1", "$L__BB0_2")
    assert find(k, "@!%p1 bra.uni").guard == Reg("%p1", None, True)
    locs = [s for s in k.statements() if isinstance(s, Directive) and s.text.startswith(".loc")]
    assert [d.text for d in locs] == [".loc 1 10 0", ".loc 1 12 5"]
    sections = [i for i in m.items if isinstance(i, Directive) and i.text.startswith(".section")]
    assert len(sections) == 2 and "$L__func_begin0" in sections[1].text
    assert any(isinstance(i, Directive) and i.text.startswith(".file") for i in m.items)


def test_immediate_forms():
    m = parse("""
    .version 7.8
    .target sm_80
    .address_size 64
    .entry k() {
        .reg .b32 %r<2>;
        .reg .b64 %rd<2>;
        mov.b32 %r1, 0x7fffffff;
        mov.b32 %r1, 0X10;
        mov.b32 %r1, 0b1010;
        mov.b32 %r1, 0777;
        mov.b32 %r1, 42U;
        mov.b32 %r1, -2147483648;
        mov.b64 %rd1, 0xFFFFFFFFFFFFFFFF;
        mov.b32 %r1, 0F7F800000;
        mov.b64 %rd1, 0D7FF8000000000000;
        mov.b32 %r1, 1.0e3;
        mov.b32 %r1, ~0;
        mov.b32 %r1, 3 * 4 - 1;
    }
    """)
    ops = [i.operands[1] for i in m.function("k").instructions]
    assert ops == [Imm(0x7FFFFFFF), Imm(16), Imm(10), Imm(0o777), Imm(42, "int", True),
                   Imm(-2147483648), Imm(0xFFFFFFFFFFFFFFFF), Imm(0x7F800000, "f32"),
                   Imm(0x7FF8000000000000, "f64"), Imm(1000.0, "float"), Imm(-1), Imm(11)]
    assert parse(print_module(m)) == m


def test_any_opcode_parses():
    """The parser is grammar-general: unknown opcodes and modifiers parse."""
    m = parse(""".version 9.0
    .target sm_100a
    .address_size 64
    .entry k() {
        frobnicate.sync.aligned.m64n8k16.zz::yy %r1, [%rd1+8], {%f1, _}, 3;
        tex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [tex0, {%f5, %f6}];
        nop;
    }""")
    insts = m.function("k").instructions
    assert insts[0].opcode == "frobnicate"
    assert insts[0].modifiers == ("sync", "aligned", "m64n8k16", "zz::yy")
    assert insts[1].operands[1] == AddrList((Sym("tex0"), Vec((Reg("%f5"), Reg("%f6")))))
    assert insts[2].operands == ()
    assert parse(print_module(m)) == m


def test_video_lane_selectors_parse_and_round_trip():
    """Video instructions select half-words and bytes of their operands (``%r2.h10``,
    ``%r3.b7654``) and name the destination's lanes (``%r1.h0``)."""
    m = parse(""".version 8.0
    .target sm_80
    .address_size 64
    .entry k() {
        vsub2.s32.s32.s32.sat %r1.h0, %r2.h10, %r3.h32, %r1;
        vmax4.u32.u32.u32 %r1.b20, %r2.b7654, %r3.b0123, %r5;
        vabsdiff4.u32.u32.u32.add %r1, %r2, %r3, %r4;
    }""")
    insts = m.function("k").instructions
    assert insts[0].operands[:3] == (Reg("%r1", "h0"), Reg("%r2", "h10"), Reg("%r3", "h32"))
    assert insts[1].operands[:3] == (Reg("%r1", "b20"), Reg("%r2", "b7654"), Reg("%r3", "b0123"))
    assert parse(print_module(m)) == m


def test_source_lines_recorded():
    m = parse(sample("old_style.ptx"))
    k = m.function("scale_array")
    mov = k.instructions[0]
    lines = sample("old_style.ptx").splitlines()
    assert "mov.u32 tid, %tid.x" in lines[mov.line - 1]
    assert lines[mov.line - 1].index("mov") + 1 == mov.column


@pytest.mark.parametrize("text, line, column, found, expected", [
    # missing semicolon: the error points at the next statement's first token
    (".version 7.0\n.target sm_80\n.address_size 64\n.entry k() {\n  add.s32 %r1, %r2, %r3\n  ret;\n}",
     6, 3, "ret", "';'"),
    # a stray character
    (".version 7.0\n.target sm_80\n.entry k() {\n    mov.u32 %r1, #5;\n}", 4, 18, "#", "PTX token"),
    # unterminated body
    (".version 7.0\n.target sm_80\n.entry k() {\n  ret;\n", 5, 1, "end of input", "'}'"),
    # missing register count closing bracket
    (".version 7.0\n.entry k() {\n  .reg .b32 %r<4;\n}", 3, 17, ";", "'>'"),
    # a bad address
    (".version 7.0\n.entry k() {\n  ld.u32 %r1, [%rd1+];\n}", 3, 21, "]", "integer constant"),
    # a parameter without a type
    (".version 7.0\n.entry k(.param p) {\n}", 2, 17, "p", "a type"),
    # bad top-level token
    ("add.u32 %r1, %r2, 1;", 1, 1, "add", "a directive"),
    # malformed octal literal
    (".version 7.0\n.entry k() {\n  mov.u32 %r1, 09;\n}", 3, 16, "09", "integer"),
])
def test_syntax_errors_name_line_and_column(text, line, column, found, expected):
    with pytest.raises(PtxSyntaxError) as info:
        parse(text)
    err = info.value
    assert (err.line, err.column) == (line, column), str(err)
    assert found in err.text
    assert expected in err.expected
    assert f"line {line}, column {column}" in str(err)


def test_equality_ignores_positions_but_not_content():
    a = parse(".version 7.0\n.target sm_80\n.entry k() {\n ret;\n}")
    b = parse("\n\n.version 7.0\n.target sm_80\n\n.entry k()\n{\n\n\n   ret;\n}")
    assert a == b
    c = parse(".version 7.0\n.target sm_80\n.entry k() {\n exit;\n}")
    assert a != c


def test_instruction_str():
    inst = Instruction("add", ("s32",), (Reg("%r1"), Reg("%r2"), Imm(-4)), Reg("%p1", None, True))
    assert str(inst) == "@!%p1 add.s32 %r1, %r2, -4;"
    assert isinstance(parse(".entry k() { L: ret; }").function("k").body[0], Label)


def test_a_lone_surrogate_is_a_syntax_error_at_its_line_and_column():
    """A str may hold a lone surrogate (undecodable bytes read with errors='surrogateescape'),
    UTF-8 text cannot: PTX holding one, even in a comment, could reach neither a driver nor
    ptxas, nor be hashed (it raised UnicodeEncodeError from the module digest). The tokenizer
    refuses it where it is, and the message prints (the surrogate shown escaped). Issue 40."""
    import dptx
    text = (".version 7.0\n.target sm_80\n.address_size 64\n// note \ud800 here\n"
            ".visible .entry k() {\n  ret;\n}\n")
    for make in (parse, lambda t: dptx.RawModule(ptx=t).get_function("k")):
        with pytest.raises(PtxSyntaxError) as info:
            make(text)
        err = info.value
        assert (err.line, err.column) == (4, 9)
        message = str(err)
        message.encode("utf-8")         # printable: no surrogate left in it
        assert "line 4, column 9" in message and "lone surrogate" in message
        assert "// note \\ud800 here" in message
    assert parse(text.replace("\ud800", "\u00e9")).function("k")    # other non-ASCII is fine


def test_a_c_strings_terminator_ends_the_text():
    """NVRTC's PTX buffer ends with a NUL (a C string), as Warp's bundled NVRTC hands it over:
    the text ends there. A NUL anywhere else is refused with its place."""
    ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n}\n"
    assert [f.name for f in parse(ptx + "\0").kernels] == ["k"]
    assert [f.name for f in parse(ptx + "\0\0").kernels] == ["k"]
    with pytest.raises(PtxSyntaxError) as info:
        parse(ptx.replace("ret;", "ret;\0"))
    assert info.value.line == 6 and "\\x00" in str(info.value)

