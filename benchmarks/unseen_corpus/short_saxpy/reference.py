"""numpy reference for the short saxpy of the unseen corpus (hopper.mcpl):
y = alpha * x + y."""

from __future__ import annotations

import numpy as np

FUNCTION = "saxpy"
SIZES = {"n": 1000}
OUTPUTS = ("y",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {"n": n, "alpha": np.float32(1.5),
            "y": rng.uniform(-1.0, 1.0, n).astype(np.float32),
            "x": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    alpha = float(args["alpha"])  # type: ignore[arg-type]
    x = np.asarray(args["x"], dtype=np.float64)
    y = np.asarray(args["y"], dtype=np.float64)
    return {"y": (alpha * x + y).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """One product and one sum."""
    return 2


def bytes_moved(sizes: dict[str, int]) -> int:
    """x and y read, y written."""
    return 12 * sizes["n"]
