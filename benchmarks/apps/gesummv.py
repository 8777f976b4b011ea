"""gesummv (PolyBench; the paper's section 7): y = alpha A x + beta B x, n x n matrices.

Bandwidth-bound: every element of A and B is used once, so the figure is GB/s (the two
matrices, x and y) and its share of the copy bandwidth measured in the same run."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "gesummv"
UNIT = "GB/s"


def sizes(device_type: str) -> list[dict[str, int]]:
    """The paper's 4096 and PolyBench's large 8192, on both device types."""
    return [{"n": 4096}, {"n": 8192}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """Two multiply-adds per matrix element and 3 operations per row (reference.flops);
    the bytes of A, B, x and y, each moved once."""
    n = defines["n"]
    return {"flop": 4.0 * n * n + 3.0 * n, "bytes": 4.0 * (2 * n * n + 2 * n)}


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np

    a, b, x = (np.asarray(args[k]) for k in ("a", "b", "x"))
    alpha, beta = np.float32(args["alpha"]), np.float32(args["beta"])  # type: ignore[arg-type]
    return lambda: alpha * (a @ x) + beta * (b @ x)


def _cublas(args: dict[str, object]) -> Callable[[], object]:
    """Two cuBLAS SGEMV (torch.mv) and the axpby, into preallocated vectors."""
    import torch

    a, b, x = (torch.from_numpy(args[k]).cuda() for k in ("a", "b", "x"))  # type: ignore[arg-type]
    alpha, beta = float(args["alpha"]), float(args["beta"])  # type: ignore[arg-type]
    y = torch.empty_like(x)
    bx = torch.empty_like(x)

    def run() -> object:
        torch.mv(a, x, out=y)
        torch.mv(b, x, out=bx)
        return y.mul_(alpha).add_(bx, alpha=beta)

    return run


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("cuBLAS 2x SGEMV + axpby (torch)", _cublas)]
    return [Peer("numpy a @ x, b @ x (OpenBLAS)", _numpy)]
