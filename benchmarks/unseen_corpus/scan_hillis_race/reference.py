"""numpy reference for the Hillis-Steele scan with a planted race (hopper.mcpl): what it
should compute, the inclusive prefix sums of x within each chunk of CHUNK elements;
CHUNK is read from the kernel."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

FUNCTION = "scan"
SIZES = {"n": 700}
OUTPUTS = ("y",)
_KERNEL = (Path(__file__).parent / "hopper.mcpl").read_text(encoding="utf-8")
CHUNK = int(re.search(r"^const int CHUNK = (\d+);", _KERNEL, re.M)[1])  # type: ignore[index]


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n = sizes["n"]
    return {"n": n, "y": np.zeros(n, dtype=np.float32),
            "x": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    n = int(args["n"])  # type: ignore[call-overload]
    x = np.zeros(-(-n // CHUNK) * CHUNK)
    x[:n] = np.asarray(args["x"], dtype=np.float64)
    return {"y": np.cumsum(x.reshape(-1, CHUNK), axis=1).reshape(-1)[:n].astype(np.float32)}


def error_terms(args: dict[str, object]) -> np.ndarray:
    """y[i] sums the k + 1 elements of its chunk up to i, k = i % CHUNK."""
    return np.arange(int(args["n"])) % CHUNK + 1  # type: ignore[call-overload]


def bytes_moved(sizes: dict[str, int]) -> int:
    """x read once, y written once."""
    return 8 * sizes["n"]
