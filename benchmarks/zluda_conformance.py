"""Conformance of dptx's CPU executor against ZLUDA's hand-written PTX tests.

ZLUDA (https://github.com/vosen/ZLUDA) keeps about two hundred small PTX kernels in
``ptx/src/test/spirv_run/``, each with its input and expected output written as Rust array
literals in ``ptx/src/test/spirv_run/mod.rs``::

    test_ptx!(name, [inputs], [outputs]);          // block (1,1,1)
    test_ptx_with_32!(name, [inputs], [outputs]);  // same; we run the 64-bit name.ptx
    test_ptx_warp!(name, [outputs]);                // block (64,1,1), no input
    test_ptx!(name);                                // LLVM-IR test only: not run here

This script parses those invocations, runs every kernel through ``dptx.cpu.launch`` the way
ZLUDA's ``run_cuda`` runs it on a GPU, and reports pass / fail per test. ZLUDA's harness
(``run_cuda`` in mod.rs), which this one copies:

* the kernel is the ``.entry`` named like the test, in ``<name>.ptx``;
* the input buffer holds the input array's bytes; the output buffer has the expected
  output's size in bytes and starts zero-filled;
* the kernel parameters are (input, output); for warp tests, which have no input, they
  are (output, output); a kernel with fewer parameters reads only the first ones (we pass
  zeros for any beyond two, where CUDA would read past ZLUDA's argument array);
* grid (1,1,1), block (1,1,1) or (64,1,1) for warp tests, 1024 bytes of dynamic shared
  memory;
* the output buffer must equal the expected array exactly (``assert_eq!`` on the typed
  array; for floats we compare bits, which differs from Rust's ``==`` only for NaN and
  +-0, and no test expects either).

Each test runs in a child process with a timeout, so a hang or a crash of the JIT cannot
stop the run. Results are classed as: pass, wrong (the output differs: expected vs got is
printed, in hex too), unsupported (``dptx.errors.PtxUnsupportedError``), fault (dptx
reported an out-of-bounds access: some tests' second warp runs past buffers sized for 32
threads, which a GPU does not check), internal (any
other exception: dptx bugs, these matter most), timeout, crash (the child died), harness
(this script could not set the test up, e.g. a literal it cannot parse).

Getting ZLUDA (a checkout, or a bare clone: the script reads ``git show HEAD:...`` there)::

    git clone https://github.com/vosen/ZLUDA

Usage::

    python benchmarks/zluda_conformance.py --zluda PATH [--only NAME[,NAME...]] [-v]
                                           [--timeout SECONDS]

``PATH`` (or the environment variable ``DPTX_ZLUDA_DIR``) is the clone. The exit status is 0
whatever the tests do (this is a report); 2 when there is no ZLUDA to read or an option is
wrong.
"""
from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import re
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

import numpy as np

TEST_DIR = "ptx/src/test/spirv_run"
DEFAULT_TIMEOUT = 60.0
CLASSES = ("pass", "wrong", "unsupported", "fault", "internal", "timeout", "crash", "harness")


# ------------------------------------------------------------------------------------------
# Reading the ZLUDA snapshot
# ------------------------------------------------------------------------------------------
class ZludaSource:
    """Files of a ZLUDA checkout (a folder holding ptx/src/test/spirv_run) or of a git
    repository, bare or not (read at HEAD with ``git show``)."""

    def __init__(self, path: str):
        self.path = path
        self.checkout = os.path.isdir(os.path.join(path, TEST_DIR))
        if not self.checkout:
            probe = subprocess.run(["git", "-C", path, "cat-file", "-e", f"HEAD:{TEST_DIR}/mod.rs"],
                                   capture_output=True)
            if probe.returncode != 0:
                raise FileNotFoundError(
                    f"{path} is neither a ZLUDA checkout (no {TEST_DIR} in it) nor a git "
                    f"repository with {TEST_DIR}/mod.rs at HEAD")

    def read(self, name: str) -> Optional[str]:
        """The text of ``TEST_DIR/name``, or None when there is no such file."""
        if self.checkout:
            try:
                with open(os.path.join(self.path, TEST_DIR, name), encoding="utf-8") as fh:
                    return fh.read()
            except FileNotFoundError:
                return None
        got = subprocess.run(["git", "-C", self.path, "show", f"HEAD:{TEST_DIR}/{name}"],
                             capture_output=True)
        return got.stdout.decode("utf-8") if got.returncode == 0 else None


