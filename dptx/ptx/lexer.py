"""PTX tokenizer: one compiled regular expression over the whole text (fast enough for
5,000-line modules in well under the parse budget), tracking line and column per token."""
from __future__ import annotations

import re
from typing import NamedTuple

from ..errors import PtxSyntaxError

# Token kinds
IDENT = "ident"      # foo, %r1, $L__BB0_1, _
DOTWORD = "dot"      # .global, .f32, .L2::evict_last, .shared::cta
INT = "int"          # 12, 0x1F, 017, 0b101, with optional U suffix
FLOAT = "float"      # 1.5, 1e-3, 0f3F800000, 0d3FF0000000000000
STRING = "string"    # "text"
PUNCT = "punct"      # ; , : { } [ ] ( ) @ ! | + - < > = * / & ^ ~ %
EOF = "eof"

_TOKEN_RE = re.compile(r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<lcomment>//[^\n]*)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<float>0[fF][0-9a-fA-F]{8}(?![0-9a-zA-Z_])|0[dD][0-9a-fA-F]{16}(?![0-9a-zA-Z_])
       |(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+))
  | (?P<int>(?:0[xX][0-9a-fA-F]+|0[bB][01]+|[0-9]+)[uU]?)
  | (?P<dot>\.[A-Za-z0-9_$][A-Za-z0-9_$]*(?:::[A-Za-z0-9_$]+)*)
  | (?P<ident>[A-Za-z_$%][A-Za-z0-9_$]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<punct><<|>>|[;,:{}\[\]()@!|+\-<>=*/&^~?])
""", re.VERBOSE | re.DOTALL)


# A lone surrogate (U+D800..U+DFFF): a Python str may hold one, but no UTF-8 text can, so
# PTX holding one cannot be handed to a driver or ptxas, nor hashed (``digest.ptx_digest``).
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


class Token(NamedTuple):
    kind: str
    text: str
    line: int
    column: int
    pos: int


def tokenize(text: str) -> list:
    """The tokens of ``text``, comments and whitespace dropped, ending with an EOF token."""
    if not text.isascii():
        _refuse_surrogates(text)
    tokens = []
    append = tokens.append
    line = 1
    line_start = 0
    pos = 0
    # a C string's terminator where the text ends (NVRTC's nvrtcGetPTX buffer, as Warp's
    # bundled NVRTC hands it over) ends the input; a NUL anywhere else is refused below
    n = len(text.rstrip("\0"))
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            col = pos - line_start + 1
            src = text[line_start:text.find("\n", pos) if "\n" in text[pos:] else n]
            raise PtxSyntaxError("unexpected character", line, col, text[pos], "a PTX token",
                                 source_line=src)
        kind = m.lastgroup
        end = m.end()
        if kind == "nl":
            line += 1
            line_start = end
        elif kind == "bcomment":
            chunk = m.group()
            newlines = chunk.count("\n")
            if newlines:
                line += newlines
                line_start = m.start() + chunk.rfind("\n") + 1
        elif kind not in ("ws", "lcomment"):
            append(Token(kind, m.group(), line, pos - line_start + 1, pos))
        pos = end
    append(Token(EOF, "", line, pos - line_start + 1, pos))
    return tokens


def _refuse_surrogates(text: str) -> None:
    """PtxSyntaxError at the first lone surrogate of ``text``, anywhere (comments included:
    the whole text goes to the driver). The source line shown has it escaped, so the message
    itself prints."""
    m = _SURROGATE_RE.search(text)
    if m is None:
        return
    pos = m.start()
    line_start = text.rfind("\n", 0, pos) + 1
    line_end = text.find("\n", pos)
    src = text[line_start:line_end if line_end >= 0 else len(text)]
    raise PtxSyntaxError(
        "a lone surrogate (not a Unicode character; undecodable bytes read with "
        "errors='surrogateescape' become one): PTX must be UTF-8 text for a GPU driver or "
        "ptxas, so remove it", text.count("\n", 0, pos) + 1, pos - line_start + 1, text[pos],
        "UTF-8 text", source_line=src.encode("utf-8", "backslashreplace").decode("utf-8"))


def parse_int(text: str) -> tuple:
    """(value, unsigned) of a PTX integer literal. A leading 0 means octal, as in C."""
    unsigned = text[-1] in "uU"
    if unsigned:
        text = text[:-1]
    low = text.lower()
    if low.startswith("0x"):
        value = int(low[2:], 16)
    elif low.startswith("0b"):
        value = int(low[2:], 2)
    elif len(low) > 1 and low[0] == "0":
        value = int(low, 8)
    else:
        value = int(low)
    if value >= 1 << 64:    # PTX integer literals are 64-bit
        raise ValueError(f"integer literal {text} does not fit in 64 bits")
    return value, unsigned
