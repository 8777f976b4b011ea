"""The resolved, typed model of a hardware description and its query API.

This module is the CONTRACT between the HDL loader (which builds these objects) and every
later pass (checker, translator, feedback, codegen), which only ask questions through it
(docs/architecture.md: "the hardware description is queried, not re-parsed").

Units are normalised at load time (`Quantity.unit`):
  capacity, cache_line_size -> "B"        bandwidth       -> "bit/s"
  latency                   -> "cycles" (or "s" when stated in seconds)
  clock_frequency           -> "Hz"       width           -> "bit"
  plain counts (nr_units, slots, nr_banks, op cost) -> ""
`unlimited` is `math.inf`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

from mcl.diagnostics import Span
from mcl.hdl.speed import compare_memories

UNLIMITED = math.inf
# bytes, for a cache whose description states no line size: the loader fills it in
# (mcl.hdl.build) and the time model assumes it; here, not in the loader, so that the
# model does not import the description parser (a check reads built descriptions)
DEFAULT_CACHE_LINE = 64
Number = Union[int, float]  # float only for math.inf or fractional values


@dataclass(frozen=True)
class Quantity:
    """A number with its unit (`8 cycles`, `48 kB`; no unit: "")."""

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
    """A memory space of a description (`global`, `shared`, ...)."""

    name: str
    default: bool
    read_only: bool
    scope: Scope  # the Parallelism root, ParGroup or ParUnit that declares it
    span: Span | None = None

    def __repr__(self) -> str:
        return f"MemorySpace({self.name!r} in {self.scope.name!r})"


@dataclass(eq=False)
class ParUnit:
    """A unit of a parallelism group (a thread, a warp) and the spaces it holds."""

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
        # a group has nr_units or max_nr_units (the builder checks it); the types allow neither
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

    def __repr__(self) -> str:
        return "Parallelism()"


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
    values: dict[str, Quantity | bool] = field(default_factory=dict)  # addressable: bool
    flags: set[str] = field(default_factory=set)
    args: dict[str, list[tuple]] = field(default_factory=dict)
    span: Span | None = None

    def __repr__(self) -> str:
        return f"{self.kind}({self.path!r})"

    def walk(self):
        """This node and every node below it, depth first (declaration order)."""
        yield self
        for child in self.children:
            yield from child.walk()

    def ancestors(self):
        """Enclosing nodes, innermost first."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    @property
    def depth(self) -> int:
        return sum(1 for _ in self.ancestors())

    def slots_for(self, unit: str) -> Number | None:
        """N of `slots(unit, N)` stated on this very node (summed if stated twice)."""
        found = [_number(a[1]) for a in self.args.get("slots", []) if len(a) == 2 and a[0] == unit]
        return sum(found) if found else None

    def count(self) -> Number:
        """nr_units / max_nr_units of a `_group` node (1 for anything else)."""
        for key in ("nr_units", "max_nr_units"):
            q = self.values.get(key)
            if isinstance(q, Quantity):
                return q.value
        return 1

    def copies(self) -> Number:
        """How many of this node the device has: the product of the counts of the groups
        around it (fermi's smp: 15; a simd_unit: its group's units times the smps)."""
        return product_of_counts(a.count() for a in self.ancestors()
                                 if a.kind.endswith("_group"))


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


# Device block kinds (hdl.md §3.3 and the paper's Fig. 5).
EXEC_KINDS = frozenset({
    "execution_group", "execution_unit", "simd_group", "simd_unit",
    "load_store_group", "load_store_unit",
})  # fmt: skip
# a load_store_group is a simd_group
LOCKSTEP_GROUP_KINDS = frozenset({"simd_group", "load_store_group"})
MEMORY_KINDS = frozenset({"memory", "cache"})


def _number(value: object) -> Number:
    if isinstance(value, Quantity):
        return value.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return value


def product_of_counts(values) -> Number:
    """The product of unit counts; 0 wins over unlimited (no NaN from 0 x inf)."""
    result: Number = 1
    for v in values:
        if v == 0:
            return 0
        result *= v
    return result


