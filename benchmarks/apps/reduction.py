"""Sum reduction, first pass: partial sums of x over chunks of `chunk` elements
(kernels/reduction/reference.py). Bandwidth-bound: the figure is GB/s (x read once, the
partial sums written once) and its share of the copy bandwidth measured in the same run
(the goal of docs/performance.md: 85%)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "reduction"
UNIT = "GB/s"


def sizes(device_type: str) -> list[dict[str, int]]:
    """2^28 floats (1 GiB) in chunks of 2^14 on a GPU (16384 blocks); 2^25 (128 MiB) in
    chunks of 2^16 on the CPU (512 chunks for its cores)."""
    if device_type == "gpu":
        return [{"n": 2**28, "chunk": 2**14}]
    return [{"n": 2**25, "chunk": 2**16}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """An add per element; x read once, each partial sum written once."""
    n, chunk = defines["n"], defines["chunk"]
    return {"flop": float(n), "bytes": 4.0 * n + 4.0 * -(-n // chunk)}


def _padded(args: dict[str, object]) -> tuple[object, int]:
    """x with zeros up to a whole number of chunks (none at the sizes above)."""
    import numpy as np

    x, chunk = np.asarray(args["x"]), int(args["chunk"])  # type: ignore[call-overload]
    rest = -x.size % chunk
    return (np.concatenate([x, np.zeros(rest, x.dtype)]) if rest else x), chunk


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np

    x, chunk = _padded(args)
    rows = np.asarray(x).reshape(-1, chunk)
    return lambda: rows.sum(axis=1)


def _torch(args: dict[str, object]) -> Callable[[], object]:
    import torch

    x, chunk = _padded(args)
    rows = torch.from_numpy(x).cuda().view(-1, chunk)  # type: ignore[arg-type]
    return lambda: rows.sum(dim=1)


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("torch x.view(-1, chunk).sum(1)", _torch)]
    return [Peer("numpy x.reshape(-1, chunk).sum(1)", _numpy)]
