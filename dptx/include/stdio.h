/* dptx: a device-side stand-in for the C header of this name, for CUDA C compiled by NVRTC
   (which has no C library headers). */
#pragma once
#include <cuda/std/cstddef>
/* printf is a device built-in under NVRTC; files and streams are host-only. */
#ifndef EOF
#define EOF (-1)
#endif
