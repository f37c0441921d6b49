"""The merge rules of graphs.tasks on synthetic chunk results (no cluster needed)."""
import numpy as np
import pytest

from graphs.launch import segment_bounds, split_blocks
from graphs.tasks import dirty_pages, fill, htod, merge_segment

PAGE = 16


def chunk(base, writes):
    """A chunk result for slot 0: apply ``writes`` (index -> value) to a copy of base."""
    buf = base.copy()
    for i, v in writes.items():
        buf[i] = v
    return {0: dirty_pages([base], buf, PAGE)}


def test_dirty_pages_only_changed_pages():
    base = np.zeros(50, np.uint8)
    buf = base.copy()
    buf[3] = 1
    buf[49] = 2   # last, short page (48..49)
    pages, data = dirty_pages([base[:20], base[20:]], buf, PAGE)
    assert pages.tolist() == [0, 3]
    assert data.size == PAGE + 2 and data[3] == 1 and data[-1] == 2


def test_single_and_multiple_writers():
    base = np.arange(64, dtype=np.uint8)
    a = chunk(base, {0: 200, 17: 201})
    b = chunk(base, {1: 100, 40: 101})        # shares page 0 with a, other bytes
    merged = merge_segment(base, 0, 0, PAGE, None, a, b)
    expected = base.copy()
    expected[[0, 17, 1, 40]] = [200, 201, 100, 101]
    assert np.array_equal(merged, expected)
    assert merge_segment(base, 0, 0, PAGE, None) is base  # no writer: the same version


def test_segment_window():
    """A merge for the second segment only takes bytes inside it."""
    base = np.arange(64, dtype=np.uint8)
    a = chunk(base, {5: 1, 33: 2, 63: 3})
    merged = merge_segment(base[32:], 0, 32, PAGE, None, a)
    assert merged.tolist() == [32, 2] + list(range(34, 63)) + [3]


@pytest.mark.parametrize("op, ptx_type, dtype", [
    ("add", "u32", np.uint32), ("add", "f32", np.float32), ("add", "u64", np.uint64),
    ("min", "s32", np.int32), ("max", "u32", np.uint32), ("min", "f64", np.float64),
    ("and", "b32", np.uint32), ("or", "b64", np.uint64), ("xor", "b32", np.uint32)])
def test_reductions(op, ptx_type, dtype):
    rng = np.random.default_rng(0)
    base = rng.integers(0, 1000, 32).astype(dtype)
    contributions = [rng.integers(0, 1000, 32).astype(dtype) for _ in range(3)]
    results = []
    for c in contributions:
        if op == "add":
            new = base + c
        elif op in ("min", "max"):
            new = getattr(np, {"min": "minimum", "max": "maximum"}[op])(base, c)
        elif op == "and":
            new = base & c
        elif op == "or":
            new = base | c
        else:
            new = base ^ c
        raw = base.view(np.uint8)
        results.append({0: dirty_pages([raw], new.view(np.uint8), PAGE)})
    merged = merge_segment(base.view(np.uint8), 0, 0, PAGE, (op, ptx_type), *results).view(dtype)
    if op == "add":
        expected = base + sum(contributions)
    elif op == "min":
        expected = np.minimum.reduce([base] + contributions)
    elif op == "max":
        expected = np.maximum.reduce([base] + contributions)
    elif op == "and":
        expected = np.bitwise_and.reduce([base] + contributions)
    elif op == "or":
        expected = np.bitwise_or.reduce([base] + contributions)
    else:
        expected = np.bitwise_xor.reduce([base] + contributions)
    assert np.array_equal(merged, expected.astype(dtype))


def test_integer_add_wraps():
    base = np.array([0xFFFFFFF0], np.uint32)
    results = [{0: dirty_pages([base.view(np.uint8)], (base + np.uint32(10)).view(np.uint8), PAGE)}
               for _ in range(2)]
    merged = merge_segment(base.view(np.uint8), 0, 0, PAGE, ("add", "u32"), *results)
    assert merged.view(np.uint32)[0] == (0xFFFFFFF0 + 20) % 2**32


def test_memcpy_helpers_and_plans():
    data = np.arange(10, dtype=np.int16)
    assert np.array_equal(htod(data).view(np.int16), data)
    assert fill(7, b"\x01\x02").tolist() == [1, 2, 1, 2, 1, 2, 1]
    assert segment_bounds(10, 4) == [(0, 4), (4, 4), (8, 2)] and segment_bounds(0, 4) == [(0, 0)]
    assert split_blocks(10, 4) == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert split_blocks(3, 8) == [(0, 1), (1, 2), (2, 3)]