# ------------------------------------------------------------------------------------------
# Rust literals: a small evaluator for the expressions that mod.rs uses
# ------------------------------------------------------------------------------------------
class ParseError(Exception):
    pass


INT_TYPES = {  # Rust type -> (numpy dtype, bits, signed)
    "u8": (np.uint8, 8, False), "u16": (np.uint16, 16, False),
    "u32": (np.uint32, 32, False), "u64": (np.uint64, 64, False),
    "usize": (np.uint64, 64, False),
    "i8": (np.int8, 8, True), "i16": (np.int16, 16, True),
    "i32": (np.int32, 32, True), "i64": (np.int64, 64, True),
    "isize": (np.int64, 64, True),
}
# Rust float type -> (exponent bits, mantissa bits). Values of these types are held as
# their bit patterns; bf16 has no numpy type (arrays of it are uint16 bit patterns).
FLOAT_TYPES = {"f16": (5, 10), "bf16": (8, 7), "f32": (8, 23), "f64": (11, 52)}
FLOAT_DTYPE = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64}
FLOAT_UINT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}
BITS_TYPE = {"f16": "u16", "bf16": "u16", "f32": "u32", "f64": "u64"}

# std::f32::consts / std::f64::consts (rounded from the f64 value: exact for the usual ones)
MATH_CONSTS = {
    "PI": math.pi, "TAU": math.tau, "E": math.e, "SQRT_2": math.sqrt(2),
    "FRAC_1_SQRT_2": 1 / math.sqrt(2), "FRAC_PI_2": math.pi / 2, "FRAC_PI_3": math.pi / 3,
    "FRAC_PI_4": math.pi / 4, "FRAC_PI_6": math.pi / 6, "FRAC_PI_8": math.pi / 8,
    "FRAC_1_PI": 1 / math.pi, "FRAC_2_PI": 2 / math.pi, "LN_2": math.log(2),
    "LN_10": math.log(10), "LOG2_E": math.log2(math.e), "LOG10_E": math.log10(math.e),
    "LOG2_10": math.log2(10), "LOG10_2": math.log10(2),
}


def round_to_float(x: Fraction, ty: str) -> int:
    """The bit pattern of the ``ty`` float nearest to the exact value ``x`` (ties to even),
    as Rust rounds a decimal literal: straight to the type, not through f64."""
    ebits, mbits = FLOAT_TYPES[ty]
    sign = 1 << (ebits + mbits) if x < 0 else 0
    a = abs(x)
    if a == 0:
        return sign
    bias = (1 << (ebits - 1)) - 1
    e = a.numerator.bit_length() - a.denominator.bit_length()   # 2**e <= a < 2**(e+1)
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, 1 - bias)                        # subnormals share the smallest exponent
    n = round(a / Fraction(2) ** (e - mbits))   # Fraction rounds half to even
    if n == 1 << (mbits + 1):
        n, e = n >> 1, e + 1
    if e > bias:
        return sign | (((1 << ebits) - 1) << mbits)   # overflow: infinity
    if n < 1 << mbits:
        return sign | n                               # subnormal
    return sign | ((e + bias) << mbits) | (n - (1 << mbits))


def float_value(bits: int, ty: str) -> Fraction | float:
    """The value of a float bit pattern: an exact Fraction, or a float for inf/NaN."""
    if ty == "bf16":
        return float_value(bits << 16, "f32")
    v = np.array([bits], FLOAT_UINT[ty]).view(FLOAT_DTYPE[ty])[0]
    return Fraction(float(v)) if np.isfinite(v) else float(v)


