"""numpy reference for the ELLPACK sparse matrix-vector product of the validation corpus
(hopper.mcpl): y = A x, A of n x ncols with at most `width` non-zeros per row, stored
column-major as cols[k, i], vals[k, i] (padding: value 0 at column 0)."""

from __future__ import annotations

import numpy as np

FUNCTION = "ell_spmv"
SIZES = {"n": 1000, "ncols": 777, "width": 7}
OUTPUTS = ("y",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    """Row i holds a random number of entries from 0 to `width` (columns drawn with
    replacement: a repeated column is a sum, which the product computes alike)."""
    n, ncols, width = sizes["n"], sizes["ncols"], sizes["width"]
    if ncols < 1 or width < 0:
        raise ValueError(f"ncols = {ncols} must be at least 1 and width = {width} not negative")
    lengths = rng.integers(0, width + 1, n)
    used = np.arange(width)[:, None] < lengths[None, :]
    cols = np.where(used, rng.integers(0, ncols, (width, n)), 0).astype(np.int32)
    vals = np.where(used, rng.uniform(-1.0, 1.0, (width, n)), 0.0).astype(np.float32)
    return {
        "n": n,
        "ncols": ncols,
        "width": width,
        "y": np.zeros(n, dtype=np.float32),
        "cols": cols,
        "vals": vals,
        "x": rng.uniform(-1.0, 1.0, ncols).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    cols = np.asarray(args["cols"])
    vals = np.asarray(args["vals"], dtype=np.float64)
    x = np.asarray(args["x"], dtype=np.float64)
    return {"y": (vals * x[cols]).sum(axis=0).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Each row sums `width` products (the padding's are exact zeros)."""
    return int(args["width"])  # type: ignore[call-overload]


def bytes_moved(sizes: dict[str, int]) -> int:
    """cols and vals read once, y written once; x counted once (it is gathered)."""
    return 8 * sizes["width"] * sizes["n"] + 4 * sizes["n"] + 4 * sizes["ncols"]
