"""numpy reference for the 3-D seven-point stencils of the unseen corpus (hopper.mcpl):
on the interior points b = c0 * a + c1 * (the six neighbours); b elsewhere unchanged
(zero, as inputs() makes it)."""

from __future__ import annotations

import numpy as np

FUNCTION = "stencil"
SIZES = {"d": 5, "h": 19, "w": 45}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    d, h, w = sizes["d"], sizes["h"], sizes["w"]
    return {"d": d, "h": h, "w": w, "c0": np.float32(0.5), "c1": np.float32(0.125),
            "b": np.zeros((d, h, w), dtype=np.float32),
            "a": rng.uniform(-1.0, 1.0, (d, h, w)).astype(np.float32)}


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    c0, c1 = float(args["c0"]), float(args["c1"])  # type: ignore[arg-type]
    b = np.zeros_like(a)
    c = a[1:-1, 1:-1, 1:-1]
    neighbours = (a[:-2, 1:-1, 1:-1] + a[2:, 1:-1, 1:-1] + a[1:-1, :-2, 1:-1]
                  + a[1:-1, 2:, 1:-1] + a[1:-1, 1:-1, :-2] + a[1:-1, 1:-1, 2:])
    b[1:-1, 1:-1, 1:-1] = c0 * c + c1 * neighbours
    return {"b": b.astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """Seven products summed."""
    return 7


def bytes_moved(sizes: dict[str, int]) -> int:
    """a read once (the halo aside), b written once."""
    return 8 * sizes["d"] * sizes["h"] * sizes["w"]
