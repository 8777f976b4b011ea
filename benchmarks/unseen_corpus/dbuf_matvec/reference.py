"""numpy reference for the double-buffered matrix-vector product of the unseen corpus
(hopper.mcpl): y = A x, A stored by columns (a[col, row])."""

from __future__ import annotations

import numpy as np

FUNCTION = "matvec"
SIZES = {"nrows": 300, "ncols": 200}
OUTPUTS = ("y",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nrows, ncols = sizes["nrows"], sizes["ncols"]
    return {"nrows": nrows, "ncols": ncols, "y": np.zeros(nrows, dtype=np.float32),
            "a": rng.uniform(-1.0, 1.0, (ncols, nrows)).astype(np.float32),
            "x": rng.uniform(-1.0, 1.0, ncols).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    x = np.asarray(args["x"], dtype=np.float64)
    return {"y": (a.T @ x).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Each row sums ncols products."""
    return int(args["ncols"])  # type: ignore[call-overload]


def flops(sizes: dict[str, int]) -> int:
    return 2 * sizes["nrows"] * sizes["ncols"]
