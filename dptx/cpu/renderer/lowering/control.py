"""Control flow and calls: ``bra``, ``brx.idx``, ``ret``/``exit``, ``trap``/``brkpt``, ``call``
(direct, indirect through a function pointer, and the host-side ``vprintf`` and
``__assertfail``)."""
from __future__ import annotations

from ....ptx import ir
from .. import address_space as L
from .common import BITS, FUNCTION_ID_BASE, LLTY, ST_ERR, unsupported
from .registry import Registry

registry = Registry("control")


class ControlLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # control --------------------------------------------------------------------------------
    @registry.lower("bra")
    def op_bra(self, inst):
        self.emit(f"br label %{self.target(inst)}")
        self.block(self.label("dead"))

    @registry.lower("ret", "exit")
    def op_ret(self, inst):
        self.return_registers()
        self.emit("ret i32 0")
        self.block(self.label("dead"))

    @registry.lower("trap", "brkpt")
    def op_trap(self, inst):
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_TRAP}, i64 0, i32 {inst.line}, i64 0)")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(self.label("dead"))

    @registry.lower("brx")
    def op_brx(self, inst):
        table = next((s for s in self.f.statements() if isinstance(s, ir.TargetTable)
                      and s.name == inst.operands[1].name), None)
        if table is None:
            raise unsupported(inst, "brx.idx without a .branchtargets table")
        idx = self.read(inst.operands[0], "i32", inst)
        cases = " ".join(f"i32 {i}, label %{self.branch_target(t)}" for i, t in enumerate(table.targets))
        self.emit(f"switch i32 {idx}, label %fault [{cases}]")
        self.block(self.label("dead"))

    @registry.lower("call")
    def op_call(self, inst):
        ops = list(inst.operands)
        rets = []
        if ops and isinstance(ops[0], ir.ParamList):
            rets = list(ops.pop(0).items)
        callee = ops.pop(0)
        args = list(ops.pop(0).items) if ops and isinstance(ops[0], ir.ParamList) else []
        if not isinstance(callee, ir.Sym):
            return self.indirect_call(inst, callee, rets, args)
        name = callee.name
        if name == "vprintf":
            self.printf(inst, args)
            if rets:
                p = self.param_vars[rets[0].name][0]
                self.emit(f"store i32 0, ptr {p}")
            return
        if name == "__assertfail":
            return self.assert_fail(inst, args)
        if name in ("malloc", "free"):
            return self.heap_call(inst, name, rets, args)
        target = self.mod.module.function(name)
        if target.body is None:
            raise unsupported(inst, f"call to {name}, which has no body in this module")
        if len(rets) != len(target.returns) or len(args) != len(target.params):
            raise unsupported(inst, f"{name} takes {len(target.returns)} returns and "
                                    f"{len(target.params)} parameters")
        ptrs, copy_out = [], []
        for r, p, is_ret in [(r, p, True) for r, p in zip(rets, target.returns)] + \
                [(a, p, False) for a, p in zip(args, target.params)]:
            ptr = self.argument_pointer(inst, r, p, is_ret, copy_out)
            ptrs.append(f"ptr {ptr}")
        callee_lsp = self.tmp()
        self.emit(f"{callee_lsp} = add i64 %lsp, {(self.local_size + 15) // 16 * 16}")
        st = self.tmp()
        self.emit(f'{st} = call i32 @"f.{name}"(ptr %ctx, ptr %ti, ptr %lbase, i64 {callee_lsp}'
                  + "".join(", " + p for p in ptrs) + ")")
        bad = self.tmp(); self.emit(f"{bad} = icmp ne i32 {st}, 0")
        ok = self.label("ok")
        self.emit(f"br i1 {bad}, label %fault, label %{ok}")
        self.block(ok)
        for name, ty, q in copy_out:        # vector returns into the caller's components
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {q}")
            self.emit(f"store {ty} {v}, ptr {self.reg_ptr(name)}")

    def heap_call(self, inst, name: str, rets: list, args: list):
        """malloc(size) -> pointer (NULL when the launch's heap is exhausted) and free(p),
        on the launch's device heap (heap_ir.py); a bad free stops the thread with an
        error naming it."""
        self.mod.uses_malloc = True
        if len(args) != 1 or len(rets) != (1 if name == "malloc" else 0):
            raise unsupported(inst, f"{name} takes one argument")
        arg = self.read_call_value(inst, args[0])
        if name == "malloc":
            r = self.tmp(); self.emit(f"{r} = call i64 @dptx_malloc(ptr %ctx, i64 {arg})")
            self.write_call_value(inst, rets[0], r)
            return
        st = self.tmp(); self.emit(f"{st} = call i32 @dptx_free(ptr %ctx, i64 {arg})")
        bad = self.tmp(); self.emit(f"{bad} = icmp ne i32 {st}, 0")
        err, ok = self.label("badfree"), self.label("freed")
        self.emit(f"br i1 {bad}, label %{err}, label %{ok}")
        self.block(err)
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_FREE}, i64 {arg}, "
                  f"i32 {inst.line}, i64 0)")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(ok)

    def read_call_value(self, inst, op) -> str:
        """A 64-bit call argument: a .param variable's bytes, or a register."""
        if isinstance(op, ir.Sym) and op.name in self.param_vars:
            v = self.tmp(); self.emit(f"{v} = load i64, ptr {self.param_vars[op.name][0]}")
            return v
        return self.read(op, "i64", inst)

    def write_call_value(self, inst, op, value: str) -> None:
        if isinstance(op, ir.Sym) and op.name in self.param_vars:
            self.emit(f"store i64 {value}, ptr {self.param_vars[op.name][0]}")
        else:
            self.write(op, value, "i64", inst)

    def argument_pointer(self, inst, r, p, is_ret: bool, copy_out: list) -> str:
        """Where the callee finds argument (or puts return) ``r`` for its parameter ``p``:
        a .param variable, a scalar register's storage, or for a vector register, a ``{a,
        b}`` list or an immediate, a buffer of the parameter's size (returns copied back to
        the components after the call)."""
        if isinstance(r, ir.Sym) and r.name in self.param_vars:
            return self.param_vars[r.name][0]
        scalar = self.component_reg(r) if isinstance(r, ir.Reg) else r
        if isinstance(scalar, ir.Reg) and scalar.name in self.regs and not \
                (scalar.name in self.vector_regs):
            ty = self.regs[scalar.name]
            if p.space == "reg" and (p.vector or LLTY.get(p.type) is None or
                                     BITS[LLTY[p.type]] != BITS[ty]):
                raise unsupported(inst, f"call argument {r} for parameter {p.name} "
                                        f"(.{p.type}{f' x{p.vector}' if p.vector else ''})")
            return self.reg_ptr(scalar.name)
        items = self.vector_items(r) if isinstance(r, (ir.Reg, ir.Vec)) else (r,)
        ty = LLTY.get(p.type)
        if p.space != "reg" or ty is None or len(items) != (p.vector or 1):
            raise unsupported(inst, f"call argument {r}")
        size = ir.type_size(p.type)
        buf = self.tmp()
        self.prologue.append(f"  {buf} = alloca [{max(size * len(items), 8)} x i8], align 16")
        for k, item in enumerate(items):
            q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {buf}, i64 {k * size}")
            if is_ret:
                if not isinstance(item, ir.Reg) or self.component_reg(item).name not in self.regs:
                    raise unsupported(inst, f"call return {r}")
                copy_out.append((self.component_reg(item).name, ty, q))
            else:
                self.emit(f"store {ty} {self.read(item, ty, inst)}, ptr {q}")
        return buf

    def call_ptrs(self, inst, items) -> list:
        ptrs = []
        for r in items:
            if isinstance(r, ir.Sym) and r.name in self.param_vars:
                ptrs.append(f"ptr {self.param_vars[r.name][0]}")
            elif isinstance(r, ir.Reg) and r.name in self.regs:
                ptrs.append(f"ptr {self.reg_ptr(r.name)}")
            else:
                raise unsupported(inst, f"call argument {r}")
        return ptrs

    def indirect_call(self, inst, callee, rets, args):
        """``call (r), %rd, (a), proto``: the register holds a function id (``mov.u64 %rd,
        f`` gives FUNCTION_ID_BASE + index); dispatch over the defined functions with as
        many parameters and returns; any other value faults."""
        target_id = self.read(callee, "i64", inst)
        candidates = [(i, f) for i, f in enumerate(self.mod.module.functions)
                      if f.body is not None and not f.is_kernel
                      and len(f.params) == len(args) and len(f.returns) == len(rets)]
        ptrs = self.call_ptrs(inst, rets + args)
        done = self.label("icall_done")
        cases = []
        blocks = []
        for i, f in candidates:
            lbl = self.label("icall")
            cases.append(f"i64 {FUNCTION_ID_BASE + i}, label %{lbl}")
            blocks.append((lbl, f))
        self.emit(f"switch i64 {target_id}, label %fault [{' '.join(cases)}]")
        for lbl, f in blocks:
            self.block(lbl)
            if f.name not in {g.name for g in self.mod.functions}:
                raise unsupported(inst, f"indirect call target {f.name} is not reachable")
            lsp = self.tmp(); self.emit(f"{lsp} = add i64 %lsp, {(self.local_size + 15) // 16 * 16}")
            st = self.tmp()
            self.emit(f'{st} = call i32 @"f.{f.name}"(ptr %ctx, ptr %ti, ptr %lbase, i64 {lsp}'
                      + "".join(", " + p for p in ptrs) + ")")
            bad = self.tmp(); self.emit(f"{bad} = icmp ne i32 {st}, 0")
            self.emit(f"br i1 {bad}, label %fault, label %{done}")
        self.block(done)

    def assert_fail(self, inst, args):
        """__assertfail(message, file, line, function, char size), what assert() calls when
        its condition is false: the thread stops like at a trap, and the launch raises an
        error quoting the message, file, line and function (read back on the host)."""
        if len(args) != 5:
            raise unsupported(inst, "__assertfail takes message, file, line, function, size")
        vals = []
        for a, ty in zip(args[:4], ("i64", "i64", "i32", "i64")):
            p = self.param_vars.get(a.name)
            if p is None:
                raise unsupported(inst, f"__assertfail argument {a}")
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {p[0]}")
            vals.append(v)
        cline = self.conv(vals[2], "i32", "i64")
        self.emit(f"call void @record_assert(ptr %ctx, ptr %ti, i64 {vals[0]}, i64 {vals[1]}, "
                  f"i64 {cline}, i64 {vals[3]}, i32 {inst.line})")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(self.label("dead"))

    def printf(self, inst, args):
        if len(args) != 2:
            raise unsupported(inst, "vprintf takes a format and an argument buffer")
        vals = []
        for a in args:
            p = self.param_vars.get(a.name)
            if p is None:
                raise unsupported(inst, f"vprintf argument {a}")
            v = self.tmp(); self.emit(f"{v} = load i64, ptr {p[0]}")
            vals.append(v)
        self.emit(f"call void @record_printf(ptr %ctx, ptr %ti, ptr %lbase, i64 {vals[0]}, i64 {vals[1]})")
