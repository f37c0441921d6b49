"""Recursive-descent PTX parser producing ``dptx.ptx.ir``.

Grammar-general by design (DESIGN.md decision 2): any ``opcode(.modifier)* operands;`` parses,
whatever the opcode; the back-ends decide what they support. Directives the executors do not
need (``.loc``, ``.file``, ``.section`` DWARF blocks, ``.pragma``) are kept as ``Directive``
items so that the printer can give them back.
"""
from __future__ import annotations

import re

from ..errors import PtxSyntaxError, PtxUnsupportedError
from . import ir
from .lexer import DOTWORD, EOF, FLOAT, IDENT, INT, PUNCT, STRING, parse_int, tokenize
from .validate import validate

LINKAGES = frozenset({".visible", ".extern", ".weak", ".common"})
VARIABLE_SPACES = frozenset({".global", ".const", ".shared", ".local", ".param", ".tex",
                             ".texref", ".samplerref", ".surfref"})
VECTOR_WIDTHS = {".v2": 2, ".v4": 4, ".v8": 8}
COMPONENTS = frozenset({"x", "y", "z", "w", "r", "g", "b", "a"})
# Video instructions select half-words (``%r1.h10``) or bytes (``%r2.b3210``) of an operand,
# and name the destination's lanes the same way; kept as the register's component.
VIDEO_SELECTOR = re.compile(r"h[0-3]{1,2}|b[0-7]{1,4}")


def is_component(word: str) -> bool:
    return word in COMPONENTS or VIDEO_SELECTOR.fullmatch(word) is not None


# Performance directives of an entry or function header (value: list of ints, maybe empty).
HEADER_DIRECTIVES = frozenset({
    ".maxntid", ".reqntid", ".minnctapersm", ".maxnctapersm", ".maxnreg", ".explicitcluster",
    ".reqnctapercluster", ".maxclusterrank", ".noreturn", ".blocksareclusters",
    ".abi_preserve", ".abi_preserve_control",
})
_REG_RANGE = re.compile(r"^(.*?)(\d+)$")
# Blocks and parenthesized constant expressions nest at most this deep (real PTX: a few).
MAX_NESTING = 64


class Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        # Register names declared in the enclosing scopes of the function being parsed, so that
        # old-style registers without ``%`` (``add.u32 r1, r2, r3``) become Reg operands.
        self.reg_scopes: list = []
        # Declared type of each register name (and of each ``name<N>`` range's prefix) of the
        # function being parsed: what ``reg + imm`` operands are added in (see ``operand``).
        self.reg_types: dict = {}
        self.pending: list = []       # statements an operand needs before its instruction
        self.fresh = 0
        self.depth = 0                # nesting of blocks and constant expressions
        self.in_call = False

    # -- token helpers ----------------------------------------------------------------------
    @property
    def tok(self):
        return self.tokens[self.i]

    def peek(self, k=1):
        j = self.i + k
        return self.tokens[j] if j < len(self.tokens) else self.tokens[-1]

    def advance(self):
        t = self.tokens[self.i]
        self.i += 1
        return t

    def error(self, message, expected="", tok=None):
        tok = tok or self.tok
        lines = self.text.splitlines()
        src = lines[tok.line - 1] if 0 < tok.line <= len(lines) else ""
        raise PtxSyntaxError(message, tok.line, tok.column, tok.text or "end of input",
                             expected, src)

    def expect(self, text, what=None):
        t = self.tok
        if t.text != text or t.kind == STRING:
            self.error("unexpected token", what or repr(text))
        self.i += 1
        return t

    def accept(self, text):
        if self.tok.text == text and self.tok.kind != STRING:
            self.i += 1
            return True
        return False

    def expect_kind(self, kind, what):
        t = self.tok
        if t.kind != kind:
            self.error("unexpected token", what)
        self.i += 1
        return t

    def expect_name(self, what="a name"):
        return self.expect_kind(IDENT, what).text

    def int_value(self, t):
        try:
            return parse_int(t.text)
        except ValueError as exc:
            if "64 bits" in str(exc):
                self.error("integer literal does not fit in 64 bits", "", t)
            self.error("malformed integer literal", "a decimal, hex (0x), octal (0) or binary (0b) integer", t)

    def nested(self, what: str):
        """One more level of nesting (blocks, parentheses, unary operators): at most
        MAX_NESTING, so that deep input is an error, not a RecursionError."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.error(f"{what} nested deeper than {MAX_NESTING} levels")

    # -- constant expressions -----------------------------------------------------------------
    def const_expr(self) -> int:
        """Integer constant expression (C precedence, subset): | ^ & << >> + - * / % unary - ~ !."""
        return self._binary(0)

    _PRECEDENCE = [("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def _binary(self, level):
        if level == len(self._PRECEDENCE):
            return self._unary()
        value = self._binary(level + 1)
        ops = self._PRECEDENCE[level]
        while self.tok.kind == PUNCT and self.tok.text in ops:
            op = self.advance().text
            rhs = self._binary(level + 1)
            if op == "|": value |= rhs
            elif op == "^": value ^= rhs
            elif op == "&": value &= rhs
            elif op in ("<<", ">>") and not 0 <= rhs < 64:
                self.error(f"shift by {rhs} in constant expression (0 to 63)")
            elif op == "<<": value <<= rhs
            elif op == ">>": value >>= rhs
            elif op == "+": value += rhs
            elif op == "-": value -= rhs
            elif op == "*": value *= rhs
            elif rhs == 0:
                self.error("division by zero in constant expression")
            elif op == "/": value = int(value / rhs)
            else: value = value - int(value / rhs) * rhs
            if not -(1 << 64) < value < 1 << 64:
                self.error("constant expression overflows 64 bits")
        return value

    def _unary(self):
        t = self.tok
        if t.kind == PUNCT and t.text in "-~!" and t.text:
            self.advance()
            self.nested("unary operators")
            v = self._unary()
            self.depth -= 1
            return -v if t.text == "-" else (~v if t.text == "~" else int(not v))
        if t.kind == PUNCT and t.text == "(":
            self.advance()
            self.nested("parentheses")
            v = self.const_expr()
            self.expect(")")
            self.depth -= 1
            return v
        if t.kind == INT:
            self.advance()
            return self.int_value(t)[0]
        self.error("unexpected token", "an integer constant")

    # -- module ------------------------------------------------------------------------------
    def parse_module(self) -> ir.Module:
        m = ir.Module()
        while self.tok.kind != EOF:
            t = self.tok
            text = t.text
            if text == ".version":
                self.advance()
                v = self.tok
                if v.kind not in (FLOAT, INT):
                    self.error("unexpected token", "a version number such as 7.8")
                self.advance()
                m.version = v.text
            elif text == ".target":
                self.advance()
                targets = [self.expect_name("a target such as sm_80")]
                while self.accept(","):
                    targets.append(self.expect_name("a target"))
                m.target = tuple(targets)
            elif text == ".address_size":
                self.advance()
                m.address_size = self.int_value(self.expect_kind(INT, "32 or 64"))[0]
            elif text == ".file":
                m.items.append(self.line_directive())
            elif text == ".section":
                m.items.append(self.section())
            elif text == ".pragma":
                m.items.append(self.semicolon_directive())
            elif text == ".alias":
                self.advance()
                a = self.expect_name("an alias name")
                self.expect(",")
                b = self.expect_name("an aliased function name")
                self.expect(";")
                m.items.append(("alias", a, b))
            elif t.kind == DOTWORD:
                m.items.extend(self.declaration())
            else:
                self.error("unexpected token", "a directive (.version, .target, .entry, .func, .global...)")
        return m

    def line_directive(self) -> ir.Directive:
        """A directive that ends at the end of its line (``.loc``, ``.file``)."""
        start = self.tok
        parts = []
        while self.tok.kind != EOF and self.tok.line == start.line:
            parts.append(self.advance().text)
        return ir.Directive(" ".join(parts), line=start.line)

    def semicolon_directive(self) -> ir.Directive:
        start = self.tok
        parts = []
        while self.tok.text != ";":
            if self.tok.kind == EOF:
                self.error("unterminated directive", "';'")
            parts.append(self.advance().text)
        self.advance()
        return ir.Directive(" ".join(parts), line=start.line)

    def section(self) -> ir.Directive:
        """``.section name { ... }``: DWARF data, kept whole as text and never interpreted."""
        start = self.tok
        parts = [self.advance().text]
        while self.tok.text != "{":
            if self.tok.kind == EOF:
                self.error("unterminated .section", "'{'")
            parts.append(self.advance().text)
        depth = 0
        while True:
            t = self.advance()
            if t.kind == EOF:
                self.error("unterminated .section block", "'}'", start)
            parts.append(t.text)
            if t.text == "{" and t.kind == PUNCT:
                depth += 1
            elif t.text == "}" and t.kind == PUNCT:
                depth -= 1
                if depth == 0:
                    break
        return ir.Directive(" ".join(parts), line=start.line)

    def declaration(self) -> list:
        """A module-level function or variable declaration, with its linkage."""
        linkage = []
        while self.tok.text in LINKAGES:
            linkage.append(self.advance().text[1:])
        t = self.tok
        if t.text in (".entry", ".func"):
            return [self.function(tuple(linkage))]
        if t.text in VARIABLE_SPACES:
            return self.variables(tuple(linkage))
        self.error("unexpected token", "'.entry', '.func' or a state space (.global, .const, .shared...)")

    # -- variables ---------------------------------------------------------------------------
    def qualifiers(self, allow_space=True):
        """Dotted qualifiers of a variable or register declaration, up to the name."""
        q = {"space": None, "align": None, "vector": None, "type": None, "attributes": []}
        while self.tok.kind == DOTWORD:
            t = self.advance()
            word = t.text
            if word == ".align":
                q["align"] = self.int_value(self.expect_kind(INT, "an alignment in bytes"))[0]
            elif word in VECTOR_WIDTHS:
                q["vector"] = VECTOR_WIDTHS[word]
            elif word[1:] in ir.TYPE_NAMES:
                q["type"] = word[1:]
            elif allow_space and word in VARIABLE_SPACES and q["space"] is None:
                q["space"] = word[1:]
            elif word == ".attribute":
                self.expect("(")
                inner = [self.advance().text]
                while self.accept(","):
                    inner.append(self.advance().text)
                self.expect(")")
                q["attributes"].append(".attribute(" + ",".join(inner) + ")")
            else:
                q["attributes"].append(word)
        return q

    def dims(self):
        dims = []
        while self.accept("["):
            if self.accept("]"):
                dims.append(None)
            else:
                dims.append(self.const_expr())
                self.expect("]")
        return tuple(dims)

    def variables(self, linkage) -> list:
        start = self.tok
        q = self.qualifiers()
        if q["space"] is None:
            self.error("unexpected token", "a state space", start)
        if q["type"] is None:
            if q["space"] in ("texref", "samplerref", "surfref", "tex"):
                q["type"] = "b64"
            else:
                self.error("variable declaration without a type", "a type such as .u32 or .b8")
        result = []
        while True:
            name_tok = self.tok
            name = self.expect_name("a variable name")
            d = self.dims()
            init = None
            if self.accept("="):
                init = self.initializer()
            result.append(ir.Variable(
                space=q["space"], type=q["type"], name=name, align=q["align"],
                vector=q["vector"], dims=d, init=init, linkage=linkage,
                attributes=tuple(q["attributes"]), line=name_tok.line))
            if not self.accept(","):
                break
        self.expect(";")
        return result

    def initializer(self):
        if self.accept("{"):
            items = []
            if not self.accept("}"):
                items.append(self.initializer())
                while self.accept(","):
                    items.append(self.initializer())
                self.expect("}", "',' or '}'")
            return tuple(items)
        t = self.tok
        if t.kind == IDENT:
            if t.text == "generic" and self.peek().text == "(":
                self.advance(); self.advance()
                name = self.expect_name("a symbol")
                self.expect(")")
                return ir.SymInit(name, self.offset_suffix(), True)
            self.advance()
            return ir.SymInit(t.text, self.offset_suffix())
        return self.number()

    def offset_suffix(self) -> int:
        if self.tok.text in ("+", "-") and self.tok.kind == PUNCT:
            return self.const_expr_after_sign()
        return 0

    def const_expr_after_sign(self) -> int:
        sign = -1 if self.advance().text == "-" else 1
        return sign * self._binary(4 + 1)  # a term: binds tighter than + and -

    def number(self) -> ir.Imm:
        """An immediate: integer expression, decimal float or 0f/0d bit pattern."""
        t = self.tok
        neg = False
        if t.kind == PUNCT and t.text == "-" and self.peek().kind == FLOAT:
            neg = True
            self.advance()
            t = self.tok
        if t.kind == FLOAT:
            self.advance()
            text = t.text
            if text[:2] in ("0f", "0F"):
                bits = int(text[2:], 16)
                return ir.Imm(bits ^ (0x80000000 if neg else 0), "f32")
            if text[:2] in ("0d", "0D"):
                bits = int(text[2:], 16)
                return ir.Imm(bits ^ (1 << 63 if neg else 0), "f64")
            value = -float(text) if neg else float(text)
            if value in (float("inf"), float("-inf")):
                # a decimal literal too large for a double (1e999) is infinity: kept as the
                # double's bits, which print and parse back as themselves
                return ir.Imm(0xFFF0000000000000 if value < 0 else 0x7FF0000000000000, "f64")
            return ir.Imm(value, "float")
        if t.kind == INT and self.peek().text not in ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^"):
            self.advance()
            value, unsigned = self.int_value(t)
            return ir.Imm(value, "int", unsigned)
        if t.kind == INT or (t.kind == PUNCT and t.text in ("-", "~", "!", "(")):
            return ir.Imm(self.const_expr(), "int")
        self.error("unexpected token", "a number")

    # -- functions ---------------------------------------------------------------------------
    def param(self, default_space="param") -> ir.Param:
        t = self.tok
        space = default_space
        if t.text in (".param", ".reg"):
            space = self.advance().text[1:]
        p = {"align": None, "vector": None, "type": None, "ptr": False, "ptr_space": None,
             "ptr_align": None}
        while self.tok.kind == DOTWORD:
            word = self.advance().text
            if word == ".align":
                value = self.int_value(self.expect_kind(INT, "an alignment"))[0]
                p["ptr_align" if p["ptr"] else "align"] = value
            elif word == ".ptr":
                p["ptr"] = True
            elif word in VECTOR_WIDTHS:
                p["vector"] = VECTOR_WIDTHS[word]
            elif word[1:] in ir.TYPE_NAMES:
                p["type"] = word[1:]
            elif p["ptr"] and word in (".global", ".shared", ".const", ".local"):
                p["ptr_space"] = word[1:]
            elif word.startswith(".shared") or word in (".global", ".const", ".local"):
                p["ptr_space"] = word[1:]
            else:
                self.error("unexpected parameter qualifier", "a type, .align or .ptr", self.tokens[self.i - 1])
        if p["type"] is None:
            self.error("parameter without a type", "a type such as .u64")
        name_tok = self.tok
        name = self.expect_name("a parameter name")
        return ir.Param(name=name, type=p["type"], space=space, align=p["align"],
                        vector=p["vector"], dims=self.dims(), ptr=p["ptr"],
                        ptr_space=p["ptr_space"], ptr_align=p["ptr_align"], line=name_tok.line)

    def param_list(self) -> list:
        self.expect("(")
        params = []
        if not self.accept(")"):
            params.append(self.param())
            while self.accept(","):
                params.append(self.param())
            self.expect(")", "',' or ')'")
        return params

    def function(self, linkage) -> ir.Function:
        start = self.advance()
        kind = start.text[1:]
        returns = []
        if kind == "func" and self.tok.text == "(":
            returns = self.param_list()
        name = self.expect_name("a function name")
        params = self.param_list() if self.tok.text == "(" else []
        performance, pragmas = {}, []
        while self.tok.kind == DOTWORD:
            word = self.tok.text
            if word == ".pragma":
                pragmas.append(self.semicolon_directive().text)
                continue
            if word not in HEADER_DIRECTIVES:
                self.error("unknown function directive", "a performance directive (.maxntid, .reqntid...) or '{'")
            self.advance()
            values = []
            if self.tok.kind == INT:
                values.append(self.int_value(self.advance())[0])
                while self.accept(","):
                    values.append(self.int_value(self.expect_kind(INT, "an integer"))[0])
            performance[word[1:]] = tuple(values)
        f = ir.Function(kind=kind, name=name, params=params, returns=returns, linkage=linkage,
                        performance=performance, pragmas=tuple(pragmas), line=start.line)
        if self.accept(";"):
            return f
        self.expect("{", "'{' or ';'")
        self.reg_scopes = [set()]
        self.reg_types = {}
        for p in params + returns:
            if p.space == "reg":
                self.reg_scopes[-1].add(p.name)
                self.reg_types[p.name] = p.type
        f.body = self.body()
        self.reg_scopes = []
        return f

    # -- bodies ------------------------------------------------------------------------------
    def body(self) -> list:
        """Statements up to and including the closing ``}``."""
        items = []
        while True:
            t = self.tok
            kind, text = t.kind, t.text
            if kind == PUNCT and text == "}":
                self.advance()
                return items
            if kind == EOF:
                self.error("unexpected end of input", "'}'")
            if kind == PUNCT and text == "{":
                self.advance()
                self.nested("blocks { }")
                self.reg_scopes.append(set())
                items.append(ir.Scope(self.body(), line=t.line))
                self.reg_scopes.pop()
                self.depth -= 1
            elif kind == DOTWORD:
                items.extend(self.body_directive())
            elif kind == IDENT and self.peek().text == ":" and self.peek().kind == PUNCT:
                self.i += 2
                items.append(self.labeled(t))
            elif kind == IDENT or (kind == PUNCT and text == "@"):
                inst = self.instruction()
                items.extend(self.pending)
                self.pending = []
                items.append(inst)
            else:
                self.error("unexpected token", "an instruction, a label, a declaration or '}'")

    def body_directive(self) -> list:
        t = self.tok
        text = t.text
        if text == ".reg":
            return self.reg_declaration()
        if text == ".loc":
            return [self.line_directive()]
        if text in VARIABLE_SPACES or text in LINKAGES:
            linkage = []
            while self.tok.text in LINKAGES:
                linkage.append(self.advance().text[1:])
            return self.variables(tuple(linkage))
        if text in (".pragma", ".maxnreg", ".section") or text.startswith("."):
            if text == ".section":
                return [self.section()]
            return [self.semicolon_directive()]
        self.error("unexpected directive")

    def reg_declaration(self) -> list:
        self.advance()
        q = self.qualifiers(allow_space=False)
        if q["type"] is None:
            self.error("register declaration without a type", "a type such as .b32 or .pred")
        decls = []
        scope = self.reg_scopes[-1] if self.reg_scopes else set()
        while True:
            name_tok = self.tok
            name = self.expect_name("a register name")
            count = None
            if self.accept("<"):
                count = self.int_value(self.expect_kind(INT, "a register count"))[0]
                self.expect(">")
            decls.append(ir.RegDecl(q["type"], name, count, q["vector"], line=name_tok.line))
            scope.add(name if count is None else (name, count))
            self.reg_types[name] = q["type"] if q["vector"] is None else None
            if not self.accept(","):
                break
        self.expect(";")
        return decls

    def is_register(self, name: str) -> bool:
        for scope in self.reg_scopes:
            if name in scope:
                return True
        m = _REG_RANGE.match(name)
        if m:
            prefix, index = m.group(1), int(m.group(2))
            for scope in self.reg_scopes:
                for entry in scope:
                    if isinstance(entry, tuple) and entry[0] == prefix and index < entry[1]:
                        return True
        return False

    def labeled(self, label_tok):
        t = self.tok
        if t.text in (".branchtargets", ".calltargets"):
            self.advance()
            targets = [self.expect_name("a label")]
            while self.accept(","):
                targets.append(self.expect_name("a label"))
            self.expect(";")
            return ir.TargetTable(label_tok.text, t.text[1:], tuple(targets), line=label_tok.line)
        if t.text == ".callprototype":
            self.advance()
            returns = []
            if self.tok.text == "(":
                returns = self.param_list()
            self.expect("_", "'_'")
            params = self.param_list() if self.tok.text == "(" else []
            noreturn = self.accept(".noreturn")
            self.expect(";")
            return ir.CallPrototype(label_tok.text, tuple(returns), tuple(params), noreturn,
                                    line=label_tok.line)
        return ir.Label(label_tok.text, line=label_tok.line)

    def instruction(self) -> ir.Instruction:
        start = self.tok
        guard = None
        if self.accept("@"):
            negated = self.accept("!")
            name = self.expect_name("a predicate register")
            guard = ir.Reg(name, None, negated)
        op_tok = self.tok
        opcode = self.expect_name("an opcode")
        modifiers = []
        tokens = self.tokens
        while tokens[self.i].kind == DOTWORD:
            modifiers.append(tokens[self.i].text[1:])
            self.i += 1
        operands = []
        # Parenthesized lists are call argument lists in ``call``; elsewhere ``(`` opens a
        # constant expression.
        self.in_call = opcode == "call"
        if not self.accept(";"):
            operands.append(self.operand())
            while self.accept(","):
                operands.append(self.source_operand(start.line))
            if not self.accept(";"):
                self.error("unexpected token", "',' or ';' after an operand")
        return ir.Instruction(opcode, tuple(modifiers), tuple(operands), guard,
                              line=start.line, column=op_tok.column if guard is None else start.column)

    def operand(self):
        t = self.tok
        kind, text = t.kind, t.text
        if kind == IDENT:
            self.i += 1
            if text[0] == "%" or self.is_register(text):
                component = None
                nxt = self.tok
                if nxt.kind == DOTWORD and is_component(nxt.text[1:]):
                    component = nxt.text[1:]
                    self.i += 1
                reg = ir.Reg(text, component)
                if self.tok.text == "|" and self.tok.kind == PUNCT:
                    self.i += 1
                    other = self.tok
                    name = self.expect_name("a predicate register after '|'")
                    if other.text == "_":
                        return ir.Pair(reg, ir.Reg("_"))
                    return ir.Pair(reg, ir.Reg(name))
                return reg
            if self.tok.kind == PUNCT and self.tok.text in ("+", "-") and self.peek().kind == INT:
                return ir.Sym(text, self.const_expr_after_sign())
            if self.tok.kind == PUNCT and self.tok.text == "[" and self.peek().kind == INT:
                return self.array_element(text, t)
            return ir.Sym(text)
        if kind == PUNCT:
            if text == "{":
                self.i += 1
                self.nested("vector operands { }")
                items = []
                if not self.accept("}"):
                    items.append(self.vector_element())
                    while self.accept(","):
                        items.append(self.vector_element())
                    self.expect("}", "',' or '}'")
                self.depth -= 1
                return ir.Vec(tuple(items))
            if text == "[":
                return self.address()
            if text == "(" and self.in_call:
                self.i += 1
                items = []
                if not self.accept(")"):
                    items.append(self.operand())
                    while self.accept(","):
                        items.append(self.operand())
                    self.expect(")", "',' or ')'")
                return ir.ParamList(tuple(items))
            if text == "!":
                self.i += 1
                name = self.expect_name("a predicate register after '!'")
                return ir.Reg(name, None, True)
        if kind in (INT, FLOAT) or (kind == PUNCT and text in ("-", "~", "(")):
            return self.number()
        self.error("unexpected token", "an operand (register, immediate, address, vector or name)")

    def array_element(self, name: str, t):
        """``a[0]``, the ISA's square-bracket notation for an array's element ("Arrays as
        Operands"; tinygrad writes ``mov.u64 %r, local0[0]``): its address is the array's.
        The ISA does not say whether a non-zero index counts elements or bytes, so only 0 is
        taken."""
        self.expect("[")
        index = self.tok
        value = self.number()
        self.expect("]", "']'")
        if not isinstance(value, ir.Imm) or value.kind != "int" or value.value != 0:
            raise PtxUnsupportedError(
                f"line {index.line}, column {index.column}: the array element {name}[...] "
                f"with an index other than 0: the PTX ISA does not say whether the index counts "
                f"elements or bytes; write the address as {name}+bytes")
        return ir.Sym(name)

    def source_operand(self, line: int):
        """An operand after the first (a source: the first is the destination, or the
        address of ``st``). ptxas also takes ``reg + imm`` / ``reg - imm`` there, an integer
        register plus a constant (ZLUDA's ``reg_local`` test, checked on NVIDIA GPUs): it
        becomes an ``add`` into a fresh register just before the instruction, so that every
        later pass sees plain registers."""
        op = self.operand()
        if not (isinstance(op, ir.Reg) and not op.negated and self.tok.kind == PUNCT
                and self.tok.text in ("+", "-") and self.peek().kind in (INT, PUNCT)):
            return op
        t = self.tok
        offset = self.const_expr_after_sign()
        ty = self.reg_types.get(op.name)
        if ty is None:
            m = _REG_RANGE.match(op.name)
            ty = self.reg_types.get(m.group(1)) if m else None
        if op.component or ty is None or ty[0] not in "bus" or ty == "b128":
            raise PtxUnsupportedError(
                f"line {t.line}, column {t.column}: '{op} {t.text} ...' adds a constant to a "
                "register; supported for integer (.b/.u/.s) scalar registers only")
        self.fresh += 1
        name = f"%__dptx_plus{self.fresh}"
        self.pending.append(ir.RegDecl(ty, name, line=line))
        self.pending.append(ir.Instruction("add", (("s" if ty[0] == "s" else "u") + ty[1:],),
                                           (ir.Reg(name), op, ir.Imm(offset)), None,
                                           line=line, column=t.column))
        return ir.Reg(name)

    def vector_element(self):
        if self.tok.kind == IDENT and self.tok.text == "_":
            self.advance()
            return None
        return self.operand()

    def address(self):
        self.expect("[")
        t = self.tok
        base = None
        offset = 0
        if t.kind == IDENT:
            self.advance()
            if t.text[0] == "%" or self.is_register(t.text):
                component = None
                if self.tok.kind == DOTWORD and is_component(self.tok.text[1:]):
                    component = self.advance().text[1:]
                base = ir.Reg(t.text, component)
            else:
                base = ir.Sym(t.text)
            while self.tok.kind == PUNCT and self.tok.text in ("+", "-"):
                offset += self.const_expr_after_sign()
        elif t.kind == INT or (t.kind == PUNCT and t.text in ("-", "(")):
            offset = self.const_expr()
        else:
            items = [self.operand()]
            while self.accept(","):
                items.append(self.operand())
            self.expect("]")
            return ir.AddrList(tuple(items))
        if self.tok.text == ",":
            items = [base if base is not None else ir.Imm(offset)]
            if base is not None and offset:
                items = [ir.Addr(base, offset)]
            while self.accept(","):
                items.append(self.operand())
            self.expect("]")
            return ir.AddrList(tuple(items))
        self.expect("]", "'+offset' or ']'")
        return ir.Addr(base, offset)


def parse(text: str) -> ir.Module:
    """Parse PTX text into a Module and check the ISA's rules on it (``validate``). Raises
    PtxSyntaxError with line and column."""
    module = Parser(text).parse_module()
    validate(module, text)
    return module
