"""The access-footprint analysis (dptx/ptx/footprint.py) against real executions of every
kernel of the corpus, on block ranges of its grid:

- writes: every byte a range changes, in any buffer (arguments and module variables), lies
  in that range's write footprint;
- reads: running the range on inputs where every byte outside its read-or-write footprint
  is garbage (0xFF: NaN for floats, -1 for integers) writes exactly the same bytes as on
  the true inputs;
- every access: running the range with each buffer mapped only as the window the
  distributed runtime gives a chunk (the hull of its footprint), the CPU executor's bounds
  checks see every access, and none falls outside (FootprintViolation otherwise).

Launches run with threads=1: blocks in order in one native call, so that even the cases
marked non-deterministic (float atomics, atomicExch races) give the same bytes twice.
Each case prints the targets that came out whole and why, so imprecision stays visible.
"""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.device.launch_config import convert_scalar
from dptx.ptx.footprint import kernel_footprint
from dptx.corpus import CASES, source


def launch_inputs(kernel, args):
    """(sizes, scalars) as the distributed runtime passes them."""
    sizes, scalars = {}, {}
    for i, ((p, _), a) in enumerate(zip(kernel.function.param_layout(), args)):
        if isinstance(a, np.ndarray):
            sizes[("param", i)] = a.nbytes
        else:
            v = convert_scalar(p, i, a, kernel.name)
            scalars[i] = v if isinstance(v, bytes) else v.tobytes()
    for name, buf in cpu.module_state(kernel.module).items():
        sizes[("var", name)] = buf.nbytes
    return sizes, scalars


def block_ranges(grid):
    """A few uneven ranges of the grid's blocks; every block alone for small grids."""
    n = int(np.prod(grid))
    if n <= 6:
        return [(b, b + 1) for b in range(n)]
    cuts = sorted({0, max(1, n // 5), n // 2, min(n - 1, (3 * n) // 4 + 1), n})
    return list(zip(cuts, cuts[1:]))


def _buffers(kernel, args):
    """target -> a fresh copy of every buffer (arguments and module variables)."""
    out = {("param", i): a.copy() for i, a in enumerate(args) if isinstance(a, np.ndarray)}
    for name, buf in cpu.module_state(kernel.module).items():
        out[("var", name)] = buf.copy()
    return out


def _run(kernel, grid, block, args, buffers, b0, b1, shared_mem):
    call_args = [buffers[("param", i)] if isinstance(a, np.ndarray) else a
                 for i, a in enumerate(args)]
    variables = {t[1]: buf for t, buf in buffers.items() if t[0] == "var"}
    cpu.launch(kernel, grid, block, call_args, shared_mem=shared_mem, blocks=range(b0, b1),
               globals=variables, threads=1)


def _run_in_windows(kernel, grid, block, args, footprint, sizes, b0, b1, shared_mem):
    """Run the range with every buffer given as the window the runtime would give a chunk:
    an access outside it raises FootprintViolation in the executor."""
    from dptx.device.window import Window
    from graphs.launch import window_of

    def window(target, buf):
        access = footprint.get(target)
        lo, hi = window_of(access.reads if access else (), access.writes if access else (),
                           sizes[target])
        return Window(buf.view(np.uint8)[lo:hi].copy(), lo, sizes[target])
    buffers = _buffers(kernel, args)
    call_args = [window(("param", i), buffers[("param", i)]) if isinstance(a, np.ndarray) else a
                 for i, a in enumerate(args)]
    variables = {t[1]: window(t, buf) for t, buf in buffers.items() if t[0] == "var"}
    cpu.launch(kernel, grid, block, call_args, shared_mem=shared_mem, blocks=range(b0, b1),
               globals=variables, threads=1)


def _mask(intervals, nbytes):
    m = np.zeros(nbytes, bool)
    for lo, hi in intervals:
        m[lo:hi] = True
    return m


def check_against_execution(kernel, grid, block, args, shared_mem=0, ranges=None, label=""):
    """Evaluate the kernel's footprint on block ranges and check it against executions of
    each range (see the module docstring); return {target: reason} for whole targets."""
    grid = tuple(grid) + (1,) * (3 - len(grid))
    fp = kernel_footprint(kernel.module, kernel.function)
    sizes, scalars = launch_inputs(kernel, args)
    ranges = ranges or block_ranges(grid)
    explain = {}
    result = fp.evaluate(grid, block, scalars, ranges, sizes, explain=explain)
    for (b0, b1), footprint in zip(ranges, result):
        true_run = _buffers(kernel, args)
        before = {t: b.copy() for t, b in true_run.items()}
        _run(kernel, grid, block, args, true_run, b0, b1, shared_mem)
        for target, buf in true_run.items():
            access = footprint.get(target)
            writes = access.writes if access else ()
            changed = np.flatnonzero(buf.view(np.uint8) != before[target].view(np.uint8))
            outside = changed[~_mask(writes, sizes[target])[changed]]
            assert outside.size == 0, (
                f"{label} blocks {b0}..{b1}: {target} changed at bytes "
                f"{outside[:8].tolist()} outside its write footprint {writes}")
        _run_in_windows(kernel, grid, block, args, footprint, sizes, b0, b1, shared_mem)
        garbage_run = _buffers(kernel, args)
        for target, buf in garbage_run.items():
            access = footprint.get(target)
            keep = _mask(access.reads + access.writes if access else (), sizes[target])
            buf.view(np.uint8)[~keep] = 0xFF
        _run(kernel, grid, block, args, garbage_run, b0, b1, shared_mem)
        for target, buf in garbage_run.items():
            access = footprint.get(target)
            if not access or not access.writes:
                continue
            written = _mask(access.writes, sizes[target])
            got = buf.view(np.uint8)[written]
            want = true_run[target].view(np.uint8)[written]
            bad = np.flatnonzero(got != want)
            assert bad.size == 0, (
                f"{label} blocks {b0}..{b1}: {target} wrote different bytes when the "
                f"bytes outside the read footprint were garbage (first differing offsets "
                f"{np.flatnonzero(written)[bad[:8]].tolist()}); footprint {footprint}")
    return explain


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_footprint_against_execution(case):
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args = case.make_args(np.random.default_rng(7))
    whole = check_against_execution(kernel, case.grid, case.block, args, case.shared_mem,
                                    label=case.name)
    print(f"\n{case.name}: whole targets: " +
          (", ".join(f"{t}: {why}" for t, why in sorted(whole.items(), key=str)) or "none"))
