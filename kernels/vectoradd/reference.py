"""numpy reference for vectoradd: c = a + b."""

from __future__ import annotations

import numpy as np

FUNCTION = "vectoradd"
SIZES = {"n": 1000}
OUTPUTS = ("c",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {
        "n": n,
        "c": np.zeros(n, dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, n).astype(np.float32),
        "b": rng.uniform(-1.0, 1.0, n).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    b = np.asarray(args["b"], dtype=np.float64)
    return {"c": (a + b).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """One correctly rounded float32 addition per element."""
    return 1


def bytes_moved(sizes: dict[str, int]) -> int:
    """Two float32 reads and one write per element."""
    return 12 * sizes["n"]
