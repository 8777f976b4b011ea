"""numpy reference for the one-block sum of the unseen corpus (hopper.mcpl):
total[0] = x[0] + ... + x[n - 1]."""

from __future__ import annotations

import numpy as np

FUNCTION = "blocksum"
SIZES = {"n": 3000}
OUTPUTS = ("total",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {"n": n, "total": np.zeros(1, dtype=np.float32),
            "x": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    return {"total": np.array([np.sum(np.asarray(args["x"], dtype=np.float64))],
                              dtype=np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """n terms."""
    return int(args["n"])  # type: ignore[call-overload]


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read once."""
    return 4 * sizes["n"]
