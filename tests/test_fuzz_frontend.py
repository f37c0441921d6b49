"""A bounded, seeded fuzz of the front end and the CPU translation (issue 20): mutants of the
corpus's PTX (as NVRTC compiles it) and of hand-written PTX, each parsed, checked, translated
to LLVM IR and verified by LLVM. Every one must either go through or raise a ``DptxError``
(``PtxSyntaxError`` with line and column, ``PtxUnsupportedError``) within seconds: never an
internal exception, a RecursionError, a MemoryError or a hang. ``DPTX_FUZZ_INPUTS`` sets how
many (300 per CI run; the note quotes longer runs)."""
import os
import random
import re
import signal

import pytest

from dptx.corpus import HERE as CORPUS
from dptx.cpu.renderer.codegen import Module
from dptx.cpu.jit import verified_module
from dptx.errors import DptxError
from dptx.runtime.nvrtc import compile_module
from dptx.ptx.ir import Function
from dptx.ptx.parser import parse

INPUTS = int(os.environ.get("DPTX_FUZZ_INPUTS", "300"))
SECONDS = 10          # per input, parse to verified LLVM IR

HAND_WRITTEN = """.version 7.8
.target sm_80
.address_size 64
.const .align 4 .u32 c[4] = {1, 2, 3, 4};
.visible .entry k(.param .u64 p, .param .u32 n)
{
  .reg .pred %p<3>; .reg .b32 %r<10>; .reg .b64 %rd<8>; .reg .f32 %f<4>;
  ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd2, %rd1; ld.param.u32 %r1, [n];
  mov.u32 %r2, %tid.x; mov.u32 %r3, %ctaid.x; mov.u32 %r4, %ntid.x;
  mad.lo.s32 %r5, %r3, %r4, %r2;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra $L__done;
  mul.wide.s32 %rd3, %r5, 4; add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4]; ld.const.u32 %r6, [c+4]; cvt.rn.f32.u32 %f2, %r6;
  fma.rn.f32 %f3, %f1, %f2, 0f3F800000;
  shl.b32 %r7, %r5, 2; and.b32 %r8, %r7, 255; xor.b32 %r9, %r8, %r6;
  st.global.f32 [%rd4], %f3;
$L__done:
  ret;
}
"""

TYPES = ["b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64",
         "f16", "f16x2", "bf16", "f32", "f64", "pred", "e5m2", "b128"]
VALUES = ["1099511627776", "4294967296", "-1", "0xFFFFFFFFFFFFFFFF", "99999999999999999999999",
          "1e999", "0d7FF0000000000000", "2147483648", "0", "(((((1)))))", "1 << 70"]
OPCODES = ["add", "sub", "mul", "mad", "shl", "shr", "and", "cvt", "cvta", "mov", "ld", "st",
           "setp", "selp", "bra", "call", "ret", "atom", "bar", "shfl", "fma", "div", "rem",
           "abs", "neg", "min", "max", "slct", "prmt", "bfe", "bfi", "popc", "vote", "red",
           "membar", "exit", "trap", "tex", "wmma"]
DECLARATIONS = [".local .b8 l[1099511627776];", ".global .u32 g = g;",
                ".global .f32 gf[2] = {1, inf};", ".shared .b8 sh[9999999999];",
                ".reg .b32 %rz<1000000000>;", ".const .b8 cc[99999999];", ".reg .b99 %q;"]


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    body = [i for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("//")]
    i = rng.choice(body)
    line = lines[i]
    kind = rng.randrange(14)
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, line)
    elif kind == 2:         # drop a token
        toks = re.split(r"(\s+|,|;|\[|\]|\{|\})", line)
        words = [j for j, t in enumerate(toks) if t.strip() and t not in ",;[]{}"]
        if words:
            del toks[rng.choice(words)]
        lines[i] = "".join(toks)
    elif kind == 3:
        lines[i] = re.sub(r"(?<![%\w])\d+", lambda m: rng.choice(VALUES), line, count=1)
    elif kind == 4:
        lines[i] = re.sub(r"<\d+>", "<" + rng.choice(["1000000000", "0", "99999999999"]) + ">",
                          line)
    elif kind == 5:
        lines[i] = re.sub(r"\$L__\w+", "NOWHERE", line)
    elif kind == 6:         # drop the last operand
        lines[i] = re.sub(r",\s*[^,;]+;", ";", line)
    elif kind == 7:
        lines[i] = re.sub(r"\.(" + "|".join(TYPES) + r")\b", "." + rng.choice(TYPES), line,
                          count=1)
    elif kind == 8:
        depth = rng.choice([50, 3000])
        lines.insert(i, "{" * depth + "}" * depth if rng.random() < 0.5 else
                     "mov.u32 %r1, " + "(" * depth + "1" + ")" * depth + ";")
    elif kind == 9:
        lines.insert(i, "// \ud800 a lone surrogate")
    elif kind == 10:
        j = rng.choice(body)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == 11:
        lines[i] = re.sub(r"^(\s*(?:@!?%\w+\s+)?)(\w+)",
                          lambda m: m.group(1) + rng.choice(OPCODES), line, count=1)
    elif kind == 12:
        lines.insert(i, rng.choice(DECLARATIONS))
    else:
        lines[i] = line.replace("[", "[%r1+", 1) if "[" in line else line + " ]"
    return "\n".join(lines)


