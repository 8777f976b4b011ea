"""The resolved, typed model of a hardware description and its query API.

This module is the CONTRACT between the HDL loader (which builds these objects) and every
later pass (checker, translator, feedback, codegen), which only ask questions through it
(ARCHITECTURE.md: "the hardware description is queried, not re-parsed").

Units are normalised at load time (`Quantity.unit`):
  capacity, cache_line_size -> "B"        bandwidth       -> "bit/s"
  latency                   -> "cycles" (or "s" when stated in seconds)
  clock_frequency           -> "Hz"       width           -> "bit"
  plain counts (nr_units, slots, nr_banks, op cost) -> ""
`unlimited` is `math.inf`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Union

from mcl.diagnostics import Span

UNLIMITED = math.inf
Number = Union[int, float]  # float only for math.inf or fractional values


@dataclass(frozen=True)
class Quantity:
    value: Number
    unit: str = ""

    @property
    def unlimited(self) -> bool:
        return self.value == math.inf

    def __str__(self) -> str:
        v = "unlimited" if self.unlimited else f"{self.value:g}"
        return f"{v} {self.unit}".strip()


# --------------------------------------------------------------------- parallelism hierarchy


@dataclass(eq=False)
class MemorySpace:
    name: str
    default: bool
    read_only: bool
    scope: Scope  # the Parallelism root, ParGroup or ParUnit that declares it
    span: Span | None = None

    def __repr__(self) -> str:
        return f"MemorySpace({self.name!r} in {self.scope.name!r})"


@dataclass(eq=False)
class ParUnit:
    name: str
    group: ParGroup  # the par_group holding this unit
    spaces: list[MemorySpace] = field(default_factory=list)
    inner: ParGroup | None = None  # nested par_group, None for the executing unit
    span: Span | None = None

    def __repr__(self) -> str:
        return f"ParUnit({self.name!r})"


@dataclass(eq=False)
class ParGroup:
    """A par_group. Exactly one of `nr_units` (exact) / `max_nr_units` (upper bound, may be
    UNLIMITED) is set. `parent` is the ParUnit around it, or the Parallelism root."""

    name: str
    parent: ParUnit | Parallelism
    nr_units: Number | None = None
    max_nr_units: Number | None = None
    unit: ParUnit | None = None  # set right after construction
    spaces: list[MemorySpace] = field(default_factory=list)
    span: Span | None = None

    @property
    def count(self) -> Number:
        """The number of units (exact or upper bound)."""
        return self.nr_units if self.nr_units is not None else self.max_nr_units  # type: ignore[return-value]

    @property
    def exact(self) -> bool:
        return self.nr_units is not None

    def __repr__(self) -> str:
        return f"ParGroup({self.name!r})"


@dataclass(eq=False)
class Parallelism:
    """The `parallelism hierarchy { ... }` block; Appendix A treats it as the top ParGroup
    named `parallelism`."""

    name: str = "parallelism"
    spaces: list[MemorySpace] = field(default_factory=list)
    inner: ParGroup | None = None
    span: Span | None = None


Scope = Union[Parallelism, ParGroup, ParUnit]

# --------------------------------------------------------------------- physical device


@dataclass(eq=False)
class DeviceNode:
    """A resolved device block: device, device_group/unit, memory, cache, interconnect,
    execution_group/unit, simd_group/unit, load_store_group/unit, instructions.

    `path` is the qualified name within its description (e.g. "smps.smp.on_chip").
    `values` holds valued properties (capacity, latency, ...) normalised to Quantity;
    `flags` holds flag properties; `args` holds argument properties in order, e.g.
    {"slots": [("block", 8), ("thread", 1024)], "space": [("shared",)],
     "connects": [("mem", "cores.core[*]")], "performance_feedback": [("shared_mem_parallelism",)],
     "op": [("+", 1), ("load", 1)]}. Argument values are str (names, '[*]' kept as suffix),
    int/float, or Quantity when a unit was given."""

    kind: str
    name: str
    path: str
    parent: DeviceNode | None
    children: list[DeviceNode] = field(default_factory=list)
    values: dict[str, Quantity] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    args: dict[str, list[tuple]] = field(default_factory=dict)
    span: Span | None = None

    def __repr__(self) -> str:
        return f"{self.kind}({self.path!r})"


@dataclass(frozen=True)
class MemoryInfo:
    """A memory or cache that holds a memory space."""

    node: DeviceNode
    is_cache: bool
    spaces: tuple[str, ...]
    capacity: Number | None  # bytes; UNLIMITED allowed; None when not stated
    line_size: Number | None  # bytes (caches)
    nr_banks: Number | None
    addressable: bool
    resides_on: DeviceNode | None  # execution unit/group it sits in (on-chip), or None


@dataclass(frozen=True)
class ExecUnitInfo:
    """An execution unit (or group) that runs a par_unit, with its slots for that unit."""

    node: DeviceNode
    slots: Number  # contexts for the par_unit on ONE such unit/group (UNLIMITED allowed)
    nr_units: Number  # how many of these units the device has in total (product of groups)
    simd: bool  # inside a simd_group (lock-step)


@dataclass(frozen=True)
class Link:
    """Interconnect properties between a memory and an execution unit."""

    node: DeviceNode
    latency: Quantity | None
    bandwidth: Quantity | None


# The result of Appendix A.2: list of (from ParGroup, [to ParGroups]) pairs, outermost first
# (index 0 is the (parallelism, [parallelism]) pair).
ParGroupMapping = list[tuple[Union[ParGroup, Parallelism], list[Union[ParGroup, Parallelism]]]]


class HardwareDescription:
    """A resolved hardware description. Implemented in mcl.hdl.resolve; the methods below
    are the query API every pass uses (see docs/hdl-api.md)."""

    name: str
    parent: str | None
    file: str
    parallelism: Parallelism
    device: DeviceNode  # the top-level `device NAME` block, references resolved

    # -- parallelism hierarchy -------------------------------------------------------
    def par_groups(self) -> list[ParGroup]:
        """All par_groups, outermost first (a chain)."""
        raise NotImplementedError

    def par_group(self, name: str) -> ParGroup | None:
        raise NotImplementedError

    def par_unit(self, name: str) -> ParUnit | None:
        raise NotImplementedError

    def executing_unit(self) -> ParUnit:
        """The innermost par_unit: the only one that runs statements."""
        raise NotImplementedError

    def group_chain(self, unit: str) -> list[ParGroup]:
        """The par_groups around par_unit `unit` (its own group included), outermost first.
        fermi: group_chain('thread') == [blocks, warps, threads]."""
        raise NotImplementedError

    def memory_spaces(self) -> list[MemorySpace]:
        """All memory spaces, outermost scope first."""
        raise NotImplementedError

    def memory_space(self, name: str) -> MemorySpace | None:
        raise NotImplementedError

    def visible_spaces(self, scope: str | None = None) -> list[MemorySpace]:
        """Spaces visible inside the par_group/par_unit named `scope` (declared there or in
        any enclosing scope), outermost first. `scope=None` means the executing unit."""
        raise NotImplementedError

    def default_spaces(self) -> list[MemorySpace]:
        """Spaces flagged `default`, outermost first. Arrays/parameters default to the
        outermost, scalars to the innermost (hdl.md 3.2)."""
        raise NotImplementedError

    def read_only_spaces(self) -> list[MemorySpace]:
        raise NotImplementedError

    def shared_by(self, space: str) -> list[ParGroup]:
        """The par_groups whose units can communicate through `space`: those nested inside
        the scope declaring it (used for barrier checks and 'blocks cannot share local')."""
        raise NotImplementedError

    # -- physical device ---------------------------------------------------------------
    def memories_for(self, space: str) -> list[MemoryInfo]:
        """Memories and caches holding `space` (memory first, then caches inner to outer)."""
        raise NotImplementedError

    def memories(self) -> list[MemoryInfo]:
        raise NotImplementedError

    def caches(self) -> list[MemoryInfo]:
        raise NotImplementedError

    def execution_units_for(self, unit: str) -> list[ExecUnitInfo]:
        """Execution units/groups that have `slots(unit, N)`, outermost first.
        fermi: execution_units_for('block') -> [smp with slots 8 and nr_units 15]."""
        raise NotImplementedError

    def lockstep(self, unit: str) -> ParGroup | None:
        """If loads/stores of par_unit `unit` run in lock-step (a load/store unit inside a
        simd_group), the par_group whose units execute one load together (fermi:
        lockstep('thread') is the par_group `threads`, the 32 threads of a warp); else None."""
        raise NotImplementedError

    def link(self, memory: str, exec_unit: str | None = None) -> Link | None:
        """Interconnect between memory `memory` and an execution unit (any if None)."""
        raise NotImplementedError

    def has_host(self) -> bool:
        """True when the device has a host device connected to device memory (transfers)."""
        raise NotImplementedError

    def host_link(self) -> Link | None:
        raise NotImplementedError

    def is_faster(self, space_a: str, space_b: str) -> bool:
        """Paper 6.3: is the memory holding space_a faster than the one holding space_b?
        Compare interconnect bandwidth/latency, then proximity to execution units, then
        capacity (smaller is faster)."""
        raise NotImplementedError

    def feedback_functions(self) -> list[tuple[str, DeviceNode]]:
        """Names given by performance_feedback("NAME") with the block that names them."""
        raise NotImplementedError

    def value(self, path: str | tuple[str, ...]) -> Quantity | bool | str | None:
        """A property by qualified path, with or without the description name first:
        'gpu.hierarchy.blocks.block.threads.max_nr_units', 'smps.smp.on_chip.capacity'.
        Returns None when there is no such property."""
        raise NotImplementedError
