"""Indexing beyond numpy's basic rules, on the devices, with numpy's results, shapes and
errors: a boolean mask of the array's shape (``a[mask]``, ``a[mask] = scalar``: kernels of
their own), integer arrays (``a[idx]``, ``m[rows, cols]``, ``m[:, idx]``, ``a[idx] = value``,
``take``) and masks of fewer dimensions or with other indices (``x[x[:, 0] > 0]``,
``m[:, mask]``: numpy's rule, the integer arrays of the mask's ``nonzero()``). Where an
assignment may name a position twice, the last value lands, as numpy's (a claim per
position by atomic max, then the winners write).

An integer-array index is done in two steps. The basic part of the key (slices, integers,
``None``, ``...``) makes a view, with a full slice where each index array stands; then one
generated kernel walks the result, reading (or writing) the view's bytes at the positions the
index arrays give. numpy's placement rule decides the result's shape: the broadcast shape of
the index arrays replaces the indexed axes where the advanced indices (the arrays and any
integers) are next to each other in the key, and comes first otherwise.

Indices from the host are checked at once (numpy's IndexError). Indices already on the
devices wrap around modulo the axis length, as CuPy documents for its integer-array indexing:
checking them would need a wait, and a device-side assert would leave a GPU worker's CUDA
context unusable (the kernel runs on CPU and GPU workers alike).
"""
from __future__ import annotations

import numpy as np

from .._core import outputs, selection, ufuncs
from ..runtime.ndarray import _axes, asarray, empty, ndarray, zeros
from .._core.elementwise import ElementwiseKernel, KernelCache
from ..errors import DptxError

_kernels = KernelCache()


# -- what a key holds -------------------------------------------------------------------------
def _is_index_array(k) -> bool:
    """An item numpy indexes by advanced rules: a list, a tuple inside the key, or an array
    of at least one dimension (a 0-d integer array is an integer to numpy)."""
    if isinstance(k, (list, tuple)):
        return True
    if isinstance(k, (np.ndarray, ndarray)):
        return k.ndim > 0       # (a 0-d boolean is a boolean scalar: dptx.runtime.ndarray's basic rule)
    return False


def handles(key) -> bool:
    """Whether ``key`` needs this module (else it is basic indexing, or an error there)."""
    items = key if isinstance(key, tuple) else (key,)
    return any(_is_index_array(k) for k in items)


def _as_index(k):
    """A list or nested tuple as the numpy array numpy would make of it (an empty one is an
    integer index); arrays and the basic items as they are."""
    if isinstance(k, (list, tuple)):
        arr = np.asarray(k)
        return arr.astype(np.intp) if arr.size == 0 and arr.dtype.kind == "f" else arr
    if isinstance(k, (bool, np.bool_)):
        return np.asarray(k)    # (a 0-d mask: refused below with index arrays)
    return k


def _is_mask(k) -> bool:
    return isinstance(k, (np.ndarray, ndarray)) and k.dtype == np.bool_


def _whole_mask(a: ndarray, items: list):
    """The mask, as a dptx array, where the key is one boolean mask of ``a``'s whole shape
    (selected and assigned by kernels of their own); else None."""
    if len(items) == 1 and _is_mask(items[0]) and items[0].shape == a.shape and a.ndim:
        return asarray(items[0]) if isinstance(items[0], np.ndarray) else items[0]
    return None


def _key_items(key) -> list:
    return [_as_index(k) for k in (key if isinstance(key, tuple) else (key,))]


def _items(a: ndarray, items: list) -> tuple:
    """The key's items (``_key_items``), a boolean mask replaced by the integer arrays of its
    ``nonzero()`` (numpy's rule: ``m[mask]`` with a mask of m's first axes selects rows,
    ``m[:, mask]`` columns, ``a[mask, 2]``...), and whether every index array came from a
    mask (their positions are then distinct: an array of values may be assigned through
    them)."""
    if not any(_is_mask(k) for k in items):
        return items, False
    consumed = sum(k.ndim if _is_mask(k) else 0 if k is None or k is Ellipsis else 1
                   for k in items)
    out, axis = [], 0
    for k in items:
        if k is Ellipsis:
            axis += max(a.ndim - consumed, 0)
        elif _is_mask(k):
            if k.ndim == 0:
                raise DptxError("a boolean scalar in a key with index arrays or masks "
                                "(a[idx, True]) is not supported")
            if axis + k.ndim > a.ndim:
                raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, "
                                 f"but {consumed} were indexed")
            for d in range(k.ndim):
                if k.shape[d] != a.shape[axis + d]:
                    raise IndexError(
                        f"boolean index did not match indexed array along axis {axis + d}; "
                        f"size of axis is {a.shape[axis + d]} but size of corresponding "
                        f"boolean axis is {k.shape[d]}")
            # (on the devices: one wait for the count, as a[mask] has)
            out.extend(np.nonzero(k) if isinstance(k, np.ndarray) else selection.nonzero(k))
            axis += k.ndim
            continue
        elif k is not None:
            axis += 1
        out.append(k)
    from_masks = not any(_is_index_array(k) and not _is_mask(k) for k in items)
    return out, from_masks


