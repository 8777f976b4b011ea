"""What the analyses ask the hardware description about memories: the caches that hold a
space (paper 6.4), the lock-step group the executing unit loads in (6.5: a warp), and a
faster space the units of a par_group could share (6.3). The cache, memory and irregular
analyses all ask these questions; one place answers them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcl.hdl.model import UNLIMITED

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription, MemoryInfo


def cached_spaces(hwd: HardwareDescription) -> dict[str, list[MemoryInfo]]:
    """Memory space -> the caches holding it, inner to outer."""
    result: dict[str, list[MemoryInfo]] = {}
    for space in hwd.memory_spaces():
        caches = [m for m in hwd.memories_for(space.name) if m.is_cache and m.line_size]
        if caches:
            result[space.name] = caches
    return result


def lockstep_group(hwd: HardwareDescription) -> tuple[str, int] | None:
    """(par_group, units) of the lock-step group the executing unit loads in, if any."""
    try:
        group = hwd.lockstep(hwd.executing_unit().name)
    except (KeyError, ValueError):
        return None
    if group is None or group.count in (None, UNLIMITED):
        return None
    return group.name, int(group.count)


def faster_space(hwd: HardwareDescription, group: str, current: str | None) -> str | None:
    """The fastest writable space visible to all units of `group` that is faster than
    `current`; None when there is none."""
    if current is None:
        return None
    candidates = [s.name for s in hwd.visible_spaces(group)
                  if s.name != current and not s.read_only and hwd.is_faster(s.name, current)]
    best = [c for c in candidates if not any(hwd.is_faster(o, c) for o in candidates if o != c)]
    return best[0] if best else None


def space_capacity(hwd: HardwareDescription, space: str) -> int | None:
    """Bytes of the memory (not a cache) that holds `space`, where the description states
    them (UNLIMITED and unstated give None: no limit to hold a proposal against)."""
    memory = hwd.bounded_memory(space)
    return int(memory.capacity) if memory is not None and memory.capacity is not None else None
