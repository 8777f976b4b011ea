"""The shared memory a block of a leaf may have, for `mcl tune`'s filter of configurations
(mcl.tune.space.description_problems): the capacity the description states, less what
the leaf's allocation rules take, by the rule the check's refusal uses
(mcl.feedback.occupancy.shared_per_block; `mcpl-block-resources`, docs/checker.md).

Allocation rules are not properties the description language can state; the leaf's
feedback functions hold them (hwdescs/hopper_feedback.py: 128 B units, 1,024 B reserved
for every block, cudaDeviceProp.reservedSharedMemPerBlock) as `SHARED_ALLOCATION_UNIT`
and `SHARED_RESERVED_PER_BLOCK`, the constants its occupancy function hands the
multiprocessor. A leaf without such a module, or without those constants, reserves
nothing: its capacity is the limit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mcl.feedback.analyses.functions import ModuleLoadError, candidate_modules, load_module
from mcl.feedback.occupancy import SmResources, shared_per_block

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription


def shared_bytes_per_block(hwd: HardwareDescription, capacity: int) -> int:
    """The most shared memory one block may have at `hwd`, whose shared memory holds
    `capacity` bytes."""
    unit, reserved = 1, 0
    for path in candidate_modules(hwd, None):
        if not path.is_file():
            continue
        try:
            module = load_module(path)
        except ModuleLoadError:
            continue
        unit = int(getattr(module, "SHARED_ALLOCATION_UNIT", 1))
        reserved = int(getattr(module, "SHARED_RESERVED_PER_BLOCK", 0))
        break
    most = shared_per_block(SmResources(
        block_slots=math.inf, thread_slots=math.inf, registers=math.inf,
        shared_bytes=capacity, shared_unit=unit, shared_reserved=reserved))
    return int(most)


def local_memory_problem(hwd: HardwareDescription, local_bytes: int, capacity: int
                         ) -> str | None:
    """Why a work-group with `local_bytes` of local (shared) memory cannot start at `hwd`,
    whose shared memory holds `capacity` bytes; None where it can."""
    most = shared_bytes_per_block(hwd, capacity)
    if local_bytes <= most:
        return None
    of = f" of its {capacity}" if most != capacity else ""
    return (f"{local_bytes} bytes of local memory per work-group; {hwd.name} gives one "
            f"work-group at most {most}{of}")