# -- the plan of an integer-array index --------------------------------------------------------
class _Plan:
    """The view the basic part of the key makes, the axes of that view the index arrays
    index, the index arrays (int64, broadcast to one shape, on the devices) and where numpy
    places their shape in the result."""

    def __init__(self, a: ndarray, items: list):
        if sum(1 for k in items if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        consumed = sum(1 for k in items if k is not None and k is not Ellipsis)
        if consumed > a.ndim:
            raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, "
                             f"but {consumed} were indexed")
        if not any(k is Ellipsis for k in items):
            items = items + [Ellipsis]
        view_key, axes, arrays, source_axes = [], [], [], []
        advanced_at = []            # positions in the key of arrays and integers
        v_dim = a_dim = 0           # dimensions of the view and of ``a`` so far
        for pos, k in enumerate(items):
            if k is Ellipsis:
                n = a.ndim - consumed
                view_key.append(k)
                v_dim += n
                a_dim += n
            elif k is None:
                view_key.append(k)
                v_dim += 1
            elif isinstance(k, slice):
                view_key.append(k)
                v_dim += 1
                a_dim += 1
            elif isinstance(k, (np.ndarray, ndarray)):
                if k.dtype.kind not in "iu":
                    raise IndexError("arrays used as indices must be of integer (or boolean) "
                                     "type")
                view_key.append(slice(None))
                axes.append(v_dim)
                arrays.append(k)
                source_axes.append(a_dim)
                advanced_at.append(pos)
                v_dim += 1
                a_dim += 1
            else:                   # an integer: basic in the view, advanced for placement
                view_key.append(k)
                advanced_at.append(pos)
                a_dim += 1
        self.view = a[tuple(view_key)]
        self.axes = axes
        try:
            self.shape = tuple(np.broadcast_shapes(*[k.shape for k in arrays]))
        except ValueError:
            shapes = " ".join(str(k.shape) for k in arrays)
            raise IndexError(f"shape mismatch: indexing arrays could not be broadcast "
                             f"together with shapes {shapes}") from None
        adjacent = advanced_at == list(range(advanced_at[0], advanced_at[0] + len(advanced_at)))
        # where the broadcast shape goes: at the first advanced index's place, or first
        self.at = _view_dims_before(items, advanced_at[0], a.ndim - consumed) if adjacent else 0
        for k, ax, src in zip(arrays, axes, source_axes):
            if isinstance(k, ndarray) and self.view.shape[ax] == 0 and \
                    int(np.prod(self.shape, dtype=np.int64)):
                # every index is out of bounds there (and wrapping would divide by zero)
                raise IndexError(f"index 0 is out of bounds for axis {src} with size 0")
        self.indices = [self._device_index(k, self.view.shape[ax], src)
                        for k, ax, src in zip(arrays, axes, source_axes)]
        self.rest = [d for d in range(self.view.ndim) if d not in axes]

    def _device_index(self, k, n: int, axis: int) -> ndarray:
        """``k`` as an int64 device array of the broadcast shape; a host one checked here."""
        if isinstance(k, np.ndarray):
            bad = (k < -n) | (k >= n)
            if bad.any():
                raise IndexError(f"index {k[bad].flat[0]} is out of bounds for axis {axis} "
                                 f"with size {n}")
            return asarray(np.ascontiguousarray(np.broadcast_to(k, self.shape), np.int64))
        if k.dtype == np.int64 and k.shape == self.shape and k._contiguous:
            return k
        out = empty(self.shape, np.int64)
        ufuncs.assign(out, k)       # converted and broadcast on the devices
        return out

    @property
    def gathered_shape(self) -> tuple:
        """The shape the kernel walks: the index arrays' shape, then the view's other axes."""
        return self.shape + tuple(self.view.shape[d] for d in self.rest)

    def result_order(self, result: ndarray) -> ndarray:
        """``result`` (in the gathered order) with the index shape moved to numpy's place."""
        if self.at == 0:
            return result
        k = len(self.shape)
        before = list(range(k, k + self.at))
        perm = before + list(range(k)) + list(range(k + self.at, result.ndim))
        return result.transpose(perm)


def _view_dims_before(items: list, stop: int, ellipsis_dims: int) -> int:
    """How many dimensions of the view the key's items before ``stop`` make."""
    n = 0
    for k in items[:stop]:
        if k is Ellipsis:
            n += ellipsis_dims
        elif k is None or isinstance(k, slice):
            n += 1
    return n


