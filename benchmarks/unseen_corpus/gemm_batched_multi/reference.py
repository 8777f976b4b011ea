"""numpy reference for the batched small GEMMs of the unseen corpus (hopper.mcpl):
c[q] = a[q] b[q] for nb square matrices of order m."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

FUNCTION = "gemm"
SIZES = {"nb": 7, "m": 7}
OUTPUTS = ("c",)
_KERNEL = (Path(__file__).parent / "hopper.mcpl").read_text(encoding="utf-8")
TILE = int(re.search(r"^const int TILE = (\d+);", _KERNEL, re.M)[1])  # type: ignore[index]


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nb, m = sizes["nb"], sizes["m"]
    if not 1 <= m <= TILE:
        raise ValueError(f"m = {m}: the matrices are at most {TILE} x {TILE} (the tile)")
    return {"nb": nb, "m": m, "c": np.zeros((nb, m, m), dtype=np.float32),
            "a": rng.uniform(-1.0, 1.0, (nb, m, m)).astype(np.float32),
            "b": rng.uniform(-1.0, 1.0, (nb, m, m)).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    b = np.asarray(args["b"], dtype=np.float64)
    return {"c": np.matmul(a, b).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Each element sums m products (the padding adds zeros)."""
    return int(args["m"])  # type: ignore[call-overload]


def flops(sizes: dict[str, int]) -> int:
    return 2 * sizes["nb"] * sizes["m"] ** 3
