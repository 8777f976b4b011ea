"""numpy reference for PolyBench gesummv: y = alpha * A * x + beta * B * x."""

from __future__ import annotations

import numpy as np

FUNCTION = "gesummv"
SIZES = {"n": 37}
OUTPUTS = ("y",)
ALPHA, BETA = 1.5, 1.2  # PolyBench's init_array values


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {
        "n": n,
        "alpha": np.float32(ALPHA),
        "beta": np.float32(BETA),
        "y": np.zeros(n, dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32),
        "b": rng.uniform(-1.0, 1.0, (n, n)).astype(np.float32),
        "x": rng.uniform(-1.0, 1.0, n).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    b = np.asarray(args["b"], dtype=np.float64)
    x = np.asarray(args["x"], dtype=np.float64)
    alpha, beta = float(args["alpha"]), float(args["beta"])  # type: ignore[arg-type]
    return {"y": (alpha * (a @ x) + beta * (b @ x)).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Each y[i] is two float32 dot products of length n (gamma_n each, Higham §3.1), then
    alpha * tmp + beta * yi: two more roundings. Error bounds: docs/kernels.md."""
    return int(args["n"]) + 2  # type: ignore[call-overload]


def flops(sizes: dict[str, int]) -> int:
    """Two multiply-adds per matrix element, then 3 operations per row."""
    n = sizes["n"]
    return 4 * n * n + 3 * n


def bytes_moved(sizes: dict[str, int]) -> int:
    """Both matrices read once, x (at least) once and y written: the traffic that bounds
    the kernel (benchmarks/paper_sizes.py compares it with the copy bandwidth)."""
    n = sizes["n"]
    return 4 * (2 * n * n + 2 * n)
