"""numpy reference for the strided-loop transposes of the unseen corpus (hopper.mcpl):
b = a transposed."""

from __future__ import annotations

import numpy as np

FUNCTION = "transpose"
SIZES = {"n": 45, "m": 70}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n, m = sizes["n"], sizes["m"]
    return {"n": n, "m": m, "b": np.zeros((m, n), dtype=np.float32),
            "a": rng.uniform(-1.0, 1.0, (n, m)).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    return {"b": np.ascontiguousarray(np.asarray(args["a"]).T)}


def error_terms(args: dict[str, object]) -> int:
    """A copy: exact."""
    return 0


def bytes_moved(sizes: dict[str, int]) -> int:
    """a read once, b written once."""
    return 8 * sizes["n"] * sizes["m"]
