"""numpy reference for the histograms of the unseen corpus (hopper.mcpl): hist[k] counts
the values v[i] in [k / 64, (k + 1) / 64)."""

from __future__ import annotations

import numpy as np

FUNCTION = "histogram"
SIZES = {"n": 3000}
OUTPUTS = ("hist",)
NR_BINS = 64


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    # float32 values whose bin is the same in float32 and float64 (no value within
    # rounding of a bin edge): multiples of 1/1024 plus a quarter step
    v = (rng.integers(0, 1024, n) + 0.25) / 1024.0
    return {"n": n, "hist": np.zeros(NR_BINS, dtype=np.int32), "v": v.astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    bins = (np.asarray(args["v"], dtype=np.float64) * NR_BINS).astype(np.int64)
    return {"hist": np.bincount(bins, minlength=NR_BINS).astype(np.int32)}


def error_terms(args: dict[str, object]) -> int:
    """Integer counts: exact."""
    return 0


def bytes_moved(sizes: dict[str, int]) -> int:
    """v read once (the histogram itself is small)."""
    return 4 * sizes["n"]
