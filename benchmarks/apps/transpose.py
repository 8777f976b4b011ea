"""Matrix transpose b = a^T, a of n x m: pure data movement, so the figure is GB/s (a read
and b written once) and its share of the copy bandwidth measured in the same run (the
goal of docs/performance.md: 85%)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "transpose"
UNIT = "GB/s"


def sizes(device_type: str) -> list[dict[str, int]]:
    """16384 x 16384 (1 GiB per matrix) on a GPU, 4096 x 4096 (64 MiB) on the CPU: far
    beyond the caches on both."""
    if device_type == "gpu":
        return [{"n": 16384, "m": 16384}]
    return [{"n": 4096, "m": 4096}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """No arithmetic; every element read once and written once."""
    return {"flop": 0.0, "bytes": 8.0 * defines["n"] * defines["m"]}


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np

    a = np.asarray(args["a"])
    b = np.empty((a.shape[1], a.shape[0]), dtype=a.dtype)
    return lambda: np.copyto(b, a.T) or b


def _torch(args: dict[str, object]) -> Callable[[], object]:
    """torch's strided copy kernel into a preallocated tensor."""
    import torch

    a = torch.from_numpy(args["a"]).cuda()  # type: ignore[arg-type]
    b = torch.empty((a.shape[1], a.shape[0]), dtype=a.dtype, device=a.device)
    return lambda: b.copy_(a.t())


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("torch b.copy_(a.t())", _torch)]
    return [Peer("numpy copyto(b, a.T)", _numpy)]
