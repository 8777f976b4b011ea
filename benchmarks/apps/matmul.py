"""Matrix multiplication (the paper's section 5): c = a · b, n = m = p."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "matmul"
UNIT = "GFLOP/s"


def sizes(device_type: str) -> list[dict[str, int]]:
    """4096³ on a GPU (docs/performance.md's GPU figures), 2048³ on the CPU."""
    n = 4096 if device_type == "gpu" else 2048
    return [{"n": n, "m": n, "p": n}]


def work(defines: dict[str, int]) -> dict[str, float]:
    n, m, p = defines["n"], defines["m"], defines["p"]
    return {"flop": 2.0 * n * m * p, "bytes": 4.0 * (n * p + p * m + n * m)}


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np

    a, b = np.asarray(args["a"]), np.asarray(args["b"])
    return lambda: a @ b


def _cublas(args: dict[str, object]) -> Callable[[], object]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # FP32, as the kernels compute
    a = torch.from_numpy(args["a"]).cuda()  # type: ignore[arg-type]
    b = torch.from_numpy(args["b"]).cuda()  # type: ignore[arg-type]
    c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device="cuda")
    return lambda: torch.matmul(a, b, out=c)


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("cuBLAS SGEMM (torch, no TF32)", _cublas)]
    return [Peer("numpy a @ b (OpenBLAS)", _numpy)]
