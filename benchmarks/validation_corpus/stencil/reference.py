"""numpy reference for the five-point stencil of the validation corpus (hopper.mcpl):
b = c0 * a + c1 * (the four neighbours of each element), elements outside a counted as
zeros."""

from __future__ import annotations

import numpy as np

FUNCTION = "stencil"
SIZES = {"h": 37, "w": 45}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    h, w = sizes["h"], sizes["w"]
    return {
        "h": h,
        "w": w,
        "c0": np.float32(0.5),
        "c1": np.float32(0.125),
        "b": np.zeros((h, w), dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (h, w)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    c0, c1 = float(args["c0"]), float(args["c1"])  # type: ignore[arg-type]
    padded = np.pad(a, 1)
    neighbours = padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
    return {"b": (c0 * a + c1 * neighbours).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Five products summed."""
    return 5


def bytes_moved(sizes: dict[str, int]) -> int:
    """a read once (the halo aside), b written once."""
    return 8 * sizes["h"] * sizes["w"]
