"""numpy reference for convolution (paper Fig. 16): b[i, j] is the mean over the
fh x fw window at (i, j) of a, weighted by the filter f."""

from __future__ import annotations

import numpy as np

FUNCTION = "convolution"
SIZES = {"h": 17, "w": 21, "fh": 3, "fw": 5}
OUTPUTS = ("b",)


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    h, w, fh, fw = sizes["h"], sizes["w"], sizes["fh"], sizes["fw"]
    return {
        "h": h,
        "w": w,
        "fh": fh,
        "fw": fw,
        "b": np.zeros((h, w), dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (h + fh - 1, w + fw - 1)).astype(np.float32),
        "f": rng.uniform(-1.0, 1.0, (fh, fw)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    h, w, fh, fw = (int(args[k]) for k in ("h", "w", "fh", "fw"))  # type: ignore[call-overload]
    a = np.asarray(args["a"], dtype=np.float64)
    f = np.asarray(args["f"], dtype=np.float64)
    total = np.zeros((h, w))
    for y in range(fh):
        for x in range(fw):
            total += f[y, x] * a[y : y + h, x : x + w]
    return {"b": (total / (fh * fw)).astype(np.float32)}


def error_terms(args: dict[str, object]) -> int:
    """A float32 dot product of fh * fw filter taps, then one division."""
    return int(args["fh"]) * int(args["fw"]) + 1  # type: ignore[call-overload]


def flops(sizes: dict[str, int]) -> int:
    """A multiply and an add per filter tap, one division per output element."""
    h, w = sizes["h"], sizes["w"]
    return h * w * (2 * sizes["fh"] * sizes["fw"] + 1)
