"""numpy reference for matmul (paper Fig. 2): c = a * b with a: n x p, b: p x m."""

from __future__ import annotations

import numpy as np

FUNCTION = "matmul"
# Small defaults that are deliberately not multiples of 16 or 32 (translated code must
# handle counts that do not divide the split sizes).
SIZES = {"n": 19, "m": 23, "p": 13}
OUTPUTS = ("c",)


def error_terms(args: dict[str, object]) -> int:
    """c[i, j] is a float32 dot product of length p: |error| <= gamma_p * sum_k |a[i,k] b[k,j]|
    in any order of the additions (Higham §3.1; docs/kernels.md)."""
    return int(args["p"])  # type: ignore[call-overload]


def inputs(sizes: dict[str, int], rng: np.random.Generator) -> dict[str, object]:
    n, m, p = sizes["n"], sizes["m"], sizes["p"]
    return {
        "n": n,
        "m": m,
        "p": p,
        "c": np.zeros((n, m), dtype=np.float32),
        "a": rng.uniform(-1.0, 1.0, (n, p)).astype(np.float32),
        "b": rng.uniform(-1.0, 1.0, (p, m)).astype(np.float32),
    }


def reference(args: dict[str, object]) -> dict[str, np.ndarray]:
    a = np.asarray(args["a"], dtype=np.float64)
    b = np.asarray(args["b"], dtype=np.float64)
    return {"c": (a @ b).astype(np.float32)}


# The peer `mcl report --run` times beside the versions on a CPU device (issue 17): numpy's
# float32 product, which calls the BLAS numpy was built with (OpenBLAS).
PEER = "numpy a @ b (float32, OpenBLAS)"


def peer(args: dict[str, object]) -> object:
    return np.asarray(args["a"]) @ np.asarray(args["b"])


def flops(sizes: dict[str, int]) -> int:
    """One multiply and one add per (i, j, k) (the paper's Table II: 2nmp)."""
    return 2 * sizes["n"] * sizes["m"] * sizes["p"]