def float_special(ty: str, what: str) -> int:
    """Bits of the named constants of Rust's float types and half's f16/bf16."""
    ebits, mbits = FLOAT_TYPES[ty]
    top = 1 << (ebits + mbits)
    inf = ((1 << ebits) - 1) << mbits
    largest = inf - 1
    table = {
        "NAN": inf | (1 << (mbits - 1)),  # Rust's and half's quiet NaN (0x7FC00000...)
        "INFINITY": inf, "NEG_INFINITY": top | inf,
        "MAX": largest, "MIN": top | largest,
        "MIN_POSITIVE": 1 << mbits, "MIN_POSITIVE_SUBNORMAL": 1,
        "ZERO": 0, "NEG_ZERO": top,
        "ONE": round_to_float(Fraction(1), ty), "NEG_ONE": top | round_to_float(Fraction(1), ty),
        "EPSILON": round_to_float(Fraction(1, 1 << mbits), ty),
    }
    if what not in table:
        raise ParseError(f"unknown constant {ty}::{what}")
    return table[what]


@dataclass
class Val:
    """A Rust value. ``ty`` is a Rust type name or None for a literal without a suffix
    (then ``v`` is a Python int, or a Fraction for a float literal, and ``floaty`` tells).
    Typed ints hold their value (wrapped to the type), typed floats their bit pattern."""
    ty: Optional[str]
    v: object
    floaty: bool = False
    negzero: bool = False   # the unsuffixed literal -0.0 (a Fraction has no sign for 0)

    def to(self, ty: str) -> "Val":
        """This value as type ``ty`` (Rust's inference of an unsuffixed literal)."""
        if self.ty == ty:
            return self
        if self.ty is not None:
            raise ParseError(f"mixed types {self.ty} and {ty}")
        if ty in INT_TYPES:
            if self.floaty:
                raise ParseError(f"float literal where {ty} is expected")
            return Val(ty, wrap_int(self.v, ty))
        if ty in FLOAT_TYPES:
            bits = round_to_float(Fraction(self.v), ty)
            return Val(ty, bits | (float_special(ty, "NEG_ZERO") if self.negzero else 0))
        raise ParseError(f"unknown type {ty}")


def wrap_int(v: int, ty: str) -> int:
    _, bits, signed = INT_TYPES[ty]
    v &= (1 << bits) - 1
    if signed and v >> (bits - 1):
        v -= 1 << bits
    return v


def typed_float_op(op: str, a: Val, b: Val) -> Val:
    """IEEE arithmetic in the type of ``a`` and ``b`` (f16/bf16 as half does it: in f32,
    then rounded back)."""
    ty = a.ty
    if ty in ("f32", "f64"):
        x = np.array([a.v], FLOAT_UINT[ty]).view(FLOAT_DTYPE[ty])[0]
        y = np.array([b.v], FLOAT_UINT[ty]).view(FLOAT_DTYPE[ty])[0]
        with np.errstate(all="ignore"):
            r = {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op]
        return Val(ty, int(np.array([r], FLOAT_DTYPE[ty]).view(FLOAT_UINT[ty])[0]))
    xa = Val("f32", round_to_float_any(float_value(a.v, ty), "f32"))
    xb = Val("f32", round_to_float_any(float_value(b.v, ty), "f32"))
    r = typed_float_op(op, xa, xb)
    return Val(ty, round_to_float_any(float_value(r.v, "f32"), ty))


def round_to_float_any(x, ty: str) -> int:
    """Like round_to_float, also for inf and NaN (a float, not a Fraction)."""
    if isinstance(x, float):
        if math.isnan(x):
            return float_special(ty, "NAN")
        return float_special(ty, "INFINITY" if x > 0 else "NEG_INFINITY")
    return round_to_float(x, ty)


NUMBER = re.compile(r"""
      0x(?P<hex>[0-9a-fA-F_]+)(?P<hsuf>[iu](?:8|16|32|64|128|size))?
    | 0o(?P<oct>[0-7_]+)(?P<osuf>[iu](?:8|16|32|64|128|size))?
    | 0b(?P<bin>[01_]+)(?P<bsuf>[iu](?:8|16|32|64|128|size))?
    | (?P<dec>[0-9][0-9_]*(?:\.(?![.a-zA-Z_])[0-9_]*)?(?:[eE][+-]?[0-9_]+)?)
      (?P<dsuf>[iu](?:8|16|32|64|128|size)|f32|f64)?
""", re.VERBOSE)
TOKEN = re.compile(r"(?P<num>[0-9])|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
                   r"|(?P<op>::|[-+*/%!\[\](),;.])")


