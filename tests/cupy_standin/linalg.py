"""``cupy.linalg``'s routines that dptx's GPU executor calls (cuSOLVER's on a GPU; ``dptx/gpu/
library.py``), with CuPy's signatures: computed with numpy from the stand-in device's bytes,
the results put back on the current device. Each call is recorded (``testing.calls``:
("library", device, routine)). Like numpy, they raise LinAlgError (CuPy does under
``cupyx.errstate(linalg="raise")``, as dptx asks)."""
from __future__ import annotations

import numpy

from ._library import run


def solve(a, b):
    return run("linalg.solve", numpy.linalg.solve, a, b)


def inv(a):
    return run("linalg.inv", numpy.linalg.inv, a)


def det(a):
    return run("linalg.det", numpy.linalg.det, a)


def slogdet(a):
    return run("linalg.slogdet", numpy.linalg.slogdet, a)


def cholesky(a):
    return run("linalg.cholesky", numpy.linalg.cholesky, a)


def qr(a, mode="reduced"):
    return run("linalg.qr", numpy.linalg.qr, a, mode=mode)


def eigh(a, UPLO="L"):
    return run("linalg.eigh", numpy.linalg.eigh, a, UPLO=UPLO)


def eigvalsh(a, UPLO="L"):
    return run("linalg.eigvalsh", numpy.linalg.eigvalsh, a, UPLO=UPLO)


def svd(a, full_matrices=True, compute_uv=True):
    return run("linalg.svd", numpy.linalg.svd, a, full_matrices=full_matrices,
               compute_uv=compute_uv)
