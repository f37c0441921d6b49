"""``dptx.random``: random arrays made on the devices, as ``cupy.random``'s legacy functions
(``seed``, ``rand``, ``randn``, ``random``, ``uniform``, ``normal``, ``randint``,
``permutation``, ``shuffle``, ``choice``) and a ``RandomState`` with the same methods.

The generator is Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
SC 2011; the family cuRAND and CuPy use): counter-based, so element i of a call is a pure
function of (seed, call number, i). However a launch is cut into chunks and whichever worker
runs them, the same seed gives the same array, bit for bit. Each call takes the next call
number. The values are not numpy's (a different generator, as CuPy's are not either):

- uniform [0, 1): float32 from a 32-bit word as (w >> 8) * 2**-24; float64 from two words as
  numpy builds a double, ((a >> 5) * 2**26 + (b >> 6)) * 2**-53;
- normal: Box-Muller on such uniforms (1 - u for the logarithm, never 0);
- integers in [low, high): Lemire's multiply-shift with rejection (unbiased, as numpy's),
  retrying with further counters of the same element in the rare case a block of four
  words is all rejected; ranges up to 2**32.
"""
from __future__ import annotations

import operator
import threading

import numpy as np

from .._indexing import indexing
from .._core import scan, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import asarray, empty, ndarray
from .._core.elementwise import KernelCache
from ..errors import DptxError
from ..runtime.module import RawModule
from .._creation.ranges import arange

_SOURCE = r"""
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
// Philox4x32-10 of counter c under key (k0, k1), in place
__device__ __forceinline__ void philox(unsigned int c[4], unsigned int k0, unsigned int k1) {
    #pragma unroll
    for (int r = 0; r < 10; r++) {
        const unsigned int hi0 = __umulhi(PHILOX_M0, c[0]), lo0 = PHILOX_M0 * c[0];
        const unsigned int hi1 = __umulhi(PHILOX_M1, c[2]), lo1 = PHILOX_M1 * c[2];
        c[0] = hi1 ^ c[1] ^ k0; c[1] = lo1; c[2] = hi0 ^ c[3] ^ k1; c[3] = lo0;
        k0 += PHILOX_W0; k1 += PHILOX_W1;
    }
}
// the four words of block b of call (s0, s1); ``retry`` > 0 for an element's later draws
__device__ __forceinline__ void words(unsigned int w[4], long long b, unsigned int retry,
                                      unsigned int k0, unsigned int k1, unsigned int s0,
                                      unsigned int s1) {
    w[0] = (unsigned int)b;
    w[1] = (unsigned int)((unsigned long long)b >> 32) | (retry << 24);
    w[2] = s0; w[3] = s1;
    philox(w, k0, k1);
}
__device__ __forceinline__ float u32(unsigned int w) { return (w >> 8) * 5.9604644775390625e-08f; }
__device__ __forceinline__ double u64(unsigned int a, unsigned int b) {
    return ((a >> 5) * 67108864.0 + (b >> 6)) * 1.1102230246251565e-16;
}

extern "C" __global__ void dptx_uniform_f32(float* out, long long n, float low, float span,
        unsigned int k0, unsigned int k1, unsigned int s0, unsigned int s1) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b * 4 >= n) return;
    unsigned int w[4];
    words(w, b, 0, k0, k1, s0, s1);
    #pragma unroll
    for (int j = 0; j < 4; j++)
        if (b * 4 + j < n) out[b * 4 + j] = low + span * u32(w[j]);
}
extern "C" __global__ void dptx_uniform_f64(double* out, long long n, double low, double span,
        unsigned int k0, unsigned int k1, unsigned int s0, unsigned int s1) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b * 2 >= n) return;
    unsigned int w[4];
    words(w, b, 0, k0, k1, s0, s1);
    out[b * 2] = low + span * u64(w[0], w[1]);
    if (b * 2 + 1 < n) out[b * 2 + 1] = low + span * u64(w[2], w[3]);
}
extern "C" __global__ void dptx_normal_f32(float* out, long long n, float loc, float scale,
        unsigned int k0, unsigned int k1, unsigned int s0, unsigned int s1) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b * 4 >= n) return;
    unsigned int w[4];
    words(w, b, 0, k0, k1, s0, s1);
    #pragma unroll
    for (int j = 0; j < 4; j += 2) {
        const float r = sqrtf(-2.0f * logf(1.0f - u32(w[j])));
        const float t = 6.2831853071795864769f * u32(w[j + 1]);
        if (b * 4 + j < n) out[b * 4 + j] = loc + scale * (r * cosf(t));
        if (b * 4 + j + 1 < n) out[b * 4 + j + 1] = loc + scale * (r * sinf(t));
    }
}
extern "C" __global__ void dptx_normal_f64(double* out, long long n, double loc, double scale,
        unsigned int k0, unsigned int k1, unsigned int s0, unsigned int s1) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b * 2 >= n) return;
    unsigned int w[4];
    words(w, b, 0, k0, k1, s0, s1);
    const double r = sqrt(-2.0 * log(1.0 - u64(w[0], w[1])));
    const double t = 6.283185307179586476925 * u64(w[2], w[3]);
    out[b * 2] = loc + scale * (r * cos(t));
    if (b * 2 + 1 < n) out[b * 2 + 1] = loc + scale * (r * sin(t));
}
// one integer per block: the first of its words Lemire's test accepts (range r = 2**32 when
// r == 0), further draws of the same element (retry 1, 2, ...) if all four are rejected
extern "C" __global__ void dptx_randint(long long* out, long long n, long long low,
        unsigned int r, unsigned int k0, unsigned int k1, unsigned int s0, unsigned int s1) {
    const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= n) return;
    const unsigned long long range = r ? (unsigned long long)r : 4294967296ull;
    const unsigned int threshold = r ? (unsigned int)(-r) % r : 0u;  // 2**32 mod range
    for (unsigned int retry = 0; retry < 256; retry++) {
        unsigned int w[4];
        words(w, b, retry, k0, k1, s0, s1);
        for (int j = 0; j < 4; j++) {
            const unsigned long long m = (unsigned long long)w[j] * range;
            if ((unsigned int)m >= threshold || retry == 255) {
                out[b] = low + (long long)(m >> 32);
                return;
            }
        }
    }
}
"""