def _context(module) -> tuple:
    """What a kernel's translation depends on besides the kernel itself."""
    return (module.version, module.target, module.address_size,
            [i for i in module.items if not (isinstance(i, Function) and i.is_kernel)])


def _translate(text: str, seed=None) -> None:
    """Parse ``text`` and translate its kernels to verified LLVM IR. Given the parsed
    ``seed`` it came from, a kernel equal to the seed's in an unchanged context is skipped:
    its translation is the seed's (the seeds fixture translates each seed whole); most
    inputs change one kernel of a module of many."""
    module = parse(text)
    same_context = seed is not None and _context(module) == _context(seed)
    before = {f.name: f for f in seed.kernels} if same_context else {}
    for f in module.functions:
        if f.is_kernel and f.body is not None and before.get(f.name) != f:
            verified_module(Module(module, f.name, "1").translate())


class _Hang(Exception):
    pass


@pytest.fixture(scope="module")
def seeds():
    out = [HAND_WRITTEN]
    for cu in sorted(CORPUS.glob("*.cu")):
        ptx, _ = compile_module(cu.read_text(), ("-lineinfo",), "compute_80", name=cu.name)
        out.append(ptx)
    for text in out:
        _translate(text)        # each seed whole (the inputs skip the kernels it kept)
    return out


def test_malformed_ptx_gives_dptx_errors_in_bounded_time(seeds):
    rng = random.Random(20)
    escaped = []

    def on_alarm(*_):
        raise _Hang()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        parsed = {text: parse(text) for text in seeds}
        for n in range(INPUTS):
            text = seed = rng.choice(seeds)
            for _ in range(rng.choice([1, 1, 2, 3])):
                text = _mutate(text, rng)
            signal.alarm(SECONDS)
            try:
                _translate(text, parsed[seed])
            except DptxError:
                pass
            except _Hang:
                escaped.append((n, f"no answer within {SECONDS} s"))
            except BaseException as exc:       # noqa: BLE001 - what the test looks for
                escaped.append((n, f"{type(exc).__name__}: {str(exc)[:200]}"))
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not escaped, escaped[:10]


@pytest.mark.parametrize("text, message", [
    ("{" * 3000 + "}" * 3000, "nested deeper than 64 levels"),
    ("mov.u32 %r1, " + "(" * 3000 + "1" + ")" * 3000 + ";", "nested deeper than 64 levels"),
    (".reg .b32 %rz<1000000000>;", "declares more than 262144 registers"),
    ("add.s32 %r1, %r2;", r"add takes 3 operands \(d, a, b\), found 2"),
    ("shl.f64 %fd1, %fd1, 2;", "shl takes integer or bit types, not .f64"),
    ("bra NOWHERE;", "bra to NOWHERE, which is not a label of this function"),
    ("mov.u64 %rd1, 99999999999999999999999;", "does not fit in 64 bits"),
    ("mov.u32 %r1, (1 << 70);", "shift by 70 in constant expression"),
])
def test_each_cause_found_by_fuzzing_names_the_line(text, message):
    """The causes of the non-dptx exceptions and hangs the fuzzing found, one each."""
    import dptx
    ptx = (".version 7.8\n.target sm_80\n.address_size 64\n"
           ".visible .entry k() {\n.reg .b32 %r<3>; .reg .b64 %rd<3>; .reg .f64 %fd<3>;\n"
           f"{text}\nret;\n}}\n")
    with pytest.raises(dptx.PtxSyntaxError, match=message) as info:
        dptx.RawModule(ptx=ptx)
    assert info.value.line == 6


@pytest.mark.parametrize("declaration, message", [
    (".local .b8 l[1099511627776];", "has 1099511627776 bytes; at most 524288"),
    (".shared .b8 sh[9999999];", "has 9999999 bytes; at most 49152"),
    (".const .b8 cc[99999999];", "constant bank holds 65536"),
    (".global .u32 g = g;", "initialized with the address of g, which needs 64-bit elements"),
])
def test_resources_beyond_a_gpus_limits_are_refused_before_allocating(declaration, message):
    import dptx
    ptx = (".version 7.8\n.target sm_80\n.address_size 64\n" + declaration +
           "\n.visible .entry k() { ret; }\n")
    with pytest.raises(dptx.DptxError, match=message):
        dptx.RawModule(ptx=ptx)


def test_an_overflowing_decimal_literal_prints_and_parses_back():
    """1e999 is infinity; it printed as "inf", which does not parse (12 fuzzed mutants failed
    the print/parse round trip that way)."""
    from dptx.ptx.printer import print_module
    module = parse(".version 7.8\n.target sm_80\n.address_size 64\n"
                   ".visible .entry k() { .reg .f64 %fd<3>; mov.f64 %fd1, 1e999; "
                   "mov.f64 %fd2, -1e999; ret; }")
    again = parse(print_module(module))
    assert again == module
    first, second = module.functions[0].instructions[:2]
    assert str(first.operands[1]) == "0d7FF0000000000000"
    assert str(second.operands[1]) == "0dFFF0000000000000"