def tokenize(text: str) -> list:
    """Tokens of a Rust expression: ('num', Val), ('ident', str), ('op', str)."""
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            return out
        m = TOKEN.match(text, i)
        if not m:
            raise ParseError(f"unexpected {text[i:i + 20]!r}")
        if m.group("num"):
            n = NUMBER.match(text, m.start("num"))
            out.append(("num", number_value(n)))
            i = n.end()
        elif m.group("ident"):
            out.append(("ident", m.group("ident")))
            i = m.end()
        else:
            out.append(("op", m.group("op")))
            i = m.end()


def number_value(m) -> Val:
    for base, digits, suffix in ((16, "hex", "hsuf"), (8, "oct", "osuf"), (2, "bin", "bsuf")):
        if m.group(digits) is not None:
            v = Val(None, int(m.group(digits).replace("_", ""), base))
            return v.to(m.group(suffix)) if m.group(suffix) else v
    text, suffix = m.group("dec").replace("_", ""), m.group("dsuf")
    is_float = any(c in text for c in ".eE") or suffix in ("f32", "f64")
    if suffix and suffix.endswith("128"):
        raise ParseError("128-bit literals are not supported")
    if not is_float:
        v = Val(None, int(text))
    else:
        v = Val(None, Fraction(text.rstrip(".") if text.endswith(".") else text), floaty=True)
    return v.to(suffix) if suffix else v


class ExprParser:
    """Recursive descent over the tokens of one Rust expression (precedence as in Rust:
    unary, then ``as``, then ``* / %``, then ``+ -``)."""

    def __init__(self, text: str):
        self.toks = tokenize(text)
        self.i = 0

    def peek(self, k=0):
        return self.toks[self.i + k] if self.i + k < len(self.toks) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            raise ParseError(f"expected {value or kind}, found {tok[1]!r}")
        self.i += 1
        return tok[1]

    def at(self, value) -> bool:
        return self.peek()[0] == "op" and self.peek()[1] == value

    def parse_array(self) -> list:
        """A whole ``[a, b, ...]`` or ``[x; N]`` expression, as a list of Vals."""
        items = self.array()
        if self.peek()[0] is not None:
            raise ParseError(f"unexpected {self.peek()[1]!r} after the array")
        return items

    def array(self) -> list:
        self.take("op", "[")
        items = []
        if self.at("]"):
            self.take()
            return items
        items.append(self.expr())
        if self.at(";"):                 # [x; N]
            self.take()
            n = self.expr()
            if n.floaty or not isinstance(n.v, int):
                raise ParseError("array repeat count is not an integer")
            self.take("op", "]")
            return items * n.v
        while self.at(","):
            self.take()
            if self.at("]"):
                break
            items.append(self.expr())
        self.take("op", "]")
        return items

    def expr(self) -> Val:
        v = self.mult()
        while self.at("+") or self.at("-"):
            v = binary(self.take(), v, self.mult())
        return v

    def mult(self) -> Val:
        v = self.cast()
        while self.at("*") or self.at("/") or self.at("%"):
            v = binary(self.take(), v, self.cast())
        return v

    def cast(self) -> Val:
        v = self.unary()
        while self.peek() == ("ident", "as"):
            self.take()
            v = cast(v, self.take("ident"))
        return v

    def unary(self) -> Val:
        if self.at("-"):
            self.take()
            return negate(self.unary())
        if self.at("!"):
            self.take()
            v = self.unary()
            if v.floaty or v.ty in FLOAT_TYPES:
                raise ParseError("! on a float")
            return Val(v.ty, ~v.v if v.ty is None else wrap_int(~v.v, v.ty))
        return self.postfix()

    def postfix(self) -> Val:
        v = self.primary()
        while self.at("."):
            self.take()
            method = self.take("ident")
            self.take("op", "(")
            self.take("op", ")")
            v = call_method(v, method)
        return v

    def primary(self) -> Val:
        kind, tok = self.peek()
        if kind == "num":
            self.take()
            return tok
        if kind == "op" and tok == "(":
            self.take()
            v = self.expr()
            self.take("op", ")")
            return v
        if kind == "ident":
            path = [self.take()]
            while self.at("::"):
                self.take()
                path.append(self.take("ident"))
            args = None
            if self.at("("):
                self.take()
                args = []
                while not self.at(")"):
                    args.append(self.expr())
                    if not self.at(")"):
                        self.take("op", ",")
                self.take()
            return eval_path(path, args)
        raise ParseError(f"unexpected {tok!r}")


