"""Library routines, what every executor agrees on: a routine a task runs with its device's own
library (issue 45), named as numpy names it (``"matmul"``, ``"linalg.svd"``). The CPU
executor finds the name in numpy (OpenBLAS, LAPACK), the GPU executor in CuPy (cuBLAS,
cuSOLVER): the same names, arguments and results in both, which is what makes a routine a task
that any worker runs on the data where it lives.

Only the routines below are run (a task names one; nothing else is looked up). A routine
that numpy ends with ``LinAlgError`` (a singular matrix, one not positive definite, no
convergence) is not an error of the task: the task says so in a status output and the client
raises numpy's error (``FAILURE``), as numpy raises it, at the call."""
from __future__ import annotations

from ..errors import DptxError

# routine -> what numpy says when it fails (None: it cannot fail on finite input)
ROUTINES = {
    "matmul": None,
    "linalg.solve": "Singular matrix",
    "linalg.inv": "Singular matrix",
    "linalg.det": None,
    "linalg.slogdet": None,
    "linalg.cholesky": "Matrix is not positive definite",
    "linalg.qr": None,
    "linalg.eigh": "Eigenvalues did not converge",
    "linalg.eigvalsh": "Eigenvalues did not converge",
    "linalg.svd": "SVD did not converge",
    "linalg.lstsq": "SVD did not converge in Linear Least Squares",
    **{f"fft.{name}": None for name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn",
                                         "ifftn", "rfftn", "irfftn")},
}


def routine(library, name: str):
    """The function ``name`` of ``library`` (numpy, or a CuPy module)."""
    if name not in ROUTINES:
        raise DptxError(f"{name!r} is not a library routine dptx runs (it runs "
                        f"{', '.join(sorted(ROUTINES))})")
    found = library
    for part in name.split("."):
        found = getattr(found, part)
    return found


def results(value) -> tuple:
    """A routine's result as a tuple of its arrays (numpy returns one array, a tuple or a
    named tuple; ``lstsq`` a Python int among them)."""
    return tuple(value) if isinstance(value, tuple) else (value,)
