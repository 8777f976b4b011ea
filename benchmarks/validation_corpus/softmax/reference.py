"""numpy reference for the softmax row reduction of the validation corpus (hopper.mcpl):
y[r] = exp(x[r] - max(x[r])) / sum(exp(x[r] - max(x[r]))) for each of `rows` rows of m."""

from __future__ import annotations

import numpy as np

FUNCTION = "softmax"
SIZES = {"rows": 13, "m": 300}
OUTPUTS = ("y",)
EPS = float(np.finfo(np.float32).eps)  # one ulp at 1
# OpenCL C allows exp 3 ulp and division 2.5 ulp of error (OpenCL C 1.2, section 7.4)
ULPS = 3


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    rows, m = sizes["rows"], sizes["m"]
    return {
        "rows": rows,
        "m": m,
        "y": np.zeros((rows, m), dtype=np.float32),
        "x": rng.uniform(-4.0, 4.0, (rows, m)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    x = np.asarray(args["x"], dtype=np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"y": (e / e.sum(axis=1, keepdims=True)).astype(np.float32)}


def error_bound(args: dict[str, object], outputs: dict[str, np.ndarray]) -> dict[str, object]:
    """Relative to each value: the element's exponential and division (ULPS each), the
    rounding of x - mx (at most 8, the range of x, times half an ulp, amplified by exp),
    and the sum of m exponentials (m roundings and the exponentials' own ULPS, Higham
    §4.2)."""
    m = int(args["m"])  # type: ignore[call-overload]
    relative = (m + 3 * ULPS + 8) * EPS
    return {"y": np.abs(outputs["y"]) * relative + np.finfo(np.float32).tiny}


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read and y written once (the kernel reads x three times; the caches may keep a
    row)."""
    return 8 * sizes["rows"] * sizes["m"]
