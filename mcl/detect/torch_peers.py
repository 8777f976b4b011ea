"""PyTorch on an NVIDIA GPU: the vendor's own peers of the GPU benchmarks (cuBLAS SGEMM,
the device-to-device copy), timed with CUDA events. Optional: without PyTorch or its
CUDA the GPU figures stand without a peer."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def cuda_torch() -> Any | None:
    """The torch module where it runs CUDA, else None."""
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def event_seconds(torch: Any, work: Callable[[], Any]) -> float:
    """Seconds of `work()` on the current CUDA stream, by CUDA events."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    work()
    end.record()
    end.synchronize()
    return max(float(start.elapsed_time(end)) * 1e-3, 1e-9)
