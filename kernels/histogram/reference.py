"""numpy reference for histogram: counts of the values 0..255 in an h x w image."""

from __future__ import annotations

import numpy as np

FUNCTION = "histogram"
SIZES = {"h": 19, "w": 29}
OUTPUTS = ("hist",)
BUCKETS = 256


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    h, w = sizes["h"], sizes["w"]
    return {
        "h": h,
        "w": w,
        "hist": np.zeros(BUCKETS, dtype=np.int32),
        # A skewed distribution, so some buckets collect many concurrent increments.
        "image": np.minimum(rng.exponential(40.0, (h, w)), BUCKETS - 1).astype(np.int32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    image = np.asarray(args["image"]).ravel()
    return {"hist": np.bincount(image, minlength=BUCKETS).astype(np.int32)}


def error_terms(args: dict[str, object]) -> int:
    """Integer counts are exact."""
    return 0


def bytes_moved(sizes: dict[str, int]) -> int:
    """Each pixel read once (4 bytes); the histogram is written once (the paper's GB/s)."""
    return 4 * sizes["h"] * sizes["w"] + 4 * BUCKETS
