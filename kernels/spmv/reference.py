"""numpy reference for CSR sparse matrix times vector: y = A * x.

Inputs and reference work in memory proportional to nnz + nrows + ncols (never
nrows * ncols), so the paper's sizes build in seconds: `inputs` places the non-zeros
uniformly (row lengths multinomial, distinct columns per row), `powerlaw_inputs`
(`mcl run --inputs powerlaw`) gives a realistic matrix in the manner of the paper's Mip1
case: power-law row lengths (a few very long rows among many short ones) in a band
around the diagonal."""

from __future__ import annotations

import numpy as np

FUNCTION = "spmv"
SIZES = {"nrows": 29, "ncols": 23, "nnz": 97}
OUTPUTS = ("y",)
POWER_LAW_EXPONENT = 1.5  # Pareto tail of the row lengths: heavy, like Mip1's
# Entries of the scratch arrays `partial` (2 * PARTIALS floats) and `partialRow` (PARTIALS
# ints) that a version may use for sums between its kernels (hopper_v17, v20: the rows
# that cross blocks); not outputs, and a version must not rely on their contents on entry.
PARTIALS = 4096
# The inputs that a version may declare or leave out (every other input is a parameter of
# every version): the scratch arrays above.
SCRATCH = ("partial", "partialRow")


def _check(nrows: int, ncols: int, nnz: int) -> None:
    if min(nrows, ncols) < 1 or not 0 <= nnz <= nrows * ncols:
        raise ValueError(f"nnz = {nnz} must lie between 0 and nrows * ncols = {nrows * ncols}"
                         " (nrows, ncols >= 1)")


def _cap(lengths: np.ndarray, ncols: int, rng: np.random.Generator) -> np.ndarray:
    """Row lengths clipped to ncols, the excess moved to rows with room (keeps the sum)."""
    lengths = lengths.astype(np.int64)
    while (excess := int(np.maximum(lengths - ncols, 0).sum())) > 0:
        np.minimum(lengths, ncols, out=lengths)
        room = (ncols - lengths).astype(np.float64)
        lengths += rng.multinomial(excess, room / room.sum())
    return lengths


def _distinct_columns(lengths: np.ndarray, ncols: int, rng: np.random.Generator
                      ) -> np.ndarray:
    """For each row, `lengths[i]` distinct columns drawn uniformly, sorted within the row
    (CSR order). Rows fuller than half of ncols take a random permutation (their count
    times ncols is at most 2 nnz); the others draw columns and redraw duplicates."""
    nrows = lengths.size
    rows = np.repeat(np.arange(nrows, dtype=np.int64), lengths)
    cols = np.empty(rows.size, dtype=np.int64)
    dense = lengths > ncols // 2
    in_dense = dense[rows]
    if dense.any():
        full = lengths[dense]
        keys = np.argsort(rng.random((full.size, ncols)), axis=1)
        keys[np.arange(ncols)[None, :] >= full[:, None]] = ncols  # past the row's length
        cols[in_dense] = np.sort(keys, axis=1)[:, : int(full.max())][
            np.arange(int(full.max()))[None, :] < full[:, None]]
    sparse_rows = rows[~in_dense]
    key = np.sort(sparse_rows * ncols + rng.integers(0, ncols, sparse_rows.size))
    while (dup := np.flatnonzero(key[1:] == key[:-1]) + 1).size:
        key[dup] = (key[dup] // ncols) * ncols + rng.integers(0, ncols, dup.size)
        key.sort()
    cols[~in_dense] = key % ncols
    return cols


def _csr(nrows: int, ncols: int, lengths: np.ndarray, cols: np.ndarray,
         rng: np.random.Generator) -> dict[str, object]:
    nnz = int(lengths.sum())
    rowptr = np.zeros(nrows + 1, dtype=np.int32)
    np.cumsum(lengths, out=rowptr[1:])
    return {
        "nrows": nrows,
        "ncols": ncols,
        "nnz": nnz,
        "y": np.zeros(nrows, dtype=np.float32),
        "rowptr": rowptr,
        "cols": cols.astype(np.int32),
        "vals": rng.uniform(-1.0, 1.0, nnz).astype(np.float32),
        "x": rng.uniform(-1.0, 1.0, ncols).astype(np.float32),
        **scratch(),
    }


def scratch() -> dict[str, np.ndarray]:
    """The scratch arrays of a version's own use (PARTIALS), filled with values no
    version may rely on."""
    return {"partial": np.full(2 * PARTIALS, np.nan, dtype=np.float32),
            "partialRow": np.full(PARTIALS, -7, dtype=np.int32)}


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    """nnz non-zeros at uniformly random distinct positions."""
    nrows, ncols, nnz = sizes["nrows"], sizes["ncols"], sizes["nnz"]
    _check(nrows, ncols, nnz)
    lengths = _cap(rng.multinomial(nnz, np.full(nrows, 1.0 / nrows)), ncols, rng)
    return _csr(nrows, ncols, lengths, _distinct_columns(lengths, ncols, rng), rng)


def powerlaw_inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    """Power-law row lengths (Pareto, exponent POWER_LAW_EXPONENT), each row a contiguous
    run of columns placed near the diagonal: banded, with dense blocks and very uneven rows
    — the load imbalance a one-thread-per-row kernel meets on matrices such as Mip1."""
    nrows, ncols, nnz = sizes["nrows"], sizes["ncols"], sizes["nnz"]
    _check(nrows, ncols, nnz)
    weights = rng.pareto(POWER_LAW_EXPONENT, nrows) + 1.0
    share = weights / weights.sum() * nnz
    lengths = np.floor(share).astype(np.int64)
    remainder = nnz - int(lengths.sum())  # largest remainders get one more
    lengths[np.argsort(lengths - share)[:remainder]] += 1
    lengths = _cap(lengths, ncols, rng)
    diagonal = np.arange(nrows, dtype=np.int64) * ncols // nrows
    jitter = rng.integers(-8, 9, nrows)
    start = np.clip(diagonal - lengths // 2 + jitter, 0, ncols - lengths)
    rows = np.repeat(np.arange(nrows), lengths)
    rowptr = np.concatenate(([0], np.cumsum(lengths)))
    cols = start[rows] + (np.arange(rows.size) - rowptr[rows])
    return _csr(nrows, ncols, lengths, cols, rng)


INPUTS = {"powerlaw": powerlaw_inputs}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    """Per-row sums of vals * x[cols] in float64: O(nnz) time and memory."""
    nrows = int(args["nrows"])  # type: ignore[call-overload]
    rowptr = np.asarray(args["rowptr"])
    rows = np.repeat(np.arange(nrows), np.diff(rowptr))
    products = np.asarray(args["vals"], dtype=np.float64) * \
        np.asarray(args["x"], dtype=np.float64)[np.asarray(args["cols"])]
    return {"y": np.bincount(rows, weights=products, minlength=nrows).astype(np.float32)}


def error_terms(args: dict[str, object]) -> np.ndarray:
    """y[i] is a float32 dot product of its row's length: gamma_len per row (Higham §3.1)."""
    return np.diff(np.asarray(args["rowptr"]))


def flops(sizes: dict[str, int]) -> int:
    """A multiply and an add per non-zero."""
    return 2 * sizes["nnz"]


def bytes_moved(sizes: dict[str, int]) -> int:
    """vals and cols once, rowptr and y once, x at least once: the least traffic."""
    return 8 * sizes["nnz"] + 4 * (2 * sizes["nrows"] + 1 + sizes["ncols"])