_modules = KernelCache()
BLOCK = 128


def _module() -> RawModule:
    return _modules.get("philox", lambda: RawModule(_SOURCE, options=("--fmad=false",)))


def _shape(size) -> tuple:
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (operator.index(size),)
    return tuple(operator.index(d) for d in size)


class RandomState:
    """A seeded stream of calls: numpy's ``RandomState`` methods, on the devices."""

    def __init__(self, seed=None):
        self._lock = threading.Lock()
        self.seed(seed)

    def seed(self, seed=None) -> None:
        """A 64-bit seed (an integer; None draws one from the operating system)."""
        if seed is None:
            seed = int.from_bytes(np.random.default_rng().bytes(8), "little")
        seed = operator.index(seed)
        if seed < 0:
            raise ValueError("Seed must be non-negative")
        with self._lock:
            self._key = (seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
            self._calls = 0

    def _next(self) -> tuple:
        with self._lock:
            call = self._calls
            self._calls += 1
        return self._key + (call & 0xFFFFFFFF, (call >> 32) & 0xFFFFFFFF)

    def _launch(self, kernel: str, out: ndarray, per: int, *params) -> ndarray:
        if out.size:
            blocks = -(-out.size // per)
            k0, k1, s0, s1 = (np.uint32(x) for x in self._next())
            _module().get_function(kernel)((-(-blocks // BLOCK),), (BLOCK,), [
                out, np.int64(out.size), *params, k0, k1, s0, s1])
        return out

    @staticmethod
    def _float_type(dtype) -> np.dtype:
        dt = np.dtype(dtype)
        if dt not in (np.float32, np.float64):
            raise TypeError(f"dptx.random makes float32 or float64 values, not {dt}")
        return dt

    # -- uniform ---------------------------------------------------------------------------
    def uniform(self, low=0.0, high=1.0, size=None, dtype=np.float64) -> ndarray:
        """Values in [low, high) (low + (high - low) * u, as numpy computes them)."""
        dt = self._float_type(dtype)
        out = empty(_shape(size), dt)
        if dt == np.float32:
            return self._launch("dptx_uniform_f32", out, 4, np.float32(low),
                                np.float32(high - low))
        return self._launch("dptx_uniform_f64", out, 2, np.float64(low),
                            np.float64(high - low))

    def random_sample(self, size=None, dtype=np.float64) -> ndarray:
        return self.uniform(0.0, 1.0, size, dtype)

    random = random_sample

    def rand(self, *shape, dtype=np.float64) -> ndarray:
        return self.uniform(0.0, 1.0, shape, dtype)

    # -- normal ----------------------------------------------------------------------------
    def normal(self, loc=0.0, scale=1.0, size=None, dtype=np.float64) -> ndarray:
        if scale < 0:
            raise ValueError("scale < 0")
        dt = self._float_type(dtype)
        out = empty(_shape(size), dt)
        if dt == np.float32:
            return self._launch("dptx_normal_f32", out, 4, np.float32(loc), np.float32(scale))
        return self._launch("dptx_normal_f64", out, 2, np.float64(loc), np.float64(scale))

    def standard_normal(self, size=None, dtype=np.float64) -> ndarray:
        return self.normal(0.0, 1.0, size, dtype)

    def randn(self, *shape, dtype=np.float64) -> ndarray:
        return self.normal(0.0, 1.0, shape, dtype)

    # -- integers --------------------------------------------------------------------------
    def randint(self, low, high=None, size=None, dtype=np.int64) -> ndarray:
        """Integers in [low, high) (in [0, low) without ``high``), each value equally likely;
        the range at most 2**32."""
        if high is None:
            low, high = 0, low
        low, high = operator.index(low), operator.index(high)
        if high <= low:
            raise ValueError("low >= high")
        dt = np.dtype(dtype)
        if dt.kind not in "iu":
            raise TypeError(f"randint makes integers, not {dt}")
        info = np.iinfo(dt)
        if low < info.min or high - 1 > info.max:
            raise ValueError(f"low or high is out of bounds for {dt}")
        span = high - low
        if span > 1 << 32:
            raise DptxError(f"randint over a range of {span} values (more than 2**32) is not "
                            f"supported yet")
        out = empty(_shape(size), np.int64)
        self._launch("dptx_randint", out, 1, np.int64(low), np.uint32(span & 0xFFFFFFFF))
        return out if dt == np.int64 else out.astype(dt)

    # -- permutations and samples ----------------------------------------------------------
    def _order(self, n: int) -> ndarray:
        """A random order of n: the stable sort of 64-bit random keys (two 32-bit draws; a tie,
        about n**2 / 2**65 likely, keeps index order)."""
        high = self.randint(0, 1 << 32, size=n, dtype=np.int64).astype(np.uint64)
        low = self.randint(0, 1 << 32, size=n, dtype=np.int64).astype(np.uint64)
        keys = ufuncs.apply(np.bitwise_or, ufuncs.apply(np.left_shift, high, np.uint64(32)),
                            low)
        return sorting.argsort(keys)

    def permutation(self, x) -> ndarray:
        """numpy's permutation: of ``arange(x)`` for an integer, else a shuffled copy of the
        array along its first axis."""
        if isinstance(x, (int, np.integer)):
            return self._order(operator.index(x))
        a = asarray(x)
        if a.ndim == 0:
            raise np.exceptions.AxisError("x must be an integer or at least 1-dimensional")
        return indexing.take(a, self._order(a.shape[0]), axis=0)

    def shuffle(self, x) -> None:
        """numpy's shuffle: the array's first axis in a random order, in place."""
        if not isinstance(x, ndarray):
            raise TypeError("dptx.random.shuffle takes a dptx array")
        if x.ndim == 0:
            raise TypeError("shuffle of a 0-d array")
        x[...] = self.permutation(x)

    def choice(self, a, size=None, replace=True, p=None) -> ndarray:
        """numpy's choice: elements of the 1-D ``a`` (of ``arange(a)`` for an integer) drawn
        uniformly or with probabilities ``p`` (numpy's checks: 1-D, non-negative, summing
        to 1), with or without replacement (without: a random order's first ones, or with
        ``p`` keys u ** (1 / p) in decreasing order, the distribution of numpy's successive
        draws)."""
        population = None
        if isinstance(a, (int, np.integer)):
            n = operator.index(a)
            if n <= 0:
                raise ValueError("a must be greater than 0 unless no samples are taken")
        else:
            population = asarray(a)
            if population.ndim != 1:
                raise ValueError("a must be 1-dimensional or an integer")
            n = population.shape[0]
            if n == 0 and size != 0 and _shape(size) != (0,):
                raise ValueError("'a' cannot be empty unless no samples are taken")
        shape = _shape(size)
        count = int(np.prod(shape, dtype=np.int64))
        if p is not None:
            weights = np.asarray(p.get() if isinstance(p, ndarray) else p, dtype=np.float64)
            if weights.ndim != 1:
                raise ValueError("'p' must be 1-dimensional")
            if weights.size != n:
                raise ValueError("'a' and 'p' must have same size")
            if np.any(weights < 0):
                raise ValueError("probabilities are not non-negative")
            if abs(np.sum(weights) - 1) > np.sqrt(np.finfo(np.float64).eps):
                raise ValueError("probabilities do not sum to 1")
            if not replace and np.count_nonzero(weights) < count:
                raise ValueError("Fewer non-zero entries in p than size")
        if not replace and count > n:
            raise ValueError("Cannot take a larger sample than population when "
                             "'replace=False'")
        if p is None and replace:
            picks = self.randint(0, n, size=count) if count else arange(0, dtype=np.int64)
        elif p is None:
            picks = self._order(n)[:count]
        elif replace:
            cdf = scan.cumsum(asarray(weights))
            cdf = ufuncs.apply(np.true_divide, cdf, cdf[-1])
            picks = sorting.searchsorted(cdf, self.uniform(size=count), side="right")
        else:
            # the largest u ** (1 / p), as log(u) / p (0 weights: -inf, never among the first)
            with np.errstate(divide="ignore"):
                keys = ufuncs.apply(np.true_divide, ufuncs.apply(np.log, self.uniform(size=n)),
                                    asarray(weights))
            picks = sorting.argsort(ufuncs.apply(np.negative, keys))[:count]
        picks = picks.reshape(shape)
        return picks if population is None else indexing.take(population, picks)


_global = RandomState(0)


def get_random_state() -> RandomState:
    return _global


def seed(seed=None) -> None:
    _global.seed(seed)


def rand(*shape, dtype=np.float64):
    return _global.rand(*shape, dtype=dtype)


def randn(*shape, dtype=np.float64):
    return _global.randn(*shape, dtype=dtype)


def random(size=None, dtype=np.float64):
    return _global.random_sample(size, dtype)


random_sample = random


def uniform(low=0.0, high=1.0, size=None, dtype=np.float64):
    return _global.uniform(low, high, size, dtype)


def normal(loc=0.0, scale=1.0, size=None, dtype=np.float64):
    return _global.normal(loc, scale, size, dtype)


def standard_normal(size=None, dtype=np.float64):
    return _global.standard_normal(size, dtype)


def randint(low, high=None, size=None, dtype=np.int64):
    return _global.randint(low, high, size, dtype)


def permutation(x):
    return _global.permutation(x)


def shuffle(x) -> None:
    _global.shuffle(x)


def choice(a, size=None, replace=True, p=None):
    return _global.choice(a, size, replace, p)
