"""The applications of the paper's Table IV, one module each, read by
benchmarks/applications.py (every module in this folder is one application).

A module defines:

    NAME: str                                   kernels/<NAME>/ holds series.toml and reference.py
    UNIT: str                                   "GFLOP/s" or "GB/s": the primary figure
    def sizes(device_type) -> list[dict[str, int]]      the paper's sizes on "gpu" / "cpu"
    def work(defines) -> {"flop": ..., "bytes": ...}    the minimal work and traffic of one run
    def peers(device_type) -> list[Peer]                the best known implementations
    INPUTS: tuple[str | None, ...]              optional: the input kinds, one row each
                                                (None: reference.py's `inputs`; "powerlaw":
                                                its `powerlaw_inputs`); default (None,)

A peer's `prepare(args)` gets the reference.py inputs (numpy arrays and ints), moves them
where the peer needs them (torch cuda tensors, cupy arrays) and returns a callable that
does one run. The framework times that callable (CUDA events on a GPU, wall time on a CPU)
and, when it returns an array, checks it against the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Peer:
    name: str
    prepare: Callable[[dict[str, object]], Callable[[], object]]
