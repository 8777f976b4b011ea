"""numpy reference for rowstats_hopper.mcpl (s, q: the sum and the sum of squares of each
row of a, n x m), given with --reference so that row-per-warp is verified at sizes whose
rows and columns differ (tests/refine/test_row_per_warp.py)."""

from __future__ import annotations

import numpy as np

FUNCTION = "rowstats"
SIZES = {"n": 19, "m": 31}
OUTPUTS = ("s", "q")


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n, m = sizes["n"], sizes["m"]
    return {
        "n": n,
        "m": m,
        "s": np.zeros(n, dtype=np.float32),
        "q": np.zeros(n, dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (n, m)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    return {"s": a.sum(axis=1).astype(np.float32),
            "q": (a * a).sum(axis=1).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """A sum of m terms (of m products for q) per row, in any order."""
    return 2 * int(args["m"])  # type: ignore[call-overload]


def bytes_moved(sizes: dict[str, int]) -> int:
    """a read once, s and q written once."""
    return 4 * sizes["n"] * (sizes["m"] + 2)