def binary(op: str, a: Val, b: Val) -> Val:
    if a.ty is None and b.ty is not None:
        a = a.to(b.ty)
    elif b.ty is None and a.ty is not None:
        b = b.to(a.ty)
    if a.ty != b.ty:
        raise ParseError(f"{a.ty} {op} {b.ty}")
    if a.ty in FLOAT_TYPES:
        if op == "%":
            raise ParseError("% on floats is not supported")
        return typed_float_op(op, a, b)
    if a.ty is None and (a.floaty or b.floaty):
        x, y = Fraction(a.v), Fraction(b.v)
        return Val(None, {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[op], floaty=True)
    x, y = a.v, b.v
    if op == "/" or op == "%":
        if y == 0:
            raise ParseError("division by zero")
        q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)   # Rust truncates
        r = q if op == "/" else x - q * y
    else:
        r = {"+": x + y, "-": x - y, "*": x * y}[op]
    return Val(a.ty, r if a.ty is None else wrap_int(r, a.ty))


def negate(v: Val) -> Val:
    if v.ty in FLOAT_TYPES:
        ebits, mbits = FLOAT_TYPES[v.ty]
        return Val(v.ty, v.v ^ (1 << (ebits + mbits)))
    if v.ty is None:
        return Val(None, -v.v, v.floaty, negzero=v.floaty and v.v == 0 and not v.negzero)
    return Val(v.ty, wrap_int(-v.v, v.ty))


def cast(v: Val, ty: str) -> Val:
    """``v as ty`` for the numeric casts (float to int saturates, NaN gives 0, as in Rust)."""
    if v.ty is None and v.floaty:
        v = v.to("f64")
    if v.ty is None or v.ty in INT_TYPES:          # from an integer
        return Val(ty, wrap_int(v.v, ty)) if ty in INT_TYPES else v.to(ty) if v.ty is None \
            else Val(ty, round_to_float(Fraction(v.v), ty))
    x = float_value(v.v, v.ty)                      # from a float
    if ty in FLOAT_TYPES:
        return Val(ty, round_to_float_any(x, ty))
    if ty not in INT_TYPES:
        raise ParseError(f"cast to {ty}")
    _, bits, signed = INT_TYPES[ty]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if isinstance(x, float):                        # inf, NaN
        return Val(ty, 0 if math.isnan(x) else (hi if x > 0 else lo))
    return Val(ty, min(max(math.trunc(x), lo), hi))


def call_method(v: Val, method: str) -> Val:
    if method == "to_bits" and v.ty in FLOAT_TYPES:
        return Val(BITS_TYPE[v.ty], v.v)
    if method in ("to_f32", "to_f64") and v.ty in ("f16", "bf16"):
        return Val(method[3:], round_to_float_any(float_value(v.v, v.ty), method[3:]))
    raise ParseError(f"method .{method}() on {v.ty or 'a literal'}")


def eval_path(path: list, args: Optional[list]) -> Val:
    """``u64::max_value()``, ``i32::MIN``, ``f32::NAN``, ``half::f16::from_f32(x)``,
    ``f32::from_bits(x)``, ``std::f32::consts::PI``..."""
    while path and path[0] in ("std", "core", "half"):
        path = path[1:]
    if len(path) == 3 and path[1] == "consts" and path[0] in ("f32", "f64") and args is None:
        if path[2] not in MATH_CONSTS:
            raise ParseError(f"unknown constant {path[2]}")
        return Val(path[0], round_to_float_any(Fraction(MATH_CONSTS[path[2]]), path[0]))
    if len(path) != 2:
        raise ParseError(f"unknown path {'::'.join(path)}")
    ty, name = path
    if ty in INT_TYPES:
        _, bits, signed = INT_TYPES[ty]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        consts = {"MAX": hi, "MIN": lo, "max_value": hi, "min_value": lo, "BITS": bits}
        if name not in consts or (args is not None) != name.endswith("_value") or args:
            raise ParseError(f"unknown {ty}::{name}")
        return Val("u32" if name == "BITS" else ty, consts[name])
    if ty in FLOAT_TYPES:
        if args is None:
            return Val(ty, float_special(ty, name))
        if len(args) != 1:
            raise ParseError(f"{ty}::{name} takes one argument")
        (a,) = args
        if name == "from_bits":
            a = a.to(BITS_TYPE[ty])
            return Val(ty, a.v & ((1 << 8 * np.dtype(FLOAT_UINT[ty]).itemsize) - 1))
        if name in ("from_f32", "from_f64"):
            a = a.to(name[5:])
            return Val(ty, round_to_float_any(float_value(a.v, a.ty), ty))
        raise ParseError(f"unknown function {ty}::{name}")
    raise ParseError(f"unknown path {'::'.join(path)}")


