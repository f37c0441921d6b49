"""Floating-point functions: ``sqrt``, ``rcp``, ``rsqrt``, ``sin``, ``cos``, ``ex2``, ``lg2``,
``tanh``, ``copysign``, ``testp``."""
from __future__ import annotations

from .common import LLTY
from .registry import lower


class FloatMathLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    @lower("copysign")
    def op_copysign(self, inst):
        # copysign.f32 d, a, b: the magnitude of b with the sign of a
        def compute(args, ty):
            return self.fcall("copysign", [args[1], args[0]], ty)
        self.float_op(inst, compute)

    @lower("sqrt")
    def op_sqrt(self, inst):
        self.rounded(inst, "sqrt", "", 1)

    @lower("rcp")
    def op_rcp(self, inst):
        mode = self.directed_mode(inst)

        def compute(a, ty):
            r = self.tmp()
            if mode and self.itype(inst) in self.FLOAT_TYPES:
                name = self.mod.directed_helper("fdiv", mode, ty, [ty, ty])
                self.emit(f'{r} = call {ty} @"{name}"({ty} 1.0, {ty} {a[0]})')
            else:
                self.emit(f"{r} = fdiv {ty} 1.0, {a[0]}")
            return r
        self.float_op(inst, compute)

    @lower("rsqrt")
    def op_rsqrt(self, inst):
        def compute(a, ty):
            s = self.fcall("sqrt", a, ty)
            r = self.tmp(); self.emit(f"{r} = fdiv {ty} 1.0, {s}"); return r
        self.float_op(inst, compute)

    @lower("sin")
    def op_sin(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("sin", a, ty))

    @lower("cos")
    def op_cos(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("cos", a, ty))

    @lower("ex2")
    def op_ex2(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("exp2", a, ty))

    @lower("lg2")
    def op_lg2(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("log2", a, ty))

    @lower("tanh")
    def op_tanh(self, inst):
        def compute(a, ty):
            r = self.tmp(); self.emit(f"{r} = call {ty} @tanh_{ty}({ty} {a[0]})"); return r
        self.float_op(inst, compute)

    @lower("testp")
    def op_testp(self, inst):
        t = self.itype(inst)
        ty = LLTY[t]
        v = self.read(inst.operands[1], ty, inst)
        a = self.fcall("fabs", [v], ty)
        inf = "0x7FF0000000000000"
        smallest_normal = "0x3810000000000000" if ty == "float" else "0x0010000000000000"
        r = self.tmp()
        kind = next(m for m in inst.modifiers if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
        if kind == "finite":
            self.emit(f"{r} = fcmp olt {ty} {a}, {inf}")
        elif kind == "infinite":
            self.emit(f"{r} = fcmp oeq {ty} {a}, {inf}")
        elif kind == "number":
            self.emit(f"{r} = fcmp ord {ty} {v}, 0.0")
        elif kind == "notanumber":
            self.emit(f"{r} = fcmp uno {ty} {v}, 0.0")
        elif kind == "normal":
            c1 = self.tmp(); self.emit(f"{c1} = fcmp oge {ty} {a}, {smallest_normal}")
            c2 = self.tmp(); self.emit(f"{c2} = fcmp olt {ty} {a}, {inf}")
            self.emit(f"{r} = and i1 {c1}, {c2}")
        else:
            c1 = self.tmp(); self.emit(f"{c1} = fcmp olt {ty} {a}, {smallest_normal}")
            c2 = self.tmp(); self.emit(f"{c2} = fcmp one {ty} {a}, 0.0")
            self.emit(f"{r} = and i1 {c1}, {c2}")
        self.write(inst.operands[0], r, "i1", inst)
