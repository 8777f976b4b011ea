"""numpy reference for the per-block flag of the unseen corpus (hopper.mcpl): y = x where
the block's flag is clear, else ITER steps of y = y * c + x from y = x; a flag per block
of NR_THREADS elements."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

FUNCTION = "flagged"
SIZES = {"n": 1000}
OUTPUTS = ("y",)
_KERNEL = (Path(__file__).parent / "hopper.mcpl").read_text(encoding="utf-8")
NR_THREADS = 8 * 32
ITER = int(re.search(r"^const int ITER = (\d+);", _KERNEL, re.M)[1])  # type: ignore[index]
C = 0.5  # |c| < 1: the recurrence converges, its rounding error stays small


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    nb = -(-n // NR_THREADS)
    flags = np.zeros(nb, dtype=np.int32)
    flags[1::16] = 1  # one block in 16 takes the heavy branch
    return {"n": n, "c": np.float32(C), "y": np.zeros(n, dtype=np.float32),
            "x": rng.uniform(-1.0, 1.0, n).astype(np.float32), "flags": flags}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    x = np.asarray(args["x"], dtype=np.float64)
    heavy = np.repeat(np.asarray(args["flags"]) != 0, NR_THREADS)[: x.size]
    acc = x.copy()
    for _ in range(ITER):
        acc = acc * C + x
    return {"y": np.where(heavy, acc, x).astype(np.float32)}


def error_bound(args: dict[str, object], outputs: dict[str, np.ndarray]) -> dict[str, float]:
    """The recurrence's rounding: each step adds at most 2 u |acc|, |acc| <= 2 |x| <= 2,
    damped by c = 0.5 per step: below 4 * 2 * 2 u (2 u per step, geometric sum 2)."""
    return {"y": 16 * 2.0**-24 * 2}


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read and y written once."""
    return 8 * sizes["n"]