def _kernel(dtype: np.dtype, arrays: int, rest: int, mode: str) -> ElementwiseKernel:
    """The gather (``z = w[o]``) or scatter (``w[o] = v``) of ``arrays`` index arrays over a
    view with ``rest`` other axes, ``o`` the element's offset in the view's span; "claim":
    ``c[o] = max(c[o], i + 1)`` (``dtype`` the claims' unsigned type), "scatter claimed": the
    scatter by the element whose claim won."""
    def build():
        T = str(dtype)
        params = ", ".join([f"raw int64 j{k}, int64 n{k}, int64 s{k}" for k in range(arrays)] +
                           [f"int64 m{d}, int64 t{d}" for d in range(rest)] +
                           ["int64 base", "int64 inner"])
        lines = ["long long r = i % inner, b = i / inner, o = base;"]
        for d in reversed(range(rest)):
            lines.append(f"o += (r % m{d}) * t{d}; r /= m{d};")
        for k in range(arrays):
            # CuPy's wrap-around (host indices were checked; n > 0 where anything is read)
            lines.append(f"long long index{k} = j{k}[b] % n{k}; if (index{k} < 0) "
                         f"index{k} += n{k};")
            lines.append(f"o += index{k} * s{k};")
        if mode == "scatter":
            lines.append("w[o] = v[i];")
            return ElementwiseKernel(f"{params}, raw {T} v", f"raw {T} w", " ".join(lines),
                                     f"dptx_scatter_{arrays}_{rest}")
        if mode == "claim":
            # (unsigned: CUDA's atomicMax of 32 and 64 bits; the runtime combines the chunks'
            # claims by max, as it does any reduction atomic)
            unsigned = "unsigned int" if T == "uint32" else "unsigned long long"
            lines.append(f"atomicMax(&c[o], ({unsigned})(i + 1));")
            return ElementwiseKernel(params, f"raw {T} c", " ".join(lines),
                                     f"dptx_claim_{arrays}_{rest}")
        if mode == "scatter claimed":
            lines.append("if (c[o] == i + 1) w[o] = v[i];")
            return ElementwiseKernel(f"{params}, raw C c, raw {T} v", f"raw {T} w",
                                     " ".join(lines), f"dptx_scatter_claimed_{arrays}_{rest}")
        lines.append("z = w[o];")
        return ElementwiseKernel(f"raw {T} w, {params}", f"{T} z", " ".join(lines),
                                 f"dptx_gather_{arrays}_{rest}")
    return _kernels.get(("take", str(dtype), arrays, rest, mode), build)


