"""numpy reference for runs.mcpl (b = 2 a), given with --reference to time the kernel
and its vector-loads next version on a device (docs/refinements.md)."""

from __future__ import annotations

import numpy as np

FUNCTION = "runs"
SIZES = {"n": 1009}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {
        "n": n,
        "b": np.zeros(n, dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, n).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    return {"b": 2.0 * np.asarray(args["a"], dtype=np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """One multiplication by two: exact."""
    return 0


def bytes_moved(sizes: dict[str, int]) -> int:
    """One float32 read and one write per element."""
    return 8 * sizes["n"]
