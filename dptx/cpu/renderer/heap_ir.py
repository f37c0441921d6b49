"""LLVM IR of the device heap: ``malloc`` and ``free`` called from kernels.

As on a GPU, each launch has a heap of a fixed size (CUDA's default cudaLimitMallocHeapSize,
8 MiB, unless the launch says otherwise), and ``malloc`` returns NULL when it is exhausted.
The heap is a device buffer like any other (a window of the address space: accesses through
its pointers are translated and bounds-checked to the heap), so pointers from ``malloc`` can
be stored, passed to device functions and read by any thread of the launch.

The allocator is small and exact rather than fast: blocks of power-of-two sizes (32 bytes
and up, a 16-byte header before each payload, payloads 16-byte aligned), a free list per size
class, a bump pointer for new blocks, all under one spin lock (the threads of a launch run
on several cores). Header of the heap (host memory, ``HEADER_BYTES``): the lock (i32 at 0),
the bump offset (i64 at 8), the free-list heads (i64 offsets at 16 + 8 * class, 0 empty).
Header of a block: its class (i64 at 0; bit 62 set while it is free: a second ``free`` of
it, or of a pointer malloc did not return, is reported), the next free block (i64 at 8)."""
from __future__ import annotations

from .runtime_ir import ctx_load

CLASSES = 48                      # size classes 2^0 .. 2^47 (classes below 5 unused)
HEADER_BYTES = 512                # >= 16 + 8 * CLASSES, a multiple of 16
FREED = 1 << 62
DEFAULT_HEAP_BYTES = 8 << 20      # CUDA's default cudaLimitMallocHeapSize


def init_heap(heap) -> None:
    """Zero header and bump pointer of a fresh heap (a numpy uint8 array)."""
    heap[:HEADER_BYTES] = 0
    heap[8:16].view("<i8")[0] = HEADER_BYTES


HEAP_IR = f"""
define internal void @heap_lock(ptr %heap) {{
entry:
  br label %try
try:
  %pair = cmpxchg weak ptr %heap, i32 0, i32 1 acquire monotonic
  %got = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %got, label %done, label %try
done:
  ret void
}}

define internal void @heap_unlock(ptr %heap) {{
entry:
  store atomic i32 0, ptr %heap release, align 4
  ret void
}}

; the device address of a new block of at least %size bytes, or 0 (heap exhausted, or none)
define internal i64 @dptx_malloc(ptr %ctx, i64 %size) {{
entry:
{ctx_load("heap", "heap", "ptr")}{ctx_load("hsize", "heap_size")}{ctx_load("hbase", "heap_address")}  %none = icmp eq ptr %heap, null
  %huge = icmp ugt i64 %size, %hsize
  %no = or i1 %none, %huge
  br i1 %no, label %fail, label %sized
sized:
  %need = add i64 %size, 16
  %nm1 = sub i64 %need, 1
  %lz = call i64 @llvm.ctlz.i64(i64 %nm1, i1 false)
  %c0 = sub i64 64, %lz
  %small = icmp ult i64 %c0, 5
  %c = select i1 %small, i64 5, i64 %c0
  %csize = shl i64 1, %c
  call void @heap_lock(ptr %heap)
  %headoff = shl i64 %c, 3
  %headoff2 = add i64 %headoff, 16
  %headp = getelementptr i8, ptr %heap, i64 %headoff2
  %head = load i64, ptr %headp
  %reuse = icmp ne i64 %head, 0
  br i1 %reuse, label %pop, label %bump
pop:
  %blk = getelementptr i8, ptr %heap, i64 %head
  %nextp = getelementptr i8, ptr %blk, i64 8
  %next = load i64, ptr %nextp
  store i64 %next, ptr %headp
  br label %take
bump:
  %bumpp = getelementptr i8, ptr %heap, i64 8
  %top = load i64, ptr %bumpp
  %end = add i64 %top, %csize
  %full = icmp ugt i64 %end, %hsize
  br i1 %full, label %exhausted, label %grow
exhausted:
  call void @heap_unlock(ptr %heap)
  br label %fail
grow:
  store i64 %end, ptr %bumpp
  br label %take
take:
  %off = phi i64 [%head, %pop], [%top, %grow]
  %hdr = getelementptr i8, ptr %heap, i64 %off
  store i64 %c, ptr %hdr
  call void @heap_unlock(ptr %heap)
  %a0 = add i64 %hbase, %off
  %a = add i64 %a0, 16
  ret i64 %a
fail:
  ret i64 0
}}

; free(%addr): 0 done (NULL is no-op), 1 when %addr is not a live block malloc returned
define internal i32 @dptx_free(ptr %ctx, i64 %addr) {{
entry:
{ctx_load("heap", "heap", "ptr")}{ctx_load("hsize", "heap_size")}{ctx_load("hbase", "heap_address")}  %isnull = icmp eq i64 %addr, 0
  br i1 %isnull, label %ok, label %check
check:
  %none = icmp eq ptr %heap, null
  br i1 %none, label %bad, label %inheap
inheap:
  %rel = sub i64 %addr, %hbase
  %off = sub i64 %rel, 16
  %low = icmp ult i64 %off, {HEADER_BYTES}
  %high = icmp uge i64 %off, %hsize
  %align = and i64 %off, 15
  %odd = icmp ne i64 %align, 0
  %out0 = or i1 %low, %high
  %out = or i1 %out0, %odd
  br i1 %out, label %bad, label %locked
locked:
  call void @heap_lock(ptr %heap)
  %bumpp = getelementptr i8, ptr %heap, i64 8
  %top = load i64, ptr %bumpp
  %past = icmp uge i64 %off, %top
  br i1 %past, label %badlocked, label %header
header:
  %hdr = getelementptr i8, ptr %heap, i64 %off
  %c = load i64, ptr %hdr
  %live = icmp ult i64 %c, {CLASSES}
  %big = icmp uge i64 %c, 5
  %valid = and i1 %live, %big
  br i1 %valid, label %push, label %badlocked
push:
  %marked = or i64 %c, {FREED}
  store i64 %marked, ptr %hdr
  %headoff = shl i64 %c, 3
  %headoff2 = add i64 %headoff, 16
  %headp = getelementptr i8, ptr %heap, i64 %headoff2
  %head = load i64, ptr %headp
  %nextp = getelementptr i8, ptr %hdr, i64 8
  store i64 %head, ptr %nextp
  store i64 %off, ptr %headp
  call void @heap_unlock(ptr %heap)
  br label %ok
badlocked:
  call void @heap_unlock(ptr %heap)
  br label %bad
bad:
  ret i32 1
ok:
  ret i32 0
}}
"""