def _arguments(plan: _Plan) -> tuple:
    """(the view's span, the kernel's index and stride arguments)."""
    view = plan.view
    span, base = view._span()
    strides = [s // view.itemsize for s in view.strides]
    args = []
    for j, ax in zip(plan.indices, plan.axes):
        args += [j, np.int64(view.shape[ax]), np.int64(strides[ax])]
    for d in plan.rest:
        args += [np.int64(view.shape[d]), np.int64(strides[d])]
    inner = int(np.prod([view.shape[d] for d in plan.rest], dtype=np.int64))
    return span, args + [np.int64(base), np.int64(max(inner, 1))]


# -- the entry points dptx.runtime.ndarray calls -----------------------------------------------
def getitem(a: ndarray, key) -> ndarray:
    items = _key_items(key)
    mask = _whole_mask(a, items)
    if mask is not None:
        return selection.mask_select(a, mask)
    items, _ = _items(a, items)
    plan = _Plan(a, items)
    out = empty(plan.gathered_shape, a.dtype)
    if out.size:
        span, args = _arguments(plan)
        _kernel(a.dtype, len(plan.indices), len(plan.rest), "gather")(span, *args, out)
    result = plan.result_order(out)
    return result if result._contiguous else result.copy()


def setitem(a: ndarray, key, value) -> None:
    items = _key_items(key)
    mask = _whole_mask(a, items)
    scalar = not isinstance(value, ndarray) and np.ndim(value) == 0
    if mask is not None and (scalar or isinstance(value, ndarray) and value.size == 1):
        # (a kernel of its own: no wait for the count)
        ufuncs.mask_assign(a, mask, value.get().reshape(())[()]
                           if isinstance(value, ndarray) else value)
        return
    items, from_masks = _items(a, items)
    plan = _Plan(a, items)
    shape = plan.gathered_shape
    if not int(np.prod(shape, dtype=np.int64)):
        return
    # Where positions may repeat (an index on the devices, or a host one with repeats) and
    # the values differ, numpy's result is the last value for each position: each element
    # first claims its position with an atomic max of its place in numpy's order, then only
    # the claim's winner writes.
    claimed = not scalar and not from_masks and not _distinct_host_positions(plan, items)
    # the values in the gathered order: a scalar broadcast, or the value broadcast to numpy's
    # result shape and laid out as the kernel walks
    values = empty(shape, a.dtype)
    target = plan.result_order(values)
    if scalar:
        values.fill(np.array(value, dtype=a.dtype)[()])   # numpy's conversion and errors
    else:
        target[...] = value if isinstance(value, ndarray) else np.asarray(value)
    span, args = _arguments(plan)
    size = int(np.prod(shape, dtype=np.int64))
    if not claimed:
        _kernel(a.dtype, len(plan.indices), len(plan.rest), "scatter")(
            *args, values.reshape(-1), span, size=size)
        return
    claim_type = np.dtype(np.uint64 if size >= np.iinfo(np.uint32).max else np.uint32)
    claims = zeros(span.shape, claim_type)     # per element of the span: 1 + its winner
    _kernel(claim_type, len(plan.indices), len(plan.rest), "claim")(*args, claims, size=size)
    _kernel(a.dtype, len(plan.indices), len(plan.rest), "scatter claimed")(
        *args, claims, values.reshape(-1), span, size=size)


def _distinct_host_positions(plan: _Plan, items: list) -> bool:
    """Whether every index array came from the host and together they name each position of
    the indexed axes at most once."""
    host = [k for k in items if isinstance(k, np.ndarray)]
    if len(host) != len(plan.indices) or any(isinstance(k, ndarray) for k in items
                                             if _is_index_array(k)):
        return False
    lengths = [plan.view.shape[ax] for ax in plan.axes]
    wrapped = [np.broadcast_to(np.where(k < 0, k + n, k), plan.shape).ravel()
               for k, n in zip(host, lengths)]
    flat = np.ravel_multi_index(wrapped, lengths) if wrapped else np.zeros(0, np.int64)
    return np.unique(flat).size == flat.size


def take(a, indices, axis=None, out=None, mode="raise"):
    """numpy.take: ``a.ravel()[indices]`` without an axis, else the index along ``axis``."""
    if mode != "raise":
        raise DptxError(f"take(mode={mode!r}) is not supported: mode='raise' (numpy's default)")
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    axis = _axes((axis,), a.ndim)[0]
    idx = _as_index(indices)
    if not isinstance(idx, (np.ndarray, ndarray)):
        idx = np.asarray(idx)
    if idx.ndim == 0:
        result = a[(slice(None),) * axis + (int(idx),)]
        result = result.copy()
    else:
        result = getitem(a, (slice(None),) * axis + (idx,))
    if out is not None:
        # numpy's rule for take is the other way round: out's type must cast safely to a's
        outputs.check(out, result.shape, out.dtype, "take")
        if not np.can_cast(out.dtype, a.dtype, "safe"):
            raise TypeError(f"Cannot cast array data from {out.dtype!r} to {a.dtype!r} "
                            f"according to the rule 'safe'")
        return outputs.store(out, result, "take")
    return result


def put(a, ind, v, mode="raise") -> None:
    """numpy.put: ``a.flat[ind] = v`` (v repeated to the length of ind), numpy's modes, and
    where a position repeats the last value, as numpy (the winners are picked on the host
    from the indices; indices on the devices are read back for it)."""
    if not isinstance(a, ndarray):
        raise TypeError(f"put() needs a dptx array, not {type(a).__name__}")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    flat = np.asarray(ind.get() if isinstance(ind, ndarray) else ind).reshape(-1)
    if flat.size == 0 or a.size == 0:
        if flat.size and mode == "raise":
            raise IndexError("cannot replace elements of an empty array")
        return
    flat = flat.astype(np.int64, casting="same_kind")
    n = a.size
    if mode == "raise":
        if np.any((flat < -n) | (flat >= n)):
            bad = int(flat[(flat < -n) | (flat >= n)][0])
            raise IndexError(f"index {bad} is out of bounds for axis 0 with size {n}")
        flat = np.where(flat < 0, flat + n, flat)
    elif mode == "wrap":
        flat = flat % n
    else:
        flat = np.clip(flat, 0, n - 1)
    # the last write to each position wins, as in numpy's loop
    _, last = np.unique(flat[::-1], return_index=True)
    keep = np.sort(flat.size - 1 - last)
    if isinstance(v, ndarray) or np.ndim(v):
        values = asarray(v).reshape(-1)
        if values.size == 0:
            return
        # v repeated to len(ind), then the kept ones: a gather with a host index
        values = take(values, keep % values.size)
    else:
        values = np.array(v, dtype=a.dtype)[()]        # numpy's conversion and errors
    a[np.unravel_index(flat[keep], a.shape)] = values
