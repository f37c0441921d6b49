// dptx's complex numbers for the array library's kernels (numpy's complex64 and complex128:
// two of the real type, the real part first). Small on purpose: libcu++'s <cuda/std/complex>
// costs NVRTC 1.6 s and 50 kB of PTX per kernel. Arithmetic as numpy's loops compute it
// (its complex division is Smith's), the functions by the textbook formulas numpy's npymath
// falls back to, to rounding.
#pragma once

namespace dptx {

template <typename T> struct complex {
    T re, im;
    typedef T value_type;
    __host__ __device__ complex() : re(0), im(0) {}
    __host__ __device__ complex(T r, T i = 0) : re(r), im(i) {}
    template <typename U> __host__ __device__ explicit complex(const complex<U>& z)
        : re((T)z.re), im((T)z.im) {}
    // (integers, bools, the other real type: converted as C converts them)
    template <typename U> __host__ __device__ complex(U r) : re((T)r), im(0) {}
    __host__ __device__ T real() const { return re; }
    __host__ __device__ T imag() const { return im; }
};

template <typename T> __device__ __forceinline__ complex<T> operator+(complex<T> a, complex<T> b) {
    return complex<T>(a.re + b.re, a.im + b.im);
}
template <typename T> __device__ __forceinline__ complex<T> operator-(complex<T> a, complex<T> b) {
    return complex<T>(a.re - b.re, a.im - b.im);
}
template <typename T> __device__ __forceinline__ complex<T> operator-(complex<T> a) {
    return complex<T>(-a.re, -a.im);
}
template <typename T> __device__ __forceinline__ complex<T> operator*(complex<T> a, complex<T> b) {
    return complex<T>(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
// numpy's complex division (Smith's method, its loops.c.src)
template <typename T> __device__ __forceinline__ complex<T> operator/(complex<T> a, complex<T> b) {
    const T abs_br = b.re < 0 ? -b.re : b.re, abs_bi = b.im < 0 ? -b.im : b.im;
    if (abs_br >= abs_bi) {
        if (abs_br == 0 && abs_bi == 0) return complex<T>(a.re / abs_br, a.im / abs_bi);
        const T rat = b.im / b.re, scl = (T)1.0 / (b.re + b.im * rat);
        return complex<T>((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
    }
    const T rat = b.re / b.im, scl = (T)1.0 / (b.im + b.re * rat);
    return complex<T>((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
// by a real number: each part (the functions below use these)
template <typename T> __device__ __forceinline__ complex<T> operator*(complex<T> a, T b) {
    return complex<T>(a.re * b, a.im * b);
}
template <typename T> __device__ __forceinline__ complex<T> operator/(complex<T> a, T b) {
    return complex<T>(a.re / b, a.im / b);
}
template <typename T> __device__ __forceinline__ bool operator==(complex<T> a, complex<T> b) {
    return a.re == b.re && a.im == b.im;
}
template <typename T> __device__ __forceinline__ bool operator!=(complex<T> a, complex<T> b) {
    return !(a == b);
}
template <typename T> __device__ __forceinline__ complex<T>& operator+=(complex<T>& a, complex<T> b) {
    return a = a + b;
}
template <typename T> __device__ __forceinline__ complex<T>& operator*=(complex<T>& a, complex<T> b) {
    return a = a * b;
}

template <typename T> __device__ __forceinline__ T abs(complex<T> z) { return hypot(z.re, z.im); }
template <typename T> __device__ __forceinline__ T arg(complex<T> z) { return atan2(z.im, z.re); }
template <typename T> __device__ __forceinline__ complex<T> conj(complex<T> z) {
    return complex<T>(z.re, -z.im);
}
template <typename T> __device__ __forceinline__ complex<T> exp(complex<T> z) {
    const T e = ::exp(z.re);
    if (z.im == 0) return complex<T>(e, z.im);
    return complex<T>(e * ::cos(z.im), e * ::sin(z.im));
}
template <typename T> __device__ __forceinline__ complex<T> log(complex<T> z) {
    return complex<T>(::log(hypot(z.re, z.im)), atan2(z.im, z.re));
}
template <typename T> __device__ __forceinline__ complex<T> log10(complex<T> z) {
    const complex<T> l = log(z);
    return complex<T>(l.re * (T)0.434294481903251827651128918916605082,
                      l.im * (T)0.434294481903251827651128918916605082);
}
// the principal root: branch cut along the negative reals, the sign of the imaginary part kept
template <typename T> __device__ __forceinline__ complex<T> sqrt(complex<T> z) {
    if (z.re == 0 && z.im == 0) return complex<T>(0, z.im);
    const T t = ::sqrt(((z.re < 0 ? -z.re : z.re) + hypot(z.re, z.im)) * (T)0.5);
    if (z.re >= 0) return complex<T>(t, z.im / (2 * t));
    return complex<T>((z.im < 0 ? -z.im : z.im) / (2 * t), copysign(t, z.im));
}
// numpy's npy_cpow: 1 for a zero exponent, 0 (or NaN) for a zero base, small integer
// exponents by repeated squaring, the rest through exp and log
template <typename T> __device__ __forceinline__ complex<T> pow(complex<T> a, complex<T> b) {
    if (b.re == 0 && b.im == 0) return complex<T>(1, 0);
    if (a.re == 0 && a.im == 0) {
        if (b.re > 0 && b.im == 0) return complex<T>(0, 0);
        const T nan = (T)0 / (T)0;
        return complex<T>(nan, nan);
    }
    if (b.im == 0 && b.re == (T)(int)b.re && b.re > -100 && b.re < 100) {
        int n = (int)b.re;
        if (n == 1) return a;
        if (n == 2) return a * a;
        if (n == 3) return a * a * a;
        if (n > -100 && n < 100) {
            int mask = 1, e = n < 0 ? -n : n;
            complex<T> p(1, 0), aa = a;
            while (true) {
                if (e & mask) p = p * aa;
                mask <<= 1;
                if (e < mask || mask <= 0) break;
                aa = aa * aa;
            }
            return n < 0 ? complex<T>(1, 0) / p : p;
        }
    }
    return exp(b * log(a));
}
template <typename T> __device__ __forceinline__ complex<T> sin(complex<T> z) {
    return complex<T>(::sin(z.re) * ::cosh(z.im), ::cos(z.re) * ::sinh(z.im));
}
template <typename T> __device__ __forceinline__ complex<T> cos(complex<T> z) {
    return complex<T>(::cos(z.re) * ::cosh(z.im), -::sin(z.re) * ::sinh(z.im));
}
template <typename T> __device__ __forceinline__ complex<T> sinh(complex<T> z) {
    return complex<T>(::sinh(z.re) * ::cos(z.im), ::cosh(z.re) * ::sin(z.im));
}
template <typename T> __device__ __forceinline__ complex<T> cosh(complex<T> z) {
    return complex<T>(::cosh(z.re) * ::cos(z.im), ::sinh(z.re) * ::sin(z.im));
}
template <typename T> __device__ __forceinline__ complex<T> tanh(complex<T> z) {
    // sinh 2x / (cosh 2x + cos 2y), sin 2y / (cosh 2x + cos 2y), without overflow for large x
    if ((z.re < 0 ? -z.re : z.re) > (T)20)
        return complex<T>(copysign((T)1, z.re), (T)4 * ::sin(z.im) * ::cos(z.im) * ::exp(-2 * (z.re < 0 ? -z.re : z.re)));
    const T d = ::cosh(2 * z.re) + ::cos(2 * z.im);
    return complex<T>(::sinh(2 * z.re) / d, ::sin(2 * z.im) / d);
}
template <typename T> __device__ __forceinline__ complex<T> tan(complex<T> z) {
    // tan z = -i tanh(i z)
    const complex<T> t = tanh(complex<T>(-z.im, z.re));
    return complex<T>(t.im, -t.re);
}
template <typename T> __device__ __forceinline__ complex<T> asinh(complex<T> z) {
    // log(z + sqrt(z^2 + 1)), in the half-plane of z's real part (the other by symmetry)
    const bool neg = z.re < 0;
    const complex<T> w = neg ? -z : z;
    const complex<T> r = log(w + sqrt(w * w + complex<T>(1, 0)));
    return neg ? -r : r;
}
template <typename T> __device__ __forceinline__ complex<T> asin(complex<T> z) {
    // asin z = -i asinh(i z)
    const complex<T> t = asinh(complex<T>(-z.im, z.re));
    return complex<T>(t.im, -t.re);
}
template <typename T> __device__ __forceinline__ complex<T> acos(complex<T> z) {
    const complex<T> s = asin(z);
    return complex<T>((T)1.570796326794896619231321691639751442 - s.re, -s.im);
}
template <typename T> __device__ __forceinline__ complex<T> acosh(complex<T> z) {
    // log(z + sqrt(z + 1) sqrt(z - 1))
    return log(z + sqrt(z + complex<T>(1, 0)) * sqrt(z - complex<T>(1, 0)));
}
template <typename T> __device__ __forceinline__ complex<T> atanh(complex<T> z) {
    // log((1 + z) / (1 - z)) / 2
    const complex<T> l = log((complex<T>(1, 0) + z) / (complex<T>(1, 0) - z));
    return complex<T>(l.re / 2, l.im / 2);
}
template <typename T> __device__ __forceinline__ complex<T> atan(complex<T> z) {
    // atan z = -i atanh(i z)
    const complex<T> t = atanh(complex<T>(-z.im, z.re));
    return complex<T>(t.im, -t.re);
}

}  // namespace dptx
