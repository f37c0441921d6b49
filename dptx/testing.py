"""``cupy.testing``'s assertions for dptx arrays: numpy.testing's, each dptx argument read
back first (numpy's messages, numpy's tolerances), so that tests written against CuPy run
against dptx as they are."""
from __future__ import annotations

import functools

import numpy.testing as _npt

from .runtime.ndarray import ndarray

__all__ = ["assert_allclose", "assert_array_almost_equal", "assert_array_almost_equal_nulp",
           "assert_array_equal", "assert_array_less", "assert_array_list_equal",
           "assert_array_max_ulp"]


def _host(x):
    return x.get() if isinstance(x, ndarray) else x


def _on_host(assertion):
    @functools.wraps(assertion)
    def check(*args, **kwargs):
        return assertion(*[_host(a) for a in args], **{k: _host(v) for k, v in kwargs.items()})
    check.__doc__ = f"numpy.testing.{assertion.__name__} of dptx (or numpy) arrays."
    return check


assert_allclose = _on_host(_npt.assert_allclose)
assert_array_almost_equal = _on_host(_npt.assert_array_almost_equal)
assert_array_almost_equal_nulp = _on_host(_npt.assert_array_almost_equal_nulp)
assert_array_equal = _on_host(_npt.assert_array_equal)
assert_array_less = _on_host(_npt.assert_array_less)
assert_array_max_ulp = _on_host(_npt.assert_array_max_ulp)


def assert_array_list_equal(xlist, ylist, err_msg="", verbose=True) -> None:
    """cupy.testing.assert_array_list_equal: two lists of arrays, equal pairwise."""
    if len(xlist) != len(ylist):
        raise AssertionError(f"List size is different: {len(xlist)} != {len(ylist)}")
    for i, (x, y) in enumerate(zip(xlist, ylist)):
        _npt.assert_array_equal(_host(x), _host(y), err_msg=f"{err_msg} (item {i})",
                                verbose=verbose)
