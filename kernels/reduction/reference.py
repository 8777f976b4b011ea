"""numpy reference for reduction: the partial sums of x over chunks of `chunk` elements
(first pass of a two-pass sum; the last chunk may be short). Serves perfect.mcpl and
gpu_v1.mcpl alike: both have the same parameters."""

from __future__ import annotations

import numpy as np

FUNCTION = "reduction"
SIZES = {"n": 1000, "chunk": 37}
OUTPUTS = ("partial",)


def nr_chunks(sizes: dict[str, int]) -> int:
    return -(-sizes["n"] // sizes["chunk"])


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n, chunk = sizes["n"], sizes["chunk"]
    if chunk < 1:
        raise ValueError(f"chunk = {chunk} must be at least 1")
    return {
        "n": n,
        "chunk": chunk,
        "partial": np.zeros(nr_chunks(sizes), dtype=np.float32),
        "x": rng.uniform(-1.0, 1.0, n).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    n, chunk = int(args["n"]), int(args["chunk"])  # type: ignore[call-overload]
    x = np.asarray(args["x"], dtype=np.float64)
    padded = np.zeros(nr_chunks({"n": n, "chunk": chunk}) * chunk)
    padded[:n] = x
    return {"partial": padded.reshape(-1, chunk).sum(axis=1).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """partial[c] is a float32 sum of `chunk` values, in any order (a loop in perfect, a
    tree in gpu_v1): |error| <= gamma_(chunk-1) * sum |x| (Higham §4.2)."""
    return max(int(args["chunk"]) - 1, 1)  # type: ignore[call-overload]


def bytes_moved(sizes: dict[str, int]) -> int:
    """Every element read once, every partial sum written once."""
    return 4 * sizes["n"] + 4 * nr_chunks(sizes)
