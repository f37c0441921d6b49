"""Natural alignment checks of the per-thread form (mixed into ``function.Function``): PTX
requires every access at a multiple of its size, and a GPU stops a kernel that is not with
cudaErrorMisalignedAddress. An address aligned by construction (``ptx/alignment.py``) is not
checked."""
from __future__ import annotations

from ...ptx.alignment import KnownAlignment, trailing_zeros
from . import address_space as L


class AlignmentChecks:
    @property
    def known(self) -> KnownAlignment:
        """Low bits known zero of this function's registers (ptx/alignment.py)."""
        if self._known is None:
            symbols = {name: L.WINDOW_SHIFT for name in self.mod.windows}   # window bases
            symbols.update({name: trailing_zeros(off)
                            for name, off in self.mod.shared.offsets.items()})
            # the frame starts at a multiple of 16 bytes (%lsp, and each thread's area)
            symbols.update({name: min(4, trailing_zeros(off)) for name, off in self.locals.items()})
            self._known = KnownAlignment(self.f, symbols, self.mod.param_bits)
        return self._known

    def aligned_by_construction(self, addr, size) -> bool:
        return isinstance(size, int) and self.known.aligned(addr, L.alignment(size))

    def aligned(self, value: str, size):
        """i1: the device address ``value`` (i64) is naturally aligned for an access of
        ``size`` bytes (``address_space.alignment``); None when every address is."""
        a = L.alignment(size)
        if a == 1:
            return None
        low = self.tmp(); self.emit(f"{low} = and i64 {value}, {a - 1}")
        ok = self.tmp(); self.emit(f"{ok} = icmp eq i64 {low}, 0")
        return ok

    def require_aligned(self, value: str, size, inst, window: int = None) -> None:
        """Fault with ERR_MISALIGNED unless ``value`` is naturally aligned, as a GPU does;
        ``window``: ``value`` is an offset in the shared or local window (reported as the
        generic address)."""
        ok = self.aligned(value, size)
        if ok is None:
            return
        good, bad = self.label("al"), self.label("misal")
        self.emit(f"br i1 {ok}, label %{good}, label %{bad}, !prof !1")
        self.block(bad)
        if window is not None:
            generic = self.tmp()
            self.emit(f"{generic} = or i64 {value}, {L.buffer_address(window)}")
            value = generic
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_MISALIGNED}, "
                  f"i64 {value}, i32 {inst.line}, i64 {size})")
        self.emit("br label %fault")
        self.block(good)