def typed_array(text: str) -> np.ndarray:
    """A Rust array expression as a numpy array of its element type. Unsuffixed literals
    take the type of the others, as Rust infers it; an array of only unsuffixed literals is
    i32 (integers) or f64 (floats), Rust's defaults."""
    items = ExprParser(text).parse_array()
    if not items:
        raise ParseError("empty array")
    types = {v.ty for v in items if v.ty is not None}
    if len(types) > 1:
        raise ParseError(f"array of mixed types {sorted(types)}")
    ty = types.pop() if types else ("f64" if any(v.floaty for v in items) else "i32")
    items = [v.to(ty) for v in items]
    if ty in FLOAT_TYPES:
        bits = np.array([v.v for v in items], FLOAT_UINT[ty])
        return bits.view(FLOAT_DTYPE[ty]) if ty != "bf16" else bits
    return np.array([v.v for v in items], INT_TYPES[ty][0])


# ------------------------------------------------------------------------------------------
# mod.rs: the test list
# ------------------------------------------------------------------------------------------
@dataclass
class Test:
    name: str
    macro: str
    inputs: Optional[np.ndarray] = None   # None for warp tests
    outputs: Optional[np.ndarray] = None
    block: int = 1
    problem: str = ""                      # why the harness cannot run it, if it cannot
    input_text: str = ""
    output_text: str = ""


def strip_comments(text: str) -> str:
    """Rust source without // and /* */ comments (string literals kept as they are)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_args(text: str) -> list:
    """Split a macro's arguments on the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    parts = [p.strip() for p in parts]
    return parts[:-1] if parts and parts[-1] == "" else parts


INVOCATION = re.compile(r"\b(test_ptx|test_ptx_with_32|test_ptx_warp)!\s*\(")