class HardwareDescription:
    """A resolved hardware description, built by mcl.hdl.build. The methods below are the
    query API every pass uses (see docs/hdl-api.md)."""

    name: str
    parent: str | None
    file: str
    parallelism: Parallelism
    device: DeviceNode  # the top-level `device NAME` block, references resolved

    def __init__(
        self,
        name: str,
        parent: str | None,
        file: str,
        parallelism: Parallelism,
        device: DeviceNode,
        blocks: dict[str, DeviceNode] | None = None,
        span: Span | None = None,
    ):
        self.name = name
        self.parent = parent
        self.file = file
        self.parallelism = parallelism
        self.device = device
        # Every top-level device-side block by name (also those only reused by other
        # descriptions), for value paths such as 'processors.processor.alus'.
        self.blocks: dict[str, DeviceNode] = dict(blocks or {})
        self.span = span  # the `hardware_description NAME;` header
        # The descriptions above this one by name, set by the library that built it: a
        # kernel at this level may read their constants (`gpu.hierarchy...` at nvidia).
        self.lineage: dict[str, HardwareDescription] = {}

    def description(self, name: str) -> HardwareDescription | None:
        """This description or the ancestor called `name` (None for any other name)."""
        return self if name == self.name else self.lineage.get(name)

    def __repr__(self) -> str:
        return f"HardwareDescription({self.name!r})"

    # -- parallelism hierarchy -------------------------------------------------------
    def par_groups(self) -> list[ParGroup]:
        """All par_groups, outermost first (a chain)."""
        chain: list[ParGroup] = []
        group = self.parallelism.inner
        while group is not None:
            chain.append(group)
            group = group.unit.inner if group.unit is not None else None
        return chain

    def par_group(self, name: str) -> ParGroup | None:
        return next((g for g in self.par_groups() if g.name == name), None)

    def par_unit(self, name: str) -> ParUnit | None:
        return next((g.unit for g in self.par_groups() if g.unit and g.unit.name == name), None)

    def par_units(self) -> list[ParUnit]:
        """All par_units, outermost first."""
        return [g.unit for g in self.par_groups() if g.unit is not None]

    def executing_unit(self) -> ParUnit:
        """The innermost par_unit: the only one that runs statements."""
        units = self.par_units()
        if not units:
            raise ValueError(f"hardware description '{self.name}' has no par_unit")
        return units[-1]

    def group_chain(self, unit: str) -> list[ParGroup]:
        """The par_groups around par_unit `unit` (its own group included), outermost first.
        fermi: group_chain('thread') == [blocks, warps, threads]."""
        chain: list[ParGroup] = []
        for group in self.par_groups():
            chain.append(group)
            if group.unit is not None and group.unit.name == unit:
                return chain
        raise KeyError(f"'{self.name}' has no par_unit '{unit}'")

    def memory_spaces(self) -> list[MemorySpace]:
        """All memory spaces, outermost scope first."""
        spaces = list(self.parallelism.spaces)
        for group in self.par_groups():
            spaces += group.spaces
            if group.unit is not None:
                spaces += group.unit.spaces
        return spaces

    def memory_space(self, name: str) -> MemorySpace | None:
        return next((s for s in self.memory_spaces() if s.name == name), None)

    def visible_spaces(self, scope: str | None = None) -> list[MemorySpace]:
        """Spaces visible inside the par_group/par_unit named `scope` (declared there or in
        any enclosing scope), outermost first. `scope=None` means the executing unit."""
        if scope is None:
            scope = self.executing_unit().name
        spaces = list(self.parallelism.spaces)
        if scope in ("parallelism", "hierarchy"):
            return spaces
        for group in self.par_groups():
            spaces += group.spaces
            if group.name == scope:
                return spaces
            if group.unit is not None:
                spaces += group.unit.spaces
                if group.unit.name == scope:
                    return spaces
        raise KeyError(f"'{self.name}' has no par_group or par_unit '{scope}'")

    def default_spaces(self) -> list[MemorySpace]:
        """Spaces flagged `default`, outermost first. Arrays/parameters default to the
        outermost, scalars to the innermost (hdl.md 3.2)."""
        return [s for s in self.memory_spaces() if s.default]

    def read_only_spaces(self) -> list[MemorySpace]:
        return [s for s in self.memory_spaces() if s.read_only]

    def shared_by(self, space: str) -> list[ParGroup]:
        """The par_groups whose units can communicate through `space`: those nested inside
        the scope declaring it (used for barrier checks and 'blocks cannot share local')."""
        ms = self.memory_space(space)
        if ms is None:
            return []
        chain = self.par_groups()
        scope = ms.scope
        if isinstance(scope, Parallelism):
            return chain
        if isinstance(scope, ParGroup):
            return chain[chain.index(scope):]
        return [g for g in chain if self._inside(g, scope)]

    @staticmethod
    def _inside(group: ParGroup, unit: ParUnit) -> bool:
        parent = group.parent
        while isinstance(parent, ParUnit):
            if parent is unit:
                return True
            parent = parent.group.parent
        return False

    # -- physical device ---------------------------------------------------------------
    def nodes(self) -> list[DeviceNode]:
        """Every block of the device, depth first in declaration order (the device first)."""
        return list(self.device.walk())

    def node(self, path: str) -> DeviceNode | None:
        """A device block by its path ('smps.smp.on_chip'), with or without the description
        or device name first, or by its name alone when that name is unique. Blocks of the
        device come first; then top-level blocks the device does not use."""
        parts = [p for p in path.removesuffix("[*]").split(".") if p]
        if len(parts) > 1 and parts[0] == self.name:
            parts = parts[1:]
        if not parts:
            return None
        found = self._in_device(parts)
        if found is None and len(parts) > 1:
            # A block reused from another description may name its blocks qualified by
            # that description ('accelerator.mem' in a reused pcie): read them as ours.
            found = self._in_device(parts[1:])
        if found is None and len(parts) == 1:
            named = [n for n in self.device.walk() if n.name == parts[0]]
            found = named[0] if len(named) == 1 else None
        if found is None and parts[0] in self.blocks:
            found = _descend(self.blocks[parts[0]], parts[1:])
        return found

    def _in_device(self, parts: list[str]) -> DeviceNode | None:
        found = _descend(self.device, parts)  # relative to the device: 'smps.smp.on_chip'
        if found is None and parts[0] == self.device.name:
            found = _descend(self.device, parts[1:])
        return found

    def _memory_info(self, node: DeviceNode) -> MemoryInfo:
        def num(key: str) -> Number | None:
            q = node.values.get(key)
            return q.value if isinstance(q, Quantity) else None

        addressable = node.values.get("addressable", True)
        return MemoryInfo(
            node=node,
            is_cache=node.kind == "cache",
            spaces=tuple(a[0] for a in node.args.get("space", []) if a),
            capacity=num("capacity"),
            line_size=num("cache_line_size"),
            nr_banks=num("nr_banks"),
            addressable=bool(addressable),
            resides_on=next((a for a in node.ancestors() if a.kind in EXEC_KINDS), None),
        )

    def memories_for(self, space: str) -> list[MemoryInfo]:
        """Memories and caches holding `space` (memory first, then caches inner to outer)."""
        holding = [m for m in self.memories() + self.caches() if space in m.spaces]
        mems = [m for m in holding if not m.is_cache]
        caches = sorted((m for m in holding if m.is_cache), key=lambda m: -m.node.depth)
        return mems + caches

    def memories(self) -> list[MemoryInfo]:
        return [self._memory_info(n) for n in self.device.walk() if n.kind == "memory"]

    def bounded_memory(self, space: str) -> MemoryInfo | None:
        """The memory (not a cache) that holds `space` with a stated, finite capacity: what
        bounds the bytes a kernel may keep in the space. None when no memory states one."""
        for memory in self.memories():
            if memory.is_cache or space not in memory.spaces or memory.capacity is None:
                continue
            if memory.capacity != UNLIMITED:
                return memory
        return None

    def caches(self) -> list[MemoryInfo]:
        return [self._memory_info(n) for n in self.device.walk() if n.kind == "cache"]

    def execution_units_for(self, unit: str) -> list[ExecUnitInfo]:
        """Execution units/groups that have `slots(unit, N)`, outermost first.
        fermi: execution_units_for('block') -> [smp with slots 8 and nr_units 15]."""
        found = []
        for node in self.device.walk():
            slots = node.slots_for(unit)
            if slots is None:
                continue
            # A lone load_store_unit (perfect's, one per core) does not run in lock-step with
            # anything; only a simd/load_store group, or a unit inside one, does.
            simd = node.kind in LOCKSTEP_GROUP_KINDS | {"simd_unit"} or any(
                a.kind in LOCKSTEP_GROUP_KINDS for a in node.ancestors()
            )
            found.append(ExecUnitInfo(node, slots, node.copies(), simd))
        return sorted(found, key=lambda info: info.node.depth)  # stable: declaration order

    def lockstep(self, unit: str) -> ParGroup | None:
        """If loads/stores of par_unit `unit` run in lock-step (a load/store unit inside a
        simd_group), the par_group whose units execute one load together (fermi:
        lockstep('thread') is the par_group `threads`, the 32 threads of a warp); else None."""
        chain = self.group_chain(unit)  # raises KeyError for an unknown unit
        enclosing = {g.unit.name: g for g in chain if g.unit is not None}
        for lsu in (n for n in self.device.walk() if n.kind == "load_store_unit"):
            if not self._runs(lsu, unit):
                continue
            # A lock-step group with group-wide slots for an enclosing par_unit P executes
            # one instruction for all units of the par_group directly inside P (a warp's
            # load/store group runs the 32 threads of the warp together).
            for group in (a for a in lsu.ancestors() if a.kind in LOCKSTEP_GROUP_KINDS):
                for arg in group.args.get("slots", []):
                    outer = enclosing.get(arg[0]) if arg else None
                    if outer is not None and outer.unit is not None and outer.unit.name != unit:
                        return outer.unit.inner
        return None

    @staticmethod
    def _runs(node: DeviceNode, unit: str) -> bool:
        """Does `node`, or a block inside or around it, have slots for `unit`?"""
        return any(n.slots_for(unit) is not None for n in (*node.walk(), *node.ancestors()))

    def _endpoint(self, name: str) -> DeviceNode | None:
        return self.node(name)

    def links(self) -> list[tuple[DeviceNode, DeviceNode, DeviceNode]]:
        """(interconnect, endpoint A, endpoint B) for every `connects(A, B)`; one stated in a
        load_store_group links through that group (as original MCL descriptions write it)."""
        result = []
        for ic in (n for n in self.device.walk() if n.kind in ("interconnect", "load_store_group")):
            for arg in ic.args.get("connects", []):
                if len(arg) != 2:
                    continue
                a, b = (self._endpoint(str(x)) for x in arg)
                if a is not None and b is not None:
                    result.append((ic, a, b))
        return result

    @staticmethod
    def _related(a: DeviceNode, b: DeviceNode) -> bool:
        return a is b or a in b.ancestors() or b in a.ancestors()

    def _as_memory(self, memory: str) -> DeviceNode | None:
        node = self.node(memory)
        if node is not None and node.kind in MEMORY_KINDS:
            return node
        held = self.memories_for(memory)  # a memory space name also identifies its memory
        return held[0].node if held else node

    def link(self, memory: str, exec_unit: str | None = None) -> Link | None:
        """Interconnect between memory `memory` and an execution unit (any if None)."""
        mem = self._as_memory(memory)
        if mem is None:
            return None
        target = self.node(exec_unit) if exec_unit is not None else None
        if exec_unit is not None and target is None:
            return None
        for ic, a, b in self.links():
            for here, there in ((a, b), (b, a)):
                if here is not mem:
                    continue
                if target is None and (there.kind in EXEC_KINDS or _contains_exec(there)):
                    return _link(ic)
                if target is not None and self._related(there, target):
                    return _link(ic)
        return None

    def host(self) -> DeviceNode | None:
        """The host device (a nested `device` block connected to device memory), if any."""
        for _, a, b in self.links():
            for dev, other in ((a, b), (b, a)):
                if dev.kind == "device" and dev is not self.device and other.kind in MEMORY_KINDS:
                    return dev
        return None

    def has_host(self) -> bool:
        """True when the device has a host device connected to device memory (transfers)."""
        return self.host() is not None

    def host_link(self) -> Link | None:
        host = self.host()
        if host is None:
            return None
        for ic, a, b in self.links():
            if host in (a, b) and (a.kind in MEMORY_KINDS or b.kind in MEMORY_KINDS):
                return _link(ic)
        return None

    def is_faster(self, space_a: str, space_b: str) -> bool:
        """Paper 6.3: is the memory holding space_a faster than the one holding space_b?
        Compare interconnect bandwidth/latency, then proximity to execution units, then
        capacity (smaller is faster)."""
        return compare_memories(self, space_a, space_b) > 0

    def feedback_functions(self) -> list[tuple[str, DeviceNode]]:
        """Names given by performance_feedback("NAME") with the block that names them."""
        return [
            (str(arg[0]), node)
            for node in self.device.walk()
            for arg in node.args.get("performance_feedback", [])
            if arg
        ]

    def value(self, path: str | tuple[str, ...]) -> Quantity | bool | str | None:
        """A property by qualified path, with or without the description name first:
        'gpu.hierarchy.blocks.block.threads.max_nr_units', 'smps.smp.on_chip.capacity'.
        Returns None when there is no such property."""
        parts = list(path.split(".") if isinstance(path, str) else path)
        if len(parts) > 2 and parts[0] == self.name:
            parts = parts[1:]
        if len(parts) < 2:
            return None
        *where, prop = parts
        if where[0] in ("hierarchy", "parallelism"):
            return self._hierarchy_value(where[1:], prop)
        node = self.node(".".join(where))
        if node is None:
            return None
        if prop in node.values:
            return node.values[prop]
        if prop in ("default", "read_only"):
            return prop in node.flags
        if prop == "performance_feedback" and node.args.get(prop):
            return str(node.args[prop][0][0])
        return None

    def hierarchy_at(self, where: Sequence[str]) -> Scope | MemorySpace | None:
        """What the path `where` below the hierarchy's root names (`blocks.block.threads`:
        a par_group; [] the root): a par_group or par_unit, or a memory space declared
        there as the path's last part; None when there is no such thing."""
        scope: Scope = self.parallelism
        for k, part in enumerate(where):
            nxt: Scope | None = None
            if isinstance(scope, (Parallelism, ParUnit)):
                if scope.inner is not None and scope.inner.name == part:
                    nxt = scope.inner
            elif scope.unit is not None and scope.unit.name == part:
                nxt = scope.unit
            if nxt is None:
                space = next((s for s in scope.spaces if s.name == part), None)
                return space if k == len(where) - 1 else None
            scope = nxt
        return scope

    def _hierarchy_value(self, where: list[str], prop: str) -> Quantity | bool | None:
        found = self.hierarchy_at(where)
        if isinstance(found, MemorySpace) and prop in ("default", "read_only"):
            return bool(getattr(found, prop))
        if isinstance(found, ParGroup):
            if prop == "nr_units" and found.nr_units is not None:
                return Quantity(found.nr_units)
            if prop == "max_nr_units" and found.max_nr_units is not None:
                return Quantity(found.max_nr_units)
        return None


def _descend(node: DeviceNode | None, parts: list[str]) -> DeviceNode | None:
    for part in parts:
        if node is None:
            return None
        node = next((c for c in node.children if c.name == part), None)
    return node


def _contains_exec(node: DeviceNode) -> bool:
    return any(n.kind in EXEC_KINDS for n in node.walk())


def _link(ic: DeviceNode) -> Link:
    lat, bw = ic.values.get("latency"), ic.values.get("bandwidth")
    return Link(
        node=ic,
        latency=lat if isinstance(lat, Quantity) else None,
        bandwidth=bw if isinstance(bw, Quantity) else None,
    )
