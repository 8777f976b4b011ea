"""Black-Scholes (the paper's section 7): call and put prices of n European options.

Bandwidth-bound on the machines we measure: 20 bytes per option (s, x, t in; call, put
out) against about 60 operations, so the figure is GB/s and its share of the copy
bandwidth measured in the same run. The peers compute the kernels' formula (the
Abramowitz-Stegun polynomial for the normal distribution, kernels/blackscholes/perfect.mcpl)
in float32; they return the call and put prices, which the framework checks against
the reference."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "blackscholes"
UNIT = "GB/s"

# The polynomial of kernels/blackscholes/perfect.mcpl (Abramowitz-Stegun 26.2.17).
A = (0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429)
K = 0.2316419
RSQRT2PI = 0.39894228040143267794


def sizes(device_type: str) -> list[dict[str, int]]:
    """The paper's 4 * 10^6 options; on a GPU also 1.6 * 10^7, enough to fill an H100."""
    if device_type == "gpu":
        return [{"n": 4_000_000}, {"n": 16_000_000}]
    return [{"n": 4_000_000}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """reference.flops' count (60 operations per option) and 20 bytes per option."""
    n = defines["n"]
    return {"flop": 60.0 * n, "bytes": 20.0 * n}


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    """The formula vectorised with numpy, in float32 (one pass per operation)."""
    import numpy as np

    f32 = np.float32
    s, x, t = (np.asarray(args[k], dtype=f32) for k in ("s", "x", "t"))
    r, v = f32(args["r"]), f32(args["v"])  # type: ignore[arg-type]

    def cnd(d: np.ndarray) -> np.ndarray:
        k = f32(1.0) / (f32(1.0) + f32(K) * np.abs(d))
        poly = k * (f32(A[0]) + k * (f32(A[1]) + k * (f32(A[2]) + k * (f32(A[3])
                                                                        + k * f32(A[4])))))
        c = f32(RSQRT2PI) * np.exp(f32(-0.5) * d * d) * poly
        return np.where(d > 0, f32(1.0) - c, c)

    def run() -> object:
        sqrt_t = np.sqrt(t)
        d1 = (np.log(s / x) + (r + f32(0.5) * v * v) * t) / (v * sqrt_t)
        d2 = d1 - v * sqrt_t
        cnd1, cnd2 = cnd(d1), cnd(d2)
        discount = np.exp(-r * t)
        call = s * cnd1 - x * discount * cnd2
        put = x * discount * (f32(1.0) - cnd2) - s * (f32(1.0) - cnd1)
        return call, put

    return run


_CUPY_KERNEL = """
    float sqrtT = sqrtf(t);
    float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sqrtT);
    float d2 = d1 - v * sqrtT;
    float k1 = 1.0f / (1.0f + K * fabsf(d1));
    float k2 = 1.0f / (1.0f + K * fabsf(d2));
    float c1 = RSQRT2PI * expf(-0.5f * d1 * d1)
        * (k1 * (A1 + k1 * (A2 + k1 * (A3 + k1 * (A4 + k1 * A5)))));
    float c2 = RSQRT2PI * expf(-0.5f * d2 * d2)
        * (k2 * (A1 + k2 * (A2 + k2 * (A3 + k2 * (A4 + k2 * A5)))));
    if (d1 > 0.0f) c1 = 1.0f - c1;
    if (d2 > 0.0f) c2 = 1.0f - c2;
    float expRT = expf(-r * t);
    call = s * c1 - x * expRT * c2;
    put = x * expRT * (1.0f - c2) - s * (1.0f - c1);
"""


def _cupy(args: dict[str, object]) -> Callable[[], object]:
    """The same formula as one fused CuPy ElementwiseKernel (CUDA's expf/logf)."""
    import cupy as cp
    import numpy as np

    constants = "".join(f"const float A{i + 1} = {a}f;\n" for i, a in enumerate(A))
    constants += f"const float K = {K}f;\nconst float RSQRT2PI = {RSQRT2PI}f;\n"
    kernel = cp.ElementwiseKernel(
        "float32 s, float32 x, float32 t, float32 r, float32 v",
        "float32 call, float32 put",
        _CUPY_KERNEL, "black_scholes", preamble=constants)
    s, x, t = (cp.asarray(args[k]) for k in ("s", "x", "t"))
    r, v = np.float32(args["r"]), np.float32(args["v"])  # type: ignore[arg-type]
    call, put = cp.empty_like(s), cp.empty_like(s)
    return lambda: kernel(s, x, t, r, v, call, put)


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("CuPy ElementwiseKernel (fused)", _cupy)]
    return [Peer("numpy vectorised (float32)", _numpy)]
