"""numpy reference for CSR sparse matrix times vector: y = A * x."""

from __future__ import annotations

import numpy as np

FUNCTION = "spmv"
SIZES = {"nrows": 29, "ncols": 23, "nnz": 97}
OUTPUTS = ("y",)
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    nrows, ncols, nnz = sizes["nrows"], sizes["ncols"], sizes["nnz"]
    if not 0 <= nnz <= nrows * ncols:
        raise ValueError(f"nnz = {nnz} must lie between 0 and nrows * ncols = {nrows * ncols}")
    # nnz distinct positions, in row-major order: CSR needs the entries sorted by row.
    flat = np.sort(rng.choice(nrows * ncols, size=nnz, replace=False))
    rows, cols = np.divmod(flat, ncols)
    rowptr = np.zeros(nrows + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=nrows), out=rowptr[1:])
    return {
        "nrows": nrows,
        "ncols": ncols,
        "nnz": nnz,
        "y": np.zeros(nrows, dtype=np.float32),
        "rowptr": rowptr,
        "cols": cols.astype(np.int32),
        "vals": rng.uniform(-1.0, 1.0, nnz).astype(np.float32),
        "x": rng.uniform(-1.0, 1.0, ncols).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    nrows, ncols = int(args["nrows"]), int(args["ncols"])  # type: ignore[call-overload]
    rowptr = np.asarray(args["rowptr"])
    dense = np.zeros((nrows, ncols))
    rows = np.repeat(np.arange(nrows), np.diff(rowptr))
    dense[rows, np.asarray(args["cols"])] = np.asarray(args["vals"], dtype=np.float64)
    return {"y": (dense @ np.asarray(args["x"], dtype=np.float64)).astype(np.float32)}


def flops(sizes: dict[str, int]) -> int:
    """A multiply and an add per non-zero."""
    return 2 * sizes["nnz"]
