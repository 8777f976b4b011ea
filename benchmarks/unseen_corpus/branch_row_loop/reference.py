"""numpy reference for the CSR-like row loops of the unseen corpus (hopper.mcpl): per
row, the sum and the count of its positive values. Rows hold 0 to 2 * nnz / nrows
values (uneven lengths: the loops of a warp end at different trips)."""

from __future__ import annotations

import numpy as np

FUNCTION = "rowsums"
SIZES = {"nrows": 300, "nnz": 2400}
OUTPUTS = ("sums", "counts")


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nrows, nnz = sizes["nrows"], sizes["nnz"]
    cuts = np.sort(rng.integers(0, nnz + 1, nrows - 1))
    rowptr = np.concatenate(([0], cuts, [nnz])).astype(np.int32)
    return {"nrows": nrows, "nnz": nnz, "sums": np.zeros(nrows, dtype=np.float32),
            "counts": np.zeros(nrows, dtype=np.int32), "rowptr": rowptr,
            "val": rng.uniform(-1.0, 1.0, nnz).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    rowptr = np.asarray(args["rowptr"])
    val = np.asarray(args["val"], dtype=np.float64)
    positive = np.where(val > 0.0, val, 0.0)
    ends = np.concatenate(([0.0], np.cumsum(positive)))
    counted = np.concatenate(([0], np.cumsum(val > 0.0)))
    return {"sums": (ends[rowptr[1:]] - ends[rowptr[:-1]]).astype(np.float32),
            "counts": (counted[rowptr[1:]] - counted[rowptr[:-1]]).astype(np.int32)}


def error_terms(args: dict[str, object]) -> dict[str, object]:
    """A row's sum adds its values; the counts are exact."""
    return {"sums": np.diff(np.asarray(args["rowptr"])), "counts": 0}


def bytes_moved(sizes: dict[str, int]) -> int:
    """rowptr and val read once, sums and counts written once."""
    return 4 * (sizes["nrows"] + 1) + 4 * sizes["nnz"] + 8 * sizes["nrows"]
