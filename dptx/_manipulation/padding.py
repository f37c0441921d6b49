"""numpy.pad on dptx arrays: numpy 2's ``_arraypad_impl`` step for step (its modes, their
order of operations, its errors), every fill a device copy or kernel between views of the
padded array: 'constant', 'edge', 'linear_ramp', 'maximum', 'minimum', 'mean', 'median',
'reflect' and 'symmetric' (even or odd), 'wrap', 'empty'; and numpy's legacy callable mode,
called from Python on each 1-D vector (a device view it changes in place), as numpy calls it."""
from __future__ import annotations

import itertools
import typing

import numpy as np

from .._math import rounding
from .._core import reductions, ufuncs
from .._statistics import statistics
from ..runtime.ndarray import asarray, empty
from .._creation.ranges import linspace
from .views import moveaxis

__all__ = ["pad"]


def _slice_at_axis(sl, axis):
    return (slice(None),) * axis + (sl,) + (...,)


def _view_roi(array, original_area_slice, axis):
    """The part of the padded array already filled along the axes before ``axis``."""
    axis += 1
    return array[(slice(None),) * axis + original_area_slice[axis:]]


def _pad_simple(array, pad_width, fill_value=None):
    new_shape = tuple(left + size + right
                      for size, (left, right) in zip(array.shape, pad_width))
    padded = empty(new_shape, array.dtype)
    if fill_value is not None:
        padded[...] = fill_value
    original_area_slice = tuple(slice(left, left + size)
                                for size, (left, right) in zip(array.shape, pad_width))
    padded[original_area_slice] = array
    return padded, original_area_slice


def _set_pad_area(padded, axis, width_pair, value_pair):
    padded[_slice_at_axis(slice(None, width_pair[0]), axis)] = value_pair[0]
    padded[_slice_at_axis(slice(padded.shape[axis] - width_pair[1], None), axis)] = \
        value_pair[1]


def _get_edges(padded, axis, width_pair):
    left_index = width_pair[0]
    left_edge = padded[_slice_at_axis(slice(left_index, left_index + 1), axis)]
    right_index = padded.shape[axis] - width_pair[1]
    right_edge = padded[_slice_at_axis(slice(right_index - 1, right_index), axis)]
    return left_edge, right_edge


def _get_linear_ramps(padded, axis, width_pair, end_value_pair):
    edge_pair = _get_edges(padded, axis, width_pair)
    left_ramp, right_ramp = (
        linspace(end_value, edge.squeeze(axis), width, endpoint=False, dtype=padded.dtype,
                 axis=axis)
        for end_value, edge, width in zip(end_value_pair, edge_pair, width_pair))
    right_ramp = right_ramp[_slice_at_axis(slice(None, None, -1), axis)]
    return left_ramp, right_ramp


_STATS = {"maximum": reductions.max_, "minimum": reductions.min_, "mean": reductions.mean,
          "median": statistics.median}


def _get_stats(padded, axis, width_pair, length_pair, mode):
    stat_func = _STATS[mode]
    left_index = width_pair[0]
    right_index = padded.shape[axis] - width_pair[1]
    max_length = right_index - left_index
    left_length, right_length = length_pair
    if left_length is None or max_length < left_length:
        left_length = max_length
    if right_length is None or max_length < right_length:
        right_length = max_length
    if (left_length == 0 or right_length == 0) and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")

    def stat(sl):
        value = stat_func(padded[_slice_at_axis(sl, axis)], axis=axis, keepdims=True)
        # numpy rounds a mean (median) of integers half to even before it is written back
        return rounding.around(value) if padded.dtype.kind in "iu" else value

    left_stat = stat(slice(left_index, left_index + left_length))
    if left_length == right_length == max_length:
        return left_stat, left_stat
    return left_stat, stat(slice(right_index - right_length, right_index))


