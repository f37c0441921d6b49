"""The workers' memory pool recycles an array once nothing refers to it, and never while a
view of it is alive."""
import numpy as np

from graphs.worker_memory import MIN_BYTES, BytePool


def test_pool_recycles_free_arrays_only():
    pool = BytePool(limit=1 << 30)
    a = pool.empty(MIN_BYTES * 2)
    first = id(a.base)             # (holding the base itself would keep it busy)
    b = pool.empty(MIN_BYTES * 2)
    assert id(b.base) != first                    # a is still in use
    view = a[10:20]
    del a
    other = pool.empty(MIN_BYTES * 2)
    assert id(other.base) != first                # a view keeps it busy
    del view
    c = pool.empty(MIN_BYTES * 2 - 100)
    assert id(c.base) == first and c.size == MIN_BYTES * 2 - 100
    del other
    assert pool.empty(MIN_BYTES // 2).base is None      # small arrays come from numpy
    z = pool.zeros(MIN_BYTES * 3)
    assert not z.any()
    del b, c, z
    assert pool.held_bytes()[0] == 0


def test_pool_drops_free_memory_over_its_limit():
    pool = BytePool(limit=MIN_BYTES * 3)
    arrays = [pool.empty(MIN_BYTES * 2) for _ in range(4)]
    del arrays
    big = pool.empty(MIN_BYTES * 8)               # no free array fits: allocates, then trims
    used, free = pool.held_bytes()
    del big
    assert used == MIN_BYTES * 8 and free <= MIN_BYTES * 3
