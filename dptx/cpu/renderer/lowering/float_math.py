"""Floating-point functions: ``sqrt``, ``rcp``, ``rsqrt``, ``sin``, ``cos``, ``ex2``, ``lg2``,
``tanh``, ``copysign``, ``testp``."""
from __future__ import annotations

from .common import FLOATS, LLTY, W, sfx, vt
from .registry import Registry
from .numeric_helpers import NumericHelpers
from .sin_cos import SinCosIR

registry = Registry("float_math")


class FloatMathLowering(SinCosIR, NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    @registry.lower("copysign")
    def op_copysign(self, inst):
        # copysign.f32 d, a, b: the magnitude of b with the sign of a
        def compute(args, ty):
            return self.fcall("copysign", [args[1], args[0]], ty)
        self.float_op(inst, compute)

    @registry.lower("sqrt")
    def op_sqrt(self, inst):
        self.rounded(inst, "sqrt", "", 1)

    @registry.lower("rcp")
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

    @registry.lower("rsqrt")
    def op_rsqrt(self, inst):
        def compute(a, ty):
            s = self.fcall("sqrt", a, ty)
            r = self.tmp(); self.emit(f"{r} = fdiv {ty} 1.0, {s}"); return r
        self.float_op(inst, compute)

    @registry.lower("sin", "cos")
    def op_sin_cos(self, inst):
        # f32 inline (sin_cos: the same bits as the warp form); other types by libm
        cos = inst.opcode == "cos"
        self.float_op(inst, lambda a, ty: self.sin_cos_f32(a[0], cos) if ty == "float"
                      else self.fcall(inst.opcode, a, ty))

    @registry.lower("ex2")
    def op_ex2(self, inst):
        # f32 inline (exp_log); the 16-bit forms are computed in double by libm and rounded
        self.float_op(inst, lambda a, ty: self.exp2_f32(a[0]) if ty == "float"
                      else self.fcall("exp2", a, ty))

    @registry.lower("lg2")
    def op_lg2(self, inst):
        self.float_op(inst, lambda a, ty: self.log2_f32(a[0]) if ty == "float"
                      else self.fcall("log2", a, ty))

    @registry.lower("tanh")
    def op_tanh(self, inst):
        def compute(a, ty):
            r = self.tmp(); self.emit(f"{r} = call {ty} @tanh_{ty}({ty} {a[0]})"); return r
        self.float_op(inst, compute)

    @registry.lower("testp")
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


class FloatVectorHelpers:
    """What warp-vectorized families share of float math (atomics' adds flush too)."""

    def vftz(self, v: str) -> str:
        """.ftz on a <32 x float>: subnormals become zeros of their sign."""
        a = self.vintrinsic("fabs", [v], "float")
        small = self.op2("fcmp olt", vt("float"), a, "splat (float 0x3810000000000000)")
        zero = self.vcall(vt("float"), f"llvm.copysign.v{W}f32",
                          [f"{vt('float')} zeroinitializer", f"{vt('float')} {v}"])
        r = self.tmp(); self.emit(f"{r} = select {vt('i1')} {small}, {vt('float')} {zero}, {vt('float')} {v}")
        return r


class FloatMathVectorLowering(SinCosIR, FloatVectorHelpers):
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``) of the functions whose
    per-thread lowering is one LLVM operation per element: ``sqrt`` and ``rcp`` rounded to
    nearest (or .approx, which the per-thread form computes the same way), ``rsqrt``, and
    of ``sin``/``cos`` and ``ex2``/``lg2`` on f32 (the inline arithmetic of ``sin_cos`` and
    ``exp_log``, .ftz too). The same operations on ``<32 x T>`` give each
    lane the per-thread form's value (.ftz included); directed rounding and the half types
    return False (lane by lane)."""

    def vfloat(self, inst, em, compute):
        t = self.itype(inst)
        if len(inst.types) != 1 or t not in FLOATS or \
                not self.simple(inst, ("rn", "approx", "full", "ftz")) or \
                not self.all_readable(inst.operands[1:]):
            return False
        ty = LLTY[t]
        # .ftz applies to f32 only, on the operands and the result (as float_op per thread)
        ftz = self.vftz if "ftz" in inst.modifiers and ty == "float" else (lambda v: v)
        args = [ftz(self.vread(o, ty, inst)) for o in inst.operands[1:]]
        self.vwrite(inst.operands[0], ftz(compute(args, ty)), ty, em, inst)

    def vintrinsic(self, name: str, args, ty: str) -> str:
        return self.vcall(vt(ty), f"llvm.{name}.v{W}{sfx(ty)}", [f"{vt(ty)} {a}" for a in args])

    def vreciprocal(self, value: str, ty: str) -> str:
        return self.op2("fdiv", vt(ty), f"splat ({ty} 1.0)", value)

    @registry.lower_vector("sqrt")
    def v_sqrt(self, inst, em):
        return self.vfloat(inst, em, lambda a, ty: self.vintrinsic("sqrt", a, ty))

    @registry.lower_vector("rcp")
    def v_rcp(self, inst, em):
        return self.vfloat(inst, em, lambda a, ty: self.vreciprocal(a[0], ty))

    @registry.lower_vector("rsqrt")
    def v_rsqrt(self, inst, em):
        return self.vfloat(inst, em, lambda a, ty: self.vreciprocal(
            self.vintrinsic("sqrt", a, ty), ty))

    @registry.lower_vector("sin", "cos")
    def v_sin_cos(self, inst, em):
        cos = inst.opcode == "cos"
        return self.vfloat(inst, em, lambda a, ty: self.sin_cos_f32(a[0], cos, W)
                           if ty == "float" else self.vintrinsic(inst.opcode, a, ty))

    @registry.lower_vector("ex2", "lg2")
    def v_exp2_log2(self, inst, em):
        if len(inst.types) != 1 or self.itype(inst) != "f32" or \
                not self.simple(inst, ("approx", "ftz")) or not self.all_readable(inst.operands[1:]):
            return False
        ftz = "ftz" in inst.modifiers
        x = self.vread(inst.operands[1], "float", inst)
        x = self.vftz(x) if ftz else x
        r = self.exp2_f32(x, W) if inst.opcode == "ex2" else self.log2_f32(x, W)
        self.vwrite(inst.operands[0], self.vftz(r) if ftz else r, "float", em, inst)