def _set_reflect_both(padded, axis, width_pair, method, original_period, include_edge=False):
    left_pad, right_pad = width_pair
    old_length = padded.shape[axis] - right_pad - left_pad
    if include_edge:
        old_length = old_length // original_period * original_period
        edge_offset = 1
    else:
        old_length = ((old_length - 1) // (original_period - 1) * (original_period - 1) + 1)
        edge_offset = 0
        old_length -= 1
    if left_pad > 0:
        chunk_length = min(old_length, left_pad)
        stop = left_pad - edge_offset
        start = stop + chunk_length
        left_chunk = padded[_slice_at_axis(slice(start, stop, -1), axis)]
        if method == "odd":
            edge = padded[_slice_at_axis(slice(left_pad, left_pad + 1), axis)]
            left_chunk = ufuncs.apply(np.subtract, ufuncs.apply(np.multiply, 2, edge),
                                      left_chunk)
        padded[_slice_at_axis(slice(left_pad - chunk_length, left_pad), axis)] = left_chunk
        left_pad -= chunk_length
    if right_pad > 0:
        chunk_length = min(old_length, right_pad)
        start = -right_pad + edge_offset - 2
        stop = start - chunk_length
        right_chunk = padded[_slice_at_axis(slice(start, stop, -1), axis)]
        if method == "odd":
            edge = padded[_slice_at_axis(slice(-right_pad - 1, -right_pad), axis)]
            right_chunk = ufuncs.apply(np.subtract, ufuncs.apply(np.multiply, 2, edge),
                                       right_chunk)
        start = padded.shape[axis] - right_pad
        padded[_slice_at_axis(slice(start, start + chunk_length), axis)] = right_chunk
        right_pad -= chunk_length
    return left_pad, right_pad


def _set_wrap_both(padded, axis, width_pair, original_period):
    left_pad, right_pad = width_pair
    period = padded.shape[axis] - right_pad - left_pad
    period = period // original_period * original_period
    new_left_pad = new_right_pad = 0
    if left_pad > 0:
        slice_end = left_pad + period
        slice_start = slice_end - min(period, left_pad)
        right_chunk = padded[_slice_at_axis(slice(slice_start, slice_end), axis)]
        if left_pad > period:
            pad_area = _slice_at_axis(slice(left_pad - period, left_pad), axis)
            new_left_pad = left_pad - period
        else:
            pad_area = _slice_at_axis(slice(None, left_pad), axis)
        padded[pad_area] = right_chunk
    if right_pad > 0:
        slice_start = -right_pad - period
        slice_end = slice_start + min(period, right_pad)
        left_chunk = padded[_slice_at_axis(slice(slice_start, slice_end), axis)]
        if right_pad > period:
            pad_area = _slice_at_axis(slice(-right_pad, -right_pad + period), axis)
            new_right_pad = right_pad - period
        else:
            pad_area = _slice_at_axis(slice(-right_pad, None), axis)
        padded[pad_area] = left_chunk
    return new_left_pad, new_right_pad


def _as_pairs(x, ndim, as_index=False):
    """numpy's ``_as_pairs``: ``x`` as a (before, after) pair per axis: numpy scalars from
    one or two values, Python numbers otherwise (the types numpy's linear ramps then use)."""
    if x is None:
        return ((None, None),) * ndim
    x = np.array(x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3:
        if x.size == 1:
            x = x.ravel()
            if as_index and x < 0:
                raise ValueError("index can't contain negative values")
            return ((x[0], x[0]),) * ndim
        if x.size == 2 and x.shape != (2, 1):
            x = x.ravel()
            if as_index and (x[0] < 0 or x[1] < 0):
                raise ValueError("index can't contain negative values")
            return ((x[0], x[1]),) * ndim
    if as_index and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


_ALLOWED = {"empty": [], "edge": [], "wrap": [], "constant": ["constant_values"],
            "linear_ramp": ["end_values"], "maximum": ["stat_length"],
            "mean": ["stat_length"], "median": ["stat_length"], "minimum": ["stat_length"],
            "reflect": ["reflect_type"], "symmetric": ["reflect_type"]}


def pad(array, pad_width, mode="constant", **kwargs):
    """numpy.pad: ``array`` grown by ``pad_width`` along each axis, filled as ``mode`` says."""
    array = asarray(array)
    if isinstance(pad_width, dict):
        seq = [(0, 0)] * array.ndim
        for axis, width in pad_width.items():
            match width:
                case int(both):
                    seq[axis] = both, both
                case tuple((int(before), int(after))):
                    seq[axis] = before, after
                case _ as invalid:
                    typing.assert_never(invalid)
        pad_width = seq
    pad_width = np.asarray(pad_width)
    if not pad_width.dtype.kind == "i":
        raise TypeError("`pad_width` must be of integral type.")
    pad_width = _as_pairs(pad_width, array.ndim, as_index=True)
    if callable(mode):
        # numpy's legacy form: zero padding, then ``mode(vector, pad_width[axis], axis,
        # kwargs)`` on every 1-D vector along each axis in turn, changing it in place (here
        # a device view: its writes are launches), one call per vector from Python
        padded, _ = _pad_simple(array, pad_width, fill_value=0)
        for axis in range(padded.ndim):
            view = moveaxis(padded, axis, -1)
            for index in itertools.product(*(range(n) for n in view.shape[:-1])):
                mode(view[index + (Ellipsis,)], pad_width[axis], axis, kwargs)
        return padded
    try:
        unsupported = set(kwargs) - set(_ALLOWED[mode])
    except (KeyError, TypeError):
        raise ValueError(f"mode '{mode}' is not supported") from None
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")

    padded, original_area_slice = _pad_simple(array, pad_width)
    axes = range(padded.ndim)
    if mode == "constant":
        values = _as_pairs(kwargs.get("constant_values", 0), padded.ndim)
        for axis, width_pair, value_pair in zip(axes, pad_width, values):
            _set_pad_area(_view_roi(padded, original_area_slice, axis), axis, width_pair,
                          value_pair)
    elif mode == "empty":
        pass
    elif array.size == 0:
        for axis, width_pair in zip(axes, pad_width):
            if array.shape[axis] == 0 and any(width_pair):
                raise ValueError(f"can't extend empty axis {axis} using modes other than "
                                 f"'constant' or 'empty'")
    elif mode == "edge":
        for axis, width_pair in zip(axes, pad_width):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair, _get_edges(roi, axis, width_pair))
    elif mode == "linear_ramp":
        end_values = _as_pairs(kwargs.get("end_values", 0), padded.ndim)
        for axis, width_pair, value_pair in zip(axes, pad_width, end_values):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair,
                          _get_linear_ramps(roi, axis, width_pair, value_pair))
    elif mode in _STATS:
        length = _as_pairs(kwargs.get("stat_length"), padded.ndim, as_index=True)
        for axis, width_pair, length_pair in zip(axes, pad_width, length):
            roi = _view_roi(padded, original_area_slice, axis)
            _set_pad_area(roi, axis, width_pair,
                          _get_stats(roi, axis, width_pair, length_pair, mode))
    elif mode in ("reflect", "symmetric"):
        method = kwargs.get("reflect_type", "even")
        include_edge = mode == "symmetric"
        for axis, (left_index, right_index) in zip(axes, pad_width):
            if array.shape[axis] == 1 and (left_index > 0 or right_index > 0):
                edge_pair = _get_edges(padded, axis, (left_index, right_index))
                _set_pad_area(padded, axis, (left_index, right_index), edge_pair)
                continue
            roi = _view_roi(padded, original_area_slice, axis)
            while left_index > 0 or right_index > 0:
                left_index, right_index = _set_reflect_both(
                    roi, axis, (left_index, right_index), method, array.shape[axis],
                    include_edge)
    elif mode == "wrap":
        for axis, (left_index, right_index) in zip(axes, pad_width):
            roi = _view_roi(padded, original_area_slice, axis)
            original_period = padded.shape[axis] - right_index - left_index
            while left_index > 0 or right_index > 0:
                left_index, right_index = _set_wrap_both(
                    roi, axis, (left_index, right_index), original_period)
    return padded
