"""numpy reference for the segmented sums of the unseen corpus (hopper.mcpl): sums[s] adds
x[offsets[s]] .. x[offsets[s + 1] - 1]. Segment lengths vary from 0 to about twice the
mean n / nseg."""

from __future__ import annotations

import numpy as np

FUNCTION = "segsum"
SIZES = {"nseg": 37, "n": 3000}
OUTPUTS = ("sums",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nseg, n = sizes["nseg"], sizes["n"]
    cuts = np.sort(rng.integers(0, n + 1, nseg - 1))
    offsets = np.concatenate(([0], cuts, [n])).astype(np.int32)
    return {"nseg": nseg, "n": n, "sums": np.zeros(nseg, dtype=np.float32),
            "offsets": offsets, "x": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    offsets = np.asarray(args["offsets"])
    ends = np.concatenate(([0.0], np.cumsum(np.asarray(args["x"], dtype=np.float64))))
    return {"sums": (ends[offsets[1:]] - ends[offsets[:-1]]).astype(np.float32)}


def error_terms(args: dict[str, object]) -> np.ndarray:
    """A segment's sum adds its elements."""
    return np.diff(np.asarray(args["offsets"]))


def bytes_moved(sizes: dict[str, int]) -> int:
    """offsets and x read once, sums written once."""
    return 4 * (sizes["nseg"] + 1) + 4 * sizes["n"] + 4 * sizes["nseg"]
