"""Stop polls: every loop back edge of a translated function reads the launch's stop request
(``address_space.CTX["stop"]``, set by ``watchdog``: the time limit, Ctrl-C) and ends the
thread with ERR_STOPPED when it is set, so that a thread that would loop for ever can be
stopped (mixed into ``function.Function``; the warp form's loops call ``branch_back`` too)."""
from __future__ import annotations

from ...ptx import ir
from . import address_space as L
from .lowering.common import ST_ERR


class StopPolls:
    def find_label_positions(self) -> None:
        pos = 0
        for s in self.f.statements():
            if isinstance(s, ir.Label):
                self.label_pos[s.name] = pos
            elif isinstance(s, ir.Instruction):
                pos += 1

    def branch_target(self, name: str) -> str:
        """The LLVM label a branch from the current instruction to PTX label ``name`` takes:
        the label's own, or for a branch back (every cycle of the control flow has one),
        a poll of the launch's stop request on the way, so that a time limit or Ctrl-C ends
        a thread that would loop forever (one load of a cached word per iteration)."""
        target = self.labels[name]
        return self.stop_poll(target) if self.is_back_edge(name) else target

    def stop_poll(self, target: str) -> str:
        """The label of a block (emitted with the function's end) that goes on to
        ``target`` unless the launch was asked to stop."""
        poll = f"poll{len(self.polls)}"
        self.polls.append((poll, target))
        return poll

    def is_back_edge(self, name: str) -> bool:
        return self.label_pos.get(name, -1) <= self.inst_index

    def branch_back(self, cond: str, target: str, fall: str) -> None:
        """``br i1 cond, target, fall`` where ``target`` is a loop's head: the stop request
        is read and tested in the same branch (a separate poll block cost 8% on a
        grid-stride reduction, this 0-4%)."""
        self.polls.append((None, None))
        v = self.tmp(); self.emit(f"{v} = load atomic i32, ptr %stopp monotonic, align 4")
        go = self.tmp(); self.emit(f"{go} = icmp eq i32 {v}, 0")
        stay = self.tmp(); self.emit(f"{stay} = and i1 {cond}, {go}")
        out = self.label("backout")
        self.emit(f"br i1 {stay}, label %{target}, label %{out}, !prof !1")
        self.block(out)
        self.emit(f"br i1 {cond}, label %stopped, label %{fall}")

    def stop_poll_blocks(self) -> list:
        """The poll blocks, and the exit of a stopped thread (ERR_STOPPED; the host knows
        why it asked). Also loads the request's address in the entry block."""
        if not self.polls:
            return []
        self.prologue += [f"  %stopf = getelementptr i64, ptr %ctx, i64 {L.CTX['stop']}",
                          "  %stopp = load ptr, ptr %stopf, !invariant.load !0"]
        lines = []
        for k, (poll, target) in enumerate(self.polls):
            if poll is None:        # read in place (stop_request)
                continue
            lines += [f"{poll}:",
                      f"  %stopv{k} = load atomic i32, ptr %stopp monotonic, align 4",
                      f"  %stopq{k} = icmp ne i32 %stopv{k}, 0",
                      f"  br i1 %stopq{k}, label %stopped, label %{target}, !prof !1"]
        lines += ["stopped:",
                  f"  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_STOPPED}, i64 0, "
                  f"i32 0, i64 0)",
                  f"  ret i32 {ST_ERR}"]
        return lines
