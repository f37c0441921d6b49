/* dptx: a device-side stand-in for the C header of this name, for CUDA C compiled by NVRTC
   (which has no C library headers). */
#pragma once
#include <cuda/std/cmath>
/* The math functions (sinf, expf, ...) are device built-ins under NVRTC; the POSIX constants
   many CUDA sources use come from here. */
#ifndef M_PI
#define M_E        2.71828182845904523536
#define M_LOG2E    1.44269504088896340736
#define M_LOG10E   0.434294481903251827651
#define M_LN2      0.693147180559945309417
#define M_LN10     2.30258509299404568402
#define M_PI       3.14159265358979323846
#define M_PI_2     1.57079632679489661923
#define M_PI_4     0.785398163397448309616
#define M_1_PI     0.318309886183790671538
#define M_2_PI     0.636619772367581343076
#define M_2_SQRTPI 1.12837916709551257390
#define M_SQRT2    1.41421356237309504880
#define M_SQRT1_2  0.707106781186547524401
#endif
#ifndef INFINITY
#define INFINITY (__int_as_float(0x7f800000))
#endif
#ifndef NAN
#define NAN (__int_as_float(0x7fffffff))
#endif
#ifndef HUGE_VAL
#define HUGE_VAL (__longlong_as_double(0x7ff0000000000000LL))
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
