"""CPU executor: PTX -> LLVM IR -> machine code (llvmlite), run in-process on numpy arrays
(DESIGN.md points 3 to 5).

    dptx.cpu.launch(kernel, grid, block, args, shared_mem=0, blocks=None)
"""
from .blocks import run_blocks
from .executor import CompiledKernel, compile_kernel, global_image, launch, module_state
from .library import run_library

__all__ = ["launch", "compile_kernel", "CompiledKernel", "global_image", "module_state",
           "run_blocks", "run_library"]
