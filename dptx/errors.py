"""The dptx error hierarchy (DESIGN.md conventions): one root, messages that say what, where
and what to do."""
from .demangle import readable


class DptxError(Exception):
    """Root of every error dptx raises on purpose. Its text names C++ kernels and their
    parameters as the CUDA source does (``put<float>``, ``J_cuda``), not by their mangled
    PTX names (``dptx.demangle.readable``)."""

    def __str__(self):
        return readable(super().__str__())


class CompileError(DptxError):
    """CUDA C did not compile. ``log`` holds NVRTC's log."""

    def __init__(self, message, log=""):
        super().__init__(message + ("\n" + log if log else ""))
        self.log = log


class PtxSyntaxError(DptxError):
    """PTX text does not parse. Carries the line, the column (both 1-based), the offending
    text and what the parser expected there."""

    def __init__(self, message, line, column, text="", expected="", source_line=""):
        where = f"line {line}, column {column}"
        detail = f"{message} at {where}"
        if text:
            detail += f": found {text!r}"
        if expected:
            detail += f", expected {expected}"
        if source_line:
            detail += f"\n    {source_line}\n    {' ' * (column - 1)}^"
        super().__init__(detail)
        self.line = line
        self.column = column
        self.text = text
        self.expected = expected

    def __str__(self):      # the PTX as written: the caret points at a column of it
        return Exception.__str__(self)


class PtxUnsupportedError(DptxError):
    """An instruction or modifier that a back-end does not implement."""


class LaunchError(DptxError):
    """A launch's configuration or arguments are wrong."""


class DptxMemoryError(DptxError):
    """A kernel accessed memory outside any mapped buffer."""


class FootprintViolation(DptxError):
    """A chunk of a launch accessed a buffer outside the window its access footprint gave it
    (DESIGN.md point 6). Not a fault of the kernel: the access is inside the buffer. The
    distributed runtime answers it by running the launch again with whole buffers."""

    def __init__(self, message, kernel="", target=""):
        super().__init__(message)
        self.kernel = kernel
        self.target = target

    def __reduce__(self):  # travels from workers to the client
        return (type(self), (self.args[0] if self.args else "", self.kernel, self.target))


class ExecutorRefusedError(DptxError):
    """An executor cannot run a kernel on its device (a GPU whose driver cannot load the PTX,
    say): a worker's chunk then runs on the CPU instead (``dptx.device.executors``)."""


class DptxDeadlockError(DptxError):
    """The threads of a block wait at a barrier whose count is never met, or on an mbarrier
    phase that never completes (the others exited or wait elsewhere): the kernel was
    stopped, as a GPU would hang."""


class DptxTimeoutError(DptxError):
    """A kernel ran past its time limit (``dptx.kernel-timeout``) and was stopped."""


class OutOfMemoryError(DptxError, MemoryError):
    """An allocation larger than the cluster's memory (its workers' memory limits in all),
    as CuPy's ``OutOfMemoryError`` for a device's."""


class WorkerDiedError(DptxError):
    """Every worker that ran one of an operation's tasks died while running it (Dask's
    ``KilledWorker``, after its allowed failures): most often the task needed more memory
    than the worker's limit, and its nanny stopped it."""


class DataLostError(DptxError):
    """A worker died holding the only copy of (part of) an array's current version, and Dask
    cannot compute it again (the versions it came from were released): the array is lost."""


class ClusterLostError(DptxError):
    """dptx's client lost its scheduler: the cluster and the arrays on it are gone."""


class VariableNotFoundError(DptxError, KeyError):
    """``get_global`` asked for a module variable that the module does not define."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class KernelNotFoundError(DptxError, KeyError):
    """``get_function`` asked for a kernel that the module does not define."""

    def __str__(self):
        return readable(self.args[0]) if self.args else ""
