"""The CPU executor's renderer: PTX -> LLVM IR. ``codegen.Module`` translates a kernel's
module: per function the per-thread form (``function``) or the warp-vectorized one (``vector``
and its ``vector_*`` helpers), the once-per-block bounds check (``block_check``), the block
schedulers (``schedulers``) and the runtime helpers' IR (``runtime_ir``, ``heap_ir``);
``lowering/`` holds each instruction family; ``address_space`` is the contract between the
rendered code and what runs it (the device address space, the context layout, error codes).
It knows nothing of running: the executor, the JIT, the compiled forms and the watchdog are
``dptx.cpu``'s own modules."""
