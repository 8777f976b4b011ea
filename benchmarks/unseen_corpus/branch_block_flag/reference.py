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


def _constant(name: str) -> int:
    return int(re.search(rf"^const int {name} = (\d+);", _KERNEL, re.M)[1])  # type: ignore[index]


NR_THREADS = _constant("NR_WARPS") * _constant("WARP_SIZE")
ITER = _constant("ITER")
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
    y = x.copy()
    acc = x[heavy]  # the recurrence on the flagged blocks' elements only
    for _ in range(ITER):
        acc = acc * C + x[heavy]
    y[heavy] = acc
    return {"y": y.astype(np.float32)}


def error_bound(args: dict[str, object], outputs: dict[str, np.ndarray]) -> dict[str, float]:
    """The recurrence's rounding: each step adds at most 2 u |acc|, |acc| <= 2 |x| <= 2,
    damped by c = 0.5 per step: below 4 * 2 * 2 u (2 u per step, geometric sum 2)."""
    return {"y": 16 * 2.0**-24 * 2}


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read and y written once."""
    return 8 * sizes["n"]
