"""What NVIDIA publishes per compute capability and no device query returns: the lanes
of an SM, its processing blocks and load/store units, its float64 rate and its combined
L1/shared-memory store. Sources: the CUDA C++ Programming Guide (technical specifications
and arithmetic-instruction throughput tables, per compute capability) and NVIDIA's
architecture whitepapers (Volta, Turing, Ampere, Ada, Hopper). The query figures (SMs,
clocks, shared memory, registers, L2) come from the device; these only fill the gaps.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SmSpec:
    architecture: str
    fp32_lanes: int          # FP32 results per clock per SM (the "CUDA cores")
    fp64_per_clock: int      # FP64 results per clock per SM
    l1_shared_kb: int        # the unified L1 + shared-memory store of an SM
    max_shared_kb: int       # the most of it shared memory can take
    threads_per_sm: int
    blocks_per_sm: int
    partitions: int = 4      # processing blocks (sub-cores) of an SM since Volta
    lsus: int = 32           # load/store units per SM (8 per processing block)


SPECS: dict[tuple[int, int], SmSpec] = {
    (7, 0): SmSpec("Volta", 64, 32, 128, 96, 2048, 32),
    (7, 5): SmSpec("Turing", 64, 2, 96, 64, 1024, 16),
    (8, 0): SmSpec("Ampere GA100", 64, 32, 192, 164, 2048, 32),
    (8, 6): SmSpec("Ampere GA10x", 128, 2, 128, 100, 1536, 16),
    (8, 9): SmSpec("Ada", 128, 2, 128, 100, 1536, 24),
    (9, 0): SmSpec("Hopper", 128, 64, 256, 228, 2048, 32),
}


def sm_spec(major: int, minor: int) -> tuple[SmSpec, str]:
    """The figures of compute capability major.minor and where they come from; an
    unlisted one takes the nearest listed one below it (or Volta's), and says so."""
    key = (major, minor)
    cc = f"{major}.{minor}"
    if key in SPECS:
        return SPECS[key], f"CUDA guide, compute capability {cc}"
    below = [k for k in SPECS if k <= key]
    nearest = max(below) if below else min(SPECS)
    near = f"{nearest[0]}.{nearest[1]}"
    return SPECS[nearest], f"assumed as compute capability {near} (no table for {cc})"
