"""The corpus through the cluster, launches split into at least 8 chunks, against the
in-process CPU executor: bitwise for deterministic kernels."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.corpus import CASES, check_outputs, source

# Cases with a struct passed by value need no special handling; printf output goes to the
# workers' stdout. Every case runs.


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_on_cluster(client, chunks8, case):
    raw = dptx.RawModule(source(case), options=case.options)
    kernel = raw.get_function(case.kernel)
    args = case.make_args(np.random.default_rng(99))
    local = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu.launch(kernel, case.grid, case.block, local, shared_mem=case.shared_mem)
    # a second module object: its own device state (module variables) on the cluster
    kernel2 = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    dev = [dptx.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel2(case.grid, case.block, dev, shared_mem=case.shared_mem)
    check_outputs(case, args, {i: d.get() for i, d in enumerate(dev)
                               if isinstance(d, dptx.ndarray)}, local, "cluster")
