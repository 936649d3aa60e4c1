"""`math.hypot` to the last bit, compiled: the household engine compares distances with
reach and view ranges, so its batched kernels (`kernels.py`) must compute exactly the
distances the reference engine (Python's `math.hypot`) does."""

from __future__ import annotations

import math
import sys

from numba import njit

_SPLIT = 134217729.0  # 2**27 + 1, Veltkamp's constant
_DBL_MIN = 2.2250738585072014e-308
# CPython 3.12 rewrote math.hypot around fma; 3.10-3.11 split each square by hand
FMA_FORM = sys.version_info >= (3, 12)

@njit(cache=True, inline="always")
def _split(x: float) -> tuple[float, float]:
    t = x * _SPLIT
    hi = t - (t - x)
    return hi, x - hi

@njit(cache=True, inline="always")
def _two_product(x: float, y: float) -> tuple[float, float]:
    """Return (x*y rounded, its exact error), Dekker's product (what fma gives)."""
    z = x * y
    xh, xl = _split(x)
    yh, yl = _split(y)
    return z, ((xh * yh - z) + xh * yl + xl * yh) + xl * yl

@njit(cache=True)
def _norm_fma(a: float, b: float, mx: float) -> float:
    """CPython >= 3.12: squares split exactly by a two-product (its fma)."""
    m, e = math.frexp(mx)
    factor = 1.0
    if e < -1023:  # CPython recurses once on the inputs scaled up by DBL_MIN
        a, b, mx, factor = a / _DBL_MIN, b / _DBL_MIN, mx / _DBL_MIN, _DBL_MIN
        m, e = math.frexp(mx)
    scale = math.ldexp(1.0, -e)
    csum = 1.0
    frac1 = 0.0
    frac2 = 0.0
    for x in (a * scale, b * scale):
        hi, lo = _two_product(x, x)
        s = csum + hi
        frac2 += (csum - s) + hi
        csum = s
        frac1 += lo
    h = math.sqrt(csum - 1.0 + (frac1 + frac2))
    hi, lo = _two_product(-h, h)
    s = csum + hi
    frac2 += (csum - s) + hi
    csum = s
    frac1 += lo
    x = csum - 1.0 + (frac1 + frac2)
    h += x / (2.0 * h)
    return factor * (h / scale)


@njit(cache=True)
def _norm_split(a: float, b: float, mx: float) -> float:
    """CPython 3.10-3.11: Veltkamp-split squares summed in three parts."""
    m, e = math.frexp(mx)
    csum = 1.0
    frac1 = 0.0
    frac2 = 0.0
    frac3 = 0.0
    if e < -1023:
        for x in (a / mx, b / mx):
            x = x * x
            old = csum
            csum += x
            frac1 += (old - csum) + x
        return mx * math.sqrt(csum - 1.0 + frac1)
    scale = math.ldexp(1.0, -e)
    for x in (a * scale, b * scale):
        hi, lo = _split(x)
        x = hi * hi
        old = csum
        csum += x
        frac1 += (old - csum) + x
        x = 2.0 * hi * lo
        old = csum
        csum += x
        frac2 += (old - csum) + x
        frac3 += lo * lo
    h = math.sqrt(csum - 1.0 + (frac1 + frac2 + frac3))
    hi, lo = _split(h)
    x = -hi * hi
    old = csum
    csum += x
    frac1 += (old - csum) + x
    x = -2.0 * hi * lo
    old = csum
    csum += x
    frac2 += (old - csum) + x
    x = -lo * lo
    old = csum
    csum += x
    frac3 += (old - csum) + x
    x = csum - 1.0 + (frac1 + frac2 + frac3)
    return (h + x / (2.0 * h)) / scale

@njit(cache=True)
def py_hypot(x: float, y: float) -> float:
    """Return `math.hypot(x, y)` to the last bit: CPython's own algorithm (its `vector_norm`
    for two coordinates), not the C library's `hypot`, which numba calls and which differs by
    one ULP for about 0.6% of inputs; reach and view ranges are compared with such distances."""
    a = abs(x)
    b = abs(y)
    mx = 0.0
    if a > mx:
        mx = a
    if b > mx:
        mx = b
    if math.isinf(mx):
        return mx
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if mx == 0.0:
        return mx
    return _norm_fma(a, b, mx) if FMA_FORM else _norm_split(a, b, mx)
