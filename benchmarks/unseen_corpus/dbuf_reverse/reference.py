"""numpy reference for the double-buffered mirror of the unseen corpus (hopper.mcpl): per
tile of TILE elements (padded with zeros past n), y[g] = x[g] - x[mirrored g]."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

FUNCTION = "mirror"
SIZES = {"n": 5000}
OUTPUTS = ("y",)
_KERNEL = (Path(__file__).parent / "hopper.mcpl").read_text(encoding="utf-8")
TILE = int(re.search(r"^const int TILE = (\d+);", _KERNEL, re.M)[1])  # type: ignore[index]


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {"n": n, "y": np.zeros(n, dtype=np.float32),
            "x": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    n = int(args["n"])  # type: ignore[call-overload]
    x = np.zeros(-(-n // TILE) * TILE)
    x[:n] = np.asarray(args["x"], dtype=np.float64)
    tiles = x.reshape(-1, TILE)
    return {"y": (tiles - tiles[:, ::-1]).reshape(-1)[:n].astype(np.float32)}


def error_bound(args: dict[str, object], outputs: dict[str, np.ndarray]) -> dict[str, float]:
    """One rounded difference of two values in [-1, 1] (a bound from error_terms would
    run the reference on |x|, where the difference of magnitudes may be negative)."""
    return {"y": 2.0**-23}


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read once, y written once."""
    return 8 * sizes["n"]
