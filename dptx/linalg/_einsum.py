"""numpy.einsum on dptx arrays. The subscripts are worked out on the host as numpy reads them
(explicit and implicit output, ``...``, the interleaved form, labels of size 1 broadcast);
the arithmetic runs as device launches made of the array API's own: a repeated label of one
operand is a diagonal view, a label no other operand and not the output has is summed
first, and the operands are contracted two at a time (left to right, or in the order
``numpy.einsum_path`` chooses where ``optimize`` asks), each pair as a matrix product of
stacks (``matmul``) or, where one side has no free labels, a broadcast product summed."""
from __future__ import annotations

import string

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .._core import outputs, products, reductions, ufuncs
from ..runtime.ndarray import asarray, ndarray
from .._core.elementwise import HALF
from ..errors import DptxError

# numpy's function of this name (array_api dispatches numpy's to it)
__all__ = ["einsum"]

_LABELS = string.ascii_uppercase + string.ascii_lowercase     # numpy's 52 labels, its order


def einsum(*operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """numpy.einsum: ``einsum("ij,jk->ik", a, b)``, or the interleaved form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``; ``dtype``/``casting`` as numpy's, ``out=``,
    ``optimize`` (False: pairs left to right; True, 'greedy', 'optimal' or a path from
    ``numpy.einsum_path``: that order)."""
    if order not in ("K", "A", "C", "F", None):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if not operands:
        raise TypeError("einsum() missing required argument 'subscripts' (pos 0)")
    if isinstance(operands[0], str):
        subscripts, arrays = operands[0], [asarray(a) for a in operands[1:]]
    else:
        subscripts, arrays = _interleaved(operands)
    terms, output = _parse(subscripts, arrays)
    _check_sizes(terms, arrays)

    R = np.dtype(dtype) if dtype is not None else np.result_type(*[a.dtype for a in arrays])
    for a in arrays:
        if not np.can_cast(a.dtype, R, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {R!r} according to "
                            f"the rule {casting!r}")
    if R.kind not in "biuf":
        raise DptxError(f"einsum of {R} is not supported on dptx arrays yet")
    if R == HALF and (len(arrays) > 1 or set(terms[0]) - set(output)):
        raise DptxError("einsum of float16 products or sums is not supported yet (numpy "
                        "accumulates them in float32 and rounds where it stores; cast to "
                        "float32 first)")
    # bool: numpy's sum of products is "any pair both true", a count of them compared with 0
    work = np.dtype(np.int64) if R.kind == "b" else R
    ops = [(a if a.dtype == work else ufuncs.astype(a, work), t) for a, t in zip(arrays, terms)]
    ops = [_diagonal(a, t) for a, t in ops]

    for step in _steps(arrays, terms, output, optimize):
        # the step's operands combined in turn, their product appended (numpy's path's rule)
        rest = [op for k, op in enumerate(ops) if k not in step]
        taken = [ops[k] for k in step]
        acc = taken[0]
        for n, nxt in enumerate(taken[1:], 2):
            keep = set(output).union(*[set(t) for _, t in rest + taken[n:]])
            acc = _contract(*acc, *nxt, keep, work)
        ops = rest + [acc]
    (result, labels), = ops
    result, labels = _sum_labels(result, labels, set(labels) - set(output), work)
    if labels != output:
        result = result.transpose(tuple(labels.index(c) for c in output))
    if R.kind == "b":
        result = ufuncs.apply(np.not_equal, result, 0)
    elif result.dtype != R:
        result = ufuncs.astype(result, R)
    if out is not None:
        return outputs.store(out, result, "einsum", casting=casting)
    return result


def _interleaved(operands) -> tuple:
    """``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as a subscripts string (integers are labels
    0-51, ``Ellipsis`` is ``...``) and the arrays."""
    def term(sub) -> str:
        text = ""
        for s in sub:
            if s is Ellipsis:
                text += "..."
            elif isinstance(s, (int, np.integer)) and 0 <= int(s) < len(_LABELS):
                text += _LABELS[int(s)]
            else:
                raise ValueError(f"subscript is not within the valid range [0, 52) ({s!r})")
        return text
    arrays, terms = [], []
    for k in range(0, len(operands) - 1, 2):
        arrays.append(asarray(operands[k]))
        terms.append(term(operands[k + 1]))
    subscripts = ",".join(terms)
    if len(operands) % 2:
        subscripts += "->" + term(operands[-1])
    return subscripts, arrays


def _parse(subscripts: str, arrays: list) -> tuple:
    """numpy's reading of the subscripts: each operand's labels (``...`` replaced by labels
    no term uses, right-aligned across operands as broadcasting aligns dimensions) and the
    output's."""
    text = subscripts.replace(" ", "")
    if any(c not in _LABELS + ",.->" for c in text):
        bad = next(c for c in text if c not in _LABELS + ",.->")
        raise ValueError(f"invalid subscript '{bad}' in einstein sum subscripts string, "
                         f"subscripts must be letters")
    explicit = "->" in text
    inputs, _, output = text.partition("->")
    if "-" in inputs or ">" in inputs or "-" in output or ">" in output:
        raise ValueError("einstein sum subscript string does not contain proper '->' output "
                         "specified")
    terms = inputs.split(",")
    # (numpy's messages, word for word)
    if len(terms) > len(arrays):
        raise ValueError("more operands provided to einstein sum function than specified in "
                         "the subscripts string")
    if len(terms) < len(arrays):
        raise ValueError("fewer operands provided to einstein sum function than specified "
                         "in the subscripts string")
    unused = [c for c in _LABELS if c not in text]
    widest = 0
    for k, (t, a) in enumerate(zip(terms, arrays)):
        if t.count("...") > 1 or t.replace("...", "").count("."):
            raise ValueError(f"einstein sum subscripts string contains a '.' that is not part "
                             f"of an ellipsis ('...') in operand {k}")
        named = len(t.replace("...", ""))
        if "..." in t:
            if named > a.ndim:
                raise ValueError(f"einstein sum subscripts string contains too many "
                                 f"subscripts for operand {k}")
            widest = max(widest, a.ndim - named)
        elif named != a.ndim:
            raise ValueError(
                "operand has more dimensions than subscripts given in einstein sum, but no "
                "'...' ellipsis provided to broadcast the extra dimensions." if named < a.ndim
                else f"einstein sum subscripts string contains too many subscripts for "
                     f"operand {k}")
    if widest > len(unused):
        raise ValueError("einsum: too many dimensions for the labels left to '...'")
    ellipsis = "".join(unused[:widest])
    terms = [t.replace("...", ellipsis[len(ellipsis) - (a.ndim - len(t) + 3):]
                       if a.ndim - len(t) + 3 > 0 else "")
             if "..." in t else t for t, a in zip(terms, arrays)]
    if explicit:
        if output.count("...") > 1 or output.replace("...", "").count("."):
            raise ValueError("einstein sum subscripts string contains a '.' that is not part "
                             "of an ellipsis ('...')")
        if "..." not in output and any(c in t for c in ellipsis for t in terms):
            raise ValueError("output has more dimensions than subscripts given in einstein "
                             "sum, but no '...' ellipsis provided to broadcast the extra "
                             "dimensions.")
        output = output.replace("...", ellipsis)
        for c in output:
            if output.count(c) > 1:
                raise ValueError(f"einstein sum subscripts string includes output subscript "
                                 f"'{c}' multiple times")
            if not any(c in t for t in terms):
                raise ValueError(f"einstein sum subscripts string included output subscript "
                                 f"'{c}' which never appeared in an input")
    else:
        # numpy's implicit output: the broadcast dimensions, then the labels that appear
        # once, in the order of its labels (upper case first)
        counts = "".join(terms)
        output = ellipsis + "".join(c for c in _LABELS
                                    if c not in ellipsis and counts.count(c) == 1)
    return terms, output


def _check_sizes(terms: list, arrays: list) -> None:
    """numpy's error where a label has two sizes (a size of 1 broadcasts, as numpy's)."""
    sizes = {}
    for t, a in zip(terms, arrays):
        for c in set(t):
            dims = [n for x, n in zip(t, a.shape) if x == c]
            if len(set(dims)) > 1:
                raise ValueError(f"dimensions in single operand for collapsing index '{c}' "
                                 f"don't match ({' != '.join(str(n) for n in dims)})")
        for c, n in zip(t, a.shape):
            if sizes.get(c, 1) == 1:
                sizes[c] = n
            elif n not in (1, sizes[c]):
                raise ValueError(
                    "operands could not be broadcast together with remapped shapes "
                    "[original->remapped]: " + " ".join(str(x.shape).replace(" ", "")
                                                        for x in arrays)
                    + f" (label '{c}': {sizes[c]} and {n})")


def _diagonal(a: ndarray, term: str) -> tuple:
    """A label repeated in one operand (``ii``): the view of its diagonal (one axis whose
    stride is the sum of the repeated axes'), as numpy takes it."""
    if len(set(term)) == len(term):
        return a, term
    labels, shape, strides = "", [], []
    for c in dict.fromkeys(term):
        axes = [k for k, x in enumerate(term) if x == c]     # (of one size: _check_sizes)
        labels += c
        shape.append(a.shape[axes[0]])
        strides.append(sum(a.strides[k] for k in axes))
    probe = a._stand_in()
    return a._like(probe, as_strided(probe, shape=tuple(shape), strides=tuple(strides))), \
        labels


def _steps(arrays: list, terms: list, output: str, optimize) -> list:
    """The order of contraction as ``numpy.einsum_path`` gives it: per step, the positions
    of the operands it takes out of the list (their product is appended at its end).
    Without ``optimize``: all of them, left to right."""
    if optimize is False or optimize is None or len(arrays) < 2:
        return [tuple(range(len(arrays)))] if len(arrays) > 1 else []
    stand_ins = [as_strided(np.empty(1, a.dtype), shape=a.shape, strides=(0,) * a.ndim)
                 for a in arrays]
    path, _ = np.einsum_path(",".join(terms) + "->" + output, *stand_ins,
                             optimize="greedy" if optimize is True else optimize)
    return [tuple(sorted(step)) for step in path[1:]]


def _sum_labels(a: ndarray, labels: str, drop: set, work) -> tuple:
    """``a`` summed over the axes of the labels in ``drop``."""
    axes = tuple(k for k, c in enumerate(labels) if c in drop)
    if not axes:
        return a, labels
    return reductions.sum_(a, axis=axes, dtype=work), \
        "".join(c for c in labels if c not in drop)


def _squeeze_label(a: ndarray, labels: str, c: str) -> tuple:
    k = labels.index(c)
    return a.reshape(a.shape[:k] + a.shape[k + 1:]), labels[:k] + labels[k + 1:]


def _contract(x, lx: str, y, ly: str, keep: set, work) -> tuple:
    """The product of two operands summed over the labels they share that nothing after
    needs; labels only one of them has and nothing after needs are summed first."""
    x, lx = _sum_labels(x, lx, set(lx) - set(ly) - keep, work)
    y, ly = _sum_labels(y, ly, set(ly) - set(lx) - keep, work)
    shared = [c for c in lx if c in ly]
    # a shared label summed over, of size 1 on one side (broadcast): the other side summed
    for c in [c for c in shared if c not in keep]:
        nx, ny = x.shape[lx.index(c)], y.shape[ly.index(c)]
        if nx != ny:
            if nx == 1:
                y, ly = _sum_labels(y, ly, {c}, work)
                x, lx = _squeeze_label(x, lx, c)
            else:
                x, lx = _sum_labels(x, lx, {c}, work)
                y, ly = _squeeze_label(y, ly, c)
    batch = [c for c in lx if c in ly and c in keep]
    summed = [c for c in lx if c in ly and c not in keep]
    left = [c for c in lx if c not in ly]
    right = [c for c in ly if c not in lx]

    def dims(a, labels, group):
        return tuple(a.shape[labels.index(c)] for c in group)
    L = int(np.prod(dims(x, lx, left), dtype=np.int64))
    Rn = int(np.prod(dims(y, ly, right), dtype=np.int64))
    if not summed or min(L, Rn) == 1:
        # no sum, or one side has no free labels (a matrix-vector shape): the broadcast
        # product is no larger than the larger operand, then summed over the shared labels
        order = batch + left + right + summed
        xs = _aligned(x, lx, order, set(right))
        ys = _aligned(y, ly, order, set(left))
        product = ufuncs.apply(np.multiply, xs, ys)
        return _sum_labels(product, "".join(order), set(summed), work)
    xm = x.transpose(tuple(lx.index(c) for c in batch + left + summed))
    ym = y.transpose(tuple(ly.index(c) for c in batch + summed + right))
    C = int(np.prod(dims(x, lx, summed), dtype=np.int64))
    xm = xm.reshape(dims(x, lx, batch) + (L, C))
    ym = ym.reshape(dims(y, ly, batch) + (C, Rn))
    product = products.matmul(xm, ym)
    shape = product.shape[:-2] + dims(x, lx, left) + dims(y, ly, right)
    return product.reshape(shape), "".join(batch + left + right)


def _aligned(a, labels: str, order: list, missing: set) -> ndarray:
    """``a`` with its axes in ``order``, an axis of 1 for each label of ``missing`` (the
    other operand's), for a broadcast product."""
    present = [c for c in order if c in labels]
    a = a.transpose(tuple(labels.index(c) for c in present))
    shape = tuple(1 if c in missing else a.shape[present.index(c)]
                  for c in order if c in labels or c in missing)
    return a.reshape(shape)
