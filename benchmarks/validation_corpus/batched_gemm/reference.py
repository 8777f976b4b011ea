"""numpy reference for the batched small matrix products of the validation corpus
(hopper.mcpl): c[q] = a[q] b[q] for nb matrices of m x m."""

from __future__ import annotations

import numpy as np

FUNCTION = "batched_gemm"
SIZES = {"nb": 7, "m": 16}
OUTPUTS = ("c",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nb, m = sizes["nb"], sizes["m"]
    if (m * m) % 32 or m * m > 1024:
        raise ValueError(f"m = {m}: a block has m * m threads, whole warps of 32 and at "
                         "most 1024 (m = 8, 16, 24 or 32)")
    shape = (nb, m, m)
    return {
        "nb": nb,
        "m": m,
        "c": np.zeros(shape, dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, shape).astype(np.float32),
        "b": rng.uniform(-1.0, 1.0, shape).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    b = np.asarray(args["b"], dtype=np.float64)
    return {"c": np.matmul(a, b).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Each element sums m products."""
    return int(args["m"])  # type: ignore[call-overload]


def flops(sizes: dict[str, int]) -> int:
    return 2 * sizes["nb"] * sizes["m"] ** 3
