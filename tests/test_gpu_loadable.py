"""What GPU workers load (dptx.gpu.loadable, DESIGN.md point 10), checked without a GPU by the
ptxas of the CUDA release matching the driver: every corpus kernel, as a chunk runs it (the
block-offset rewrite), lowered to the newest PTX ISA version a CUDA 12.4 and a CUDA 13.0
driver load; and clear errors where a driver or a device cannot take a kernel."""
import re

import pytest

import dptx
from dptx.gpu import toolchain
from dptx.gpu.loadable import driver_for_ptx, max_ptx_version, ptx_for_device
from dptx.corpus import CASES, source
from tests.test_ptxas import assemble_all

ELECT = '''.version 9.5
.target sm_90
.address_size 64
.visible .entry elect_one(.param .u64 out)
{
  .reg .b32 %r<2>;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  elect.sync %r1|%p1, 0xffffffff;
  st.global.u32 [%rd1], %r1;
  ret;
}
'''


def test_driver_and_ptx_versions():
    """NVIDIA's table (cuda.bindings.utils): the release that first loads each PTX ISA."""
    assert max_ptx_version(12040) == (8, 4) and max_ptx_version(12060) == (8, 5)
    assert max_ptx_version(13000) == (9, 0) and max_ptx_version(11080) == (7, 8)
    assert driver_for_ptx((8, 4)) == 12040 and driver_for_ptx((9, 0)) == 13000
    with pytest.raises(dptx.DptxError, match="older than any"):
        max_ptx_version(100)


def test_version_lowered_only_as_far_as_needed():
    k = dptx.RawModule(r'''extern "C" __global__ void add1(float* x) { x[threadIdx.x] += 1; }''').get_function("add1")
    newest = k.module.version
    assert ptx_for_device(k, driver_version=12040, arch="sm_80").startswith(".version 8.4\n")
    assert ptx_for_device(k, driver_version=99990, arch="sm_80").startswith(f".version {newest}\n")
    text = ptx_for_device(k, driver_version=13000, arch="sm_90")
    assert ".param .u32 __dptx_block_offset" in text      # what a chunk runs: the sub-grid form


def test_what_a_driver_or_device_cannot_take_is_named():
    k = dptx.RawModule(ptx=ELECT).get_function("elect_one")
    assert ptx_for_device(k, driver_version=12000, arch="sm_90").startswith(".version 8.0\n")
    if toolchain.newest_ptxas("sm_90") is not None:
        with pytest.raises(dptx.PtxUnsupportedError,
                           match=r"elect\.sync.*needs PTX ISA 8\.0.*CUDA 12\.0 driver.*CUDA 11\.8"):
            ptx_for_device(k, driver_version=11080, arch="sm_90")
    with pytest.raises(dptx.PtxUnsupportedError, match=r"targets sm_90.*PTX ISA 7\.8.*CUDA 11\.8.*11\.7"):
        ptx_for_device(k, driver_version=11070, arch="sm_90")
    with pytest.raises(dptx.PtxUnsupportedError, match="compiled for sm_90; a sm_80 device cannot run it"):
        ptx_for_device(k, driver_version=13000, arch="sm_80")


MODULES = sorted({(c.file, tuple(c.options)) for c in CASES})
DRIVERS = ((12040, (12, 4)), (13000, (13, 0)))


def _assembler(release: tuple):
    """The ptxas of exactly that CUDA release, else the newest one that is at least as new
    (it checks every feature against the declared .version just the same)."""
    exact = toolchain.ptxas_for_release(*release)
    if exact is not None:
        return exact
    newer = [p for p in toolchain.installed() if p.version >= release]
    return newer[-1] if newer else None


@pytest.mark.parametrize("driver, release", DRIVERS, ids=["driver-12.4", "driver-13.0"])
@pytest.mark.parametrize("file, options", MODULES, ids=[f"{f}{'-' + '-'.join(o) if o else ''}"
                                                        for f, o in MODULES])
def test_corpus_loads_on_the_driver(file, options, driver, release, tmp_path):
    ptxas = _assembler(release)
    if ptxas is None:
        pytest.skip(f"no ptxas of CUDA {release[0]}.{release[1]} or newer installed")
    raw = dptx.RawModule(source(file), options=options)
    limit = max_ptx_version(driver)
    jobs = []
    for name in sorted({c.kernel for c in CASES if c.file == file and tuple(c.options) == options}):
        text = ptx_for_device(raw.get_function(name), driver_version=driver, arch="sm_80")
        version = tuple(int(x) for x in re.match(r"\.version (\d+)\.(\d+)", text).groups())
        assert version <= limit, (name, version)
        jobs.append((text, f"{name} (ptxas {ptxas.version_text})"))
    assemble_all(jobs, "sm_80", tmp_path, ptxas.path)


def test_ptx_for_device_is_dptx_gpu_api():
    """DESIGN.md point 10 names it dptx.gpu.ptx_for_device (issue 40)."""
    import dptx.gpu
    import dptx.gpu.loadable
    assert dptx.gpu.ptx_for_device is dptx.gpu.loadable.ptx_for_device
    assert "ptx_for_device" in dptx.gpu.__all__
    text = dptx.gpu.ptx_for_device(dptx.RawModule(ptx=ELECT).get_function("elect_one"),
                                   driver_version=12040, arch="sm_90")
    assert text.startswith(".version") and "elect_one" in text
