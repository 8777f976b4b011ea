"""numpy reference for Black-Scholes: prices of European call and put options.

Uses the exact normal distribution (via erf), not the kernel's polynomial approximation,
so it checks the kernel against the mathematics rather than against itself."""

from __future__ import annotations

import math

import numpy as np

FUNCTION = "blackscholes"
SIZES = {"n": 101}
OUTPUTS = ("call", "put")
U32 = 2.0**-24  # float32 unit roundoff
CND_ERROR = 7.5e-8  # |error| of the Abramowitz-Stegun polynomial (formula 26.2.17)
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
    try:  # scipy's vectorised erf: seconds faster at millions of options
        from scipy.special import ndtr

        return np.asarray(ndtr(d))
    except ImportError:
        erf = np.vectorize(math.erf, otypes=[np.float64])
        return 0.5 * (1.0 + erf(d / math.sqrt(2.0)))


def _terms(args: dict[str, object]) -> dict[str, np.ndarray]:
    s = np.asarray(args["s"], dtype=np.float64)
    x = np.asarray(args["x"], dtype=np.float64)
    t = np.asarray(args["t"], dtype=np.float64)
    r, v = float(args["r"]), float(args["v"])  # type: ignore[arg-type]
    vsqrt_t = v * np.sqrt(t)
    log_sx, drift = np.log(s / x), (r + 0.5 * v * v) * t
    d1 = (log_sx + drift) / vsqrt_t
    return {"s": s, "xd": x * np.exp(-r * t), "d1": d1, "d2": d1 - vsqrt_t,
            "log_sx": log_sx, "drift": drift, "vsqrt_t": vsqrt_t}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    k = _terms(args)
    s, xd = k["s"], k["xd"]
    call = s * _normal_cdf(k["d1"]) - xd * _normal_cdf(k["d2"])
    put = xd * _normal_cdf(-k["d2"]) - s * _normal_cdf(-k["d1"])
    return {"call": call.astype(np.float32), "put": put.astype(np.float32)}


def error_bound(args: dict[str, object], outputs: dict[str, np.ndarray]) -> dict[str, object]:
    """A first-order forward error bound per option (docs/kernels.md), doubled for the
    second-order terms it leaves out. OpenCL's float32 log, exp, sqrt and division err by
    at most 3 ulp, so d1 = (log(s/x) + drift) / (v sqrt t) errs by about
    10u (1 + |log(s/x)| + drift) / (v sqrt t) + 10u |d1|, and a cnd value by the
    polynomial's 7.5e-8, ~20u for its own float32 evaluation and phi(d) times the error of
    d. The prices add s and x e^(-rt) times those, and ~8u of their own magnitude."""
    k = _terms(args)
    s, xd = k["s"], k["xd"]
    d_error = 10 * U32 * (1 + np.abs(k["log_sx"]) + k["drift"]) / k["vsqrt_t"] \
        + 10 * U32 * (np.abs(k["d1"]) + k["vsqrt_t"])
    pdf = np.exp(-0.5 * np.minimum(k["d1"] ** 2, k["d2"] ** 2)) / math.sqrt(2 * math.pi)
    cnd_error = CND_ERROR + 20 * U32 + pdf * d_error
    bound = 2 * ((s + xd) * cnd_error + 8 * U32 * (s + xd))
    return {"call": bound, "put": bound}


def flops(sizes: dict[str, int]) -> int:
    """Operations per option counted in the kernel: 2 CND evaluations of 18 operations
    (exp counted as one) plus 24 for d1, d2, the discount and both prices."""
    return sizes["n"] * (2 * 18 + 24)


def bytes_moved(sizes: dict[str, int]) -> int:
    """Three float32 inputs read and two prices written per option."""
    return 20 * sizes["n"]
