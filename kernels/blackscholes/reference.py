"""numpy reference for Black-Scholes: prices of European call and put options.

Uses the exact normal distribution (via erf), not the kernel's polynomial approximation,
so it checks the kernel against the mathematics rather than against itself."""

from __future__ import annotations

import math

import numpy as np

FUNCTION = "blackscholes"
SIZES = {"n": 101}
OUTPUTS = ("call", "put")
# Prices reach ~100; float32 log/exp and the 7.5e-8 error of the polynomial CND give
# absolute errors around 1e-5 .. 1e-4.
TOLERANCE = {"rtol": 1e-4, "atol": 5e-4}
RISKFREE, VOLATILITY = 0.02, 0.30  # the CUDA SDK sample's values


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {
        "n": n,
        "r": np.float32(RISKFREE),
        "v": np.float32(VOLATILITY),
        "call": np.zeros(n, dtype=np.float32),
        "put": np.zeros(n, dtype=np.float32),
        "s": rng.uniform(5.0, 30.0, n).astype(np.float32),
        "x": rng.uniform(1.0, 100.0, n).astype(np.float32),
        "t": rng.uniform(0.25, 10.0, n).astype(np.float32),
    }


def _normal_cdf(d: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf, otypes=[np.float64])
    return 0.5 * (1.0 + erf(d / math.sqrt(2.0)))


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    s = np.asarray(args["s"], dtype=np.float64)
    x = np.asarray(args["x"], dtype=np.float64)
    t = np.asarray(args["t"], dtype=np.float64)
    r, v = float(args["r"]), float(args["v"])  # type: ignore[arg-type]
    sqrt_t = np.sqrt(t)
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * sqrt_t)
    d2 = d1 - v * sqrt_t
    discount = np.exp(-r * t)
    call = s * _normal_cdf(d1) - x * discount * _normal_cdf(d2)
    put = x * discount * _normal_cdf(-d2) - s * _normal_cdf(-d1)
    return {"call": call.astype(np.float32), "put": put.astype(np.float32)}


def flops(sizes: dict[str, int]) -> int:
    """Operations per option counted in the kernel: 2 CND evaluations of 18 operations
    (exp counted as one) plus 24 for d1, d2, the discount and both prices."""
    return sizes["n"] * (2 * 18 + 24)
