/* dptx: a device-side stand-in for the C header of this name, for CUDA C compiled by NVRTC
   (which has no C library headers). */
#pragma once
#include <cuda/std/climits>
