"""Histogram of 256 buckets (the paper's section 7): counts of the values of an h x w
image of int32 values in [0, 256)."""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.apps import Peer

NAME = "histogram"
UNIT = "GB/s"
BUCKETS = 256


def sizes(device_type: str) -> list[dict[str, int]]:
    """16384 x 16384 values on a GPU (the paper's GPU size), 2^24 values on the CPU (the
    paper's Xeon Phi size, as 4096 x 4096)."""
    if device_type == "gpu":
        return [{"h": 16384, "w": 16384}]
    return [{"h": 4096, "w": 4096}]


def work(defines: dict[str, int]) -> dict[str, float]:
    """A compare-and-add per value; every value read once (4 B), the histogram written."""
    n = defines["h"] * defines["w"]
    return {"flop": float(n), "bytes": 4.0 * n + 4.0 * BUCKETS}


def _numpy(args: dict[str, object]) -> Callable[[], object]:
    import numpy as np

    image = np.asarray(args["image"]).ravel()
    return lambda: np.bincount(image, minlength=BUCKETS).astype(np.int32)


def _bincount(args: dict[str, object]) -> Callable[[], object]:
    import torch

    image = torch.from_numpy(args["image"]).cuda().reshape(-1)  # type: ignore[arg-type]
    return lambda: torch.bincount(image, minlength=BUCKETS)


def _histc(args: dict[str, object]) -> Callable[[], object]:
    """torch.histc counts floats: the image as float32 (converted once, outside the
    timing), 256 bins over [0, 256)."""
    import torch

    image = torch.from_numpy(args["image"]).cuda().reshape(-1).float()  # type: ignore[arg-type]
    return lambda: torch.histc(image, bins=BUCKETS, min=0, max=BUCKETS)


def peers(device_type: str) -> list[Peer]:
    if device_type == "gpu":
        return [Peer("torch.bincount (CUB)", _bincount),
                Peer("torch.histc (float input)", _histc)]
    return [Peer("numpy.bincount", _numpy)]
