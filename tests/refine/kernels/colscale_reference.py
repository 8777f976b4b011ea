"""numpy reference for colscale.mcpl (b = 2 a, a: m x n), given with --reference to time
the kernel and its swap-mapping next version on a device (docs/refinements.md)."""

from __future__ import annotations

import numpy as np

FUNCTION = "colscale"
SIZES = {"n": 19, "m": 31}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n, m = sizes["n"], sizes["m"]
    return {
        "n": n,
        "m": m,
        "b": np.zeros((m, n), dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (m, n)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    return {"b": 2.0 * np.asarray(args["a"], dtype=np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """One multiplication by two: exact."""
    return 0


def bytes_moved(sizes: dict[str, int]) -> int:
    """One float32 read and one write per element."""
    return 8 * sizes["n"] * sizes["m"]