def parse_mod_rs(text: str) -> tuple:
    """The run tests of mod.rs (in file order) and the names of the tests with no run part
    (``test_ptx!(name)``)."""
    text = strip_comments(text)
    tests, skipped = [], []
    for m in INVOCATION.finditer(text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        if depth:
            raise ParseError(f"unbalanced parentheses after {m.group(0)!r}")
        args = split_args(text[m.end():i - 1])
        macro, name = m.group(1), args[0] if args else ""
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ParseError(f"{macro}! with a first argument that is not a name: {name!r}")
        if len(args) == 1:
            skipped.append(name)
            continue
        test = Test(name, macro, block=64 if macro == "test_ptx_warp" else 1)
        try:
            if macro == "test_ptx_warp":
                if len(args) != 2:
                    raise ParseError(f"{len(args)} arguments")
                test.output_text = args[1]
                test.outputs = typed_array(args[1])
            else:
                if len(args) != 3:
                    raise ParseError(f"{len(args)} arguments")
                test.input_text, test.output_text = args[1], args[2]
                test.inputs = typed_array(args[1])
                test.outputs = typed_array(args[2])
        except (ParseError, ValueError, OverflowError, ZeroDivisionError) as e:
            test.problem = f"cannot parse: {e}"
        tests.append(test)
    return tests, skipped


# ------------------------------------------------------------------------------------------
# Running one test (in the child process)
# ------------------------------------------------------------------------------------------
def run_one(name: str, ptx: str, inputs: Optional[np.ndarray], out_dtype, out_len: int,
            block: int) -> dict:
    """Run a test as ZLUDA's run_cuda does; returns {'status', 'got' (uint8 bytes), ...}."""
    import dptx
    from dptx.errors import PtxUnsupportedError

    try:
        kernel = dptx.RawModule(ptx=ptx).get_function(name)
        out = np.zeros(out_len, out_dtype)
        # ZLUDA's argument array: (input, output), or (output, output) without an input
        given = [inputs.copy(), out] if inputs is not None else [out, out]
        args = []
        for i, p in enumerate(kernel.params):
            if i < len(given):
                if p.size != 8:
                    return {"status": "harness",
                            "detail": f"parameter {i} ({p.name}: .{p.type}) is not 64-bit: "
                                      "cannot pass a buffer pointer in it"}
                args.append(given[i])
            else:   # CUDA would read past ZLUDA's two-entry argument array: pass zeros
                args.append(bytes(p.size) if p.type == "b8" and p.size > 1 else 0)
        dptx.cpu.launch(kernel, (1, 1, 1), (block, 1, 1), args, shared_mem=1024, threads=1)
        return {"status": "ran", "got": out.view(np.uint8).tobytes()}
    except PtxUnsupportedError as e:
        return {"status": "unsupported", "detail": first_line(str(e))}
    except dptx.DptxMemoryError as e:
        # the test itself reads or writes out of bounds (a second warp past a 32-thread
        # test's buffers): a GPU does not check, dptx stops the kernel and says where
        return {"status": "fault", "detail": first_line(str(e))}
    except Exception as e:   # noqa: BLE001 (an internal error: we want all of them)
        tb = traceback.extract_tb(e.__traceback__)
        where = f" (at {os.path.basename(tb[-1].filename)}:{tb[-1].lineno})" if tb else ""
        return {"status": "internal",
                "detail": f"{type(e).__module__}.{type(e).__name__}: {first_line(str(e))}{where}"}


def first_warp_alone(worker, test, job: tuple, timeout: float) -> str:
    """A warp test that faults: run its first warp alone, and say whether that gives the
    expected output (then the fault is the test's own second warp running past buffers
    sized for one warp: a GPU's allocation padding hides it, compute-sanitizer reports it)."""
    res = worker.run(job[:-1] + (32,), timeout)
    if res["status"] != "ran":
        return f" [first warp alone: {res['status']}]"
    cls, _ = compare(test, res["got"])
    return (" [the first warp alone (32 threads) gives the expected output]" if cls == "pass"
            else " [the first warp alone gives a different output]")


def first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def worker_main(conn):
    """The child: runs the tests it receives, one at a time, until told to stop."""
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        conn.send(run_one(*job))


class Worker:
    """A child process that runs tests; killed and replaced after a timeout or a crash."""

    def __init__(self):
        self.ctx = multiprocessing.get_context("spawn")
        self.proc = None
        self.conn = None

    def start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=worker_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def run(self, job: tuple, timeout: float) -> dict:
        if self.proc is None or not self.proc.is_alive():
            self.start()
        try:
            self.conn.send(job)
            if self.conn.poll(timeout):
                return self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self.proc.join(5)
            code = self.proc.exitcode
            self.proc = None
            reason = (f"killed by signal {-code}" if code is not None and code < 0
                      else f"exit status {code}")
            return {"status": "crash", "detail": f"the child process died ({reason})"}
        self.stop(kill=True)
        return {"status": "timeout", "detail": f"no result after {timeout:g} s"}

    def stop(self, kill=False):
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.proc.join(10)
        self.proc = None


# ------------------------------------------------------------------------------------------
# Comparing and reporting
# ------------------------------------------------------------------------------------------
def show(x) -> str:
    """An element as value and hex bits (floats too)."""
    bits = np.array([x]).view(f"u{x.dtype.itemsize}")[0]
    hexbits = f"0x{int(bits):0{2 * x.dtype.itemsize}x}"
    if x.dtype.kind == "f":
        return f"{float(x)!r} ({hexbits})"
    return f"{int(x)} ({hexbits})"


def compare(test: Test, got_bytes: bytes) -> tuple:
    """('pass' | 'wrong', detail)."""
    want = test.outputs
    got = np.frombuffer(got_bytes, want.dtype)
    if got_bytes == want.tobytes():
        return "pass", "output " + ", ".join(show(v) for v in got[:8]) + \
            (", ..." if len(got) > 8 else "")
    bad = [i for i in range(len(want)) if want[i:i + 1].tobytes() != got[i:i + 1].tobytes()]
    shown = "; ".join(f"[{i}] expected {show(want[i])} got {show(got[i])}" for i in bad[:4])
    more = f"; and {len(bad) - 4} more of {len(want)}" if len(bad) > 4 else ""
    return "wrong", shown + more


def find_zluda(arg: Optional[str]) -> Optional[str]:
    return arg or os.environ.get("DPTX_ZLUDA_DIR") or None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--zluda", metavar="PATH",
                    help="ZLUDA checkout or git repository (default: $DPTX_ZLUDA_DIR)")
    ap.add_argument("--only", metavar="NAME[,NAME...]", help="run only these tests")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help=f"seconds per test (default {DEFAULT_TIMEOUT:g})")
    ap.add_argument("-v", "--verbose", action="store_true", help="details of passes too")
    opts = ap.parse_args(argv)

    path = find_zluda(opts.zluda)
    if path is None:
        print("No ZLUDA snapshot given. Get one with\n"
              "    git clone https://github.com/vosen/ZLUDA\n"
              "and pass its folder with --zluda PATH or DPTX_ZLUDA_DIR=PATH "
              "(a bare clone works too).", file=sys.stderr)
        return 2
    try:
        source = ZludaSource(path)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    mod_rs = source.read("mod.rs")
    tests, skipped = parse_mod_rs(mod_rs)
    if opts.only:
        wanted = [n.strip() for n in opts.only.split(",") if n.strip()]
        known = {t.name for t in tests}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            print(f"no run test named {', '.join(unknown)} in mod.rs", file=sys.stderr)
            return 2
        tests = [t for t in tests if t.name in wanted]
    print(f"ZLUDA {path}: {len(tests)} run tests"
          + ("" if opts.only else f" ({len(skipped)} more have no run test)"))

    results = {}   # name -> (class, detail)
    worker = Worker()
    width = max((len(t.name) for t in tests), default=0)
    try:
        for k, test in enumerate(tests, 1):
            t0 = time.perf_counter()
            ptx = source.read(f"{test.name}.ptx")
            if test.problem:
                cls, detail = "harness", test.problem
            elif ptx is None:
                cls, detail = "harness", f"no {test.name}.ptx"
            elif not re.search(rf"\.entry\s+{re.escape(test.name)}\s*\(", ptx):
                cls, detail = "harness", f"{test.name}.ptx has no .entry {test.name}"
            else:
                job = (test.name, ptx, test.inputs, test.outputs.dtype, len(test.outputs),
                       test.block)
                res = worker.run(job, opts.timeout)
                if res["status"] == "ran":
                    cls, detail = compare(test, res["got"])
                else:
                    cls, detail = res["status"], res["detail"]
                if cls == "fault" and test.block > 32:
                    detail += first_warp_alone(worker, test, job, opts.timeout)
            results[test.name] = (cls, detail)
            line = f"[{k:3d}/{len(tests)}] {test.name:<{width}}  {cls:<11} " \
                   f"{time.perf_counter() - t0:5.1f}s"
            if cls != "pass" or opts.verbose:
                line += f"  {detail}"
            print(line, flush=True)
    finally:
        worker.stop()

    counts = {c: sum(1 for cls, _ in results.values() if cls == c) for c in CLASSES}
    print()
    print(f"{len(results)} tests: {counts['pass']} pass, {counts['wrong']} wrong, "
          f"{counts['unsupported']} unsupported, {counts['fault']} memory fault, "
          f"{counts['internal']} internal error, "
          f"{counts['timeout']} timeout, {counts['crash']} crash, {counts['harness']} harness")
    for c in CLASSES[1:]:
        names = [n for n, (cls, _) in results.items() if cls == c]
        if names:
            print(f"\n{c} ({len(names)}):")
            for n in names:
                print(f"  {n:<{width}}  {results[n][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
