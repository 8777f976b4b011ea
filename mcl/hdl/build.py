"""Build the typed model (mcl.hdl.model) from resolved blocks, checking the rules of
hdl.md §3.2–3.3 on the way: the shape of the parallelism hierarchy, the required
`device NAME` block, counts on every `_group`, names in `space(...)`, `slots(...)` and
`connects(...)`, cache line sizes, slots on every execution unit, a load/store unit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mcl.diagnostics import Diagnostic, Span, did_you_mean, error, warning
from mcl.hdl.model import (
    DEFAULT_CACHE_LINE,
    EXEC_KINDS,
    DeviceNode,
    HardwareDescription,
    MemorySpace,
    Parallelism,
    ParGroup,
    ParUnit,
    Quantity,
)
from mcl.hdl.resolve import Prop, RBlock
from mcl.hdl.syntax import HdlFile

HIERARCHY_KINDS = frozenset({"parallelism", "memory_space", "par_group", "par_unit"})
UNIT_KINDS = frozenset({"execution_unit", "simd_unit", "load_store_unit"})

# What may be written directly inside each hierarchy block (hdl.md §3.2).
_HIERARCHY_CHILDREN = {
    "parallelism": ("memory_space", "par_group"),
    "par_group": ("memory_space", "par_unit"),
    "par_unit": ("memory_space", "par_group"),
    "memory_space": (),
}
_HIERARCHY_PROPS = {
    "parallelism": (),
    "par_group": ("nr_units", "max_nr_units"),
    "par_unit": (),
    "memory_space": ("default", "read_only"),
}


_GROUP_KINDS = ("device_group", "execution_group", "simd_group", "load_store_group")
_MEMORY_KINDS = ("memory", "cache")
_SLOT_KINDS = (*EXEC_KINDS, "device", "device_group", "device_unit")
# Where each device-side property may be stated (hdl.md §3.3); unlisted: anywhere.
_DEVICE_PROPS: dict[str, tuple[str, ...]] = {
    "nr_units": _GROUP_KINDS,
    "max_nr_units": _GROUP_KINDS,
    "capacity": _MEMORY_KINDS,
    "cache_line_size": ("cache",),
    # on a cache: how long one atomic request to a line holds the next to the same line
    "atomic_interval": ("cache",),
    # on a cache: the rate at which it takes sectors a store writes only in part
    "partial_write_bandwidth": ("cache",),
    # on an interconnect: how sharply its latency grows with the load on the memory
    "latency_knee": ("interconnect",),
    "nr_banks": _MEMORY_KINDS,
    "addressable": _MEMORY_KINDS,
    "space": _MEMORY_KINDS,
    # on a device: what one kernel launch costs beyond its work (docs/hdl.md)
    "latency": (*_MEMORY_KINDS, "interconnect", "device"),
    "bandwidth": (*_MEMORY_KINDS, "interconnect"),
    "width": (*_MEMORY_KINDS, "interconnect"),
    # Original MCL descriptions also state the link of the load/store units to a memory
    # inside their load_store_group: read as an interconnect of its own (docs/hdl.md).
    "connects": ("interconnect", "load_store_group"),
    "slots": _SLOT_KINDS,
    "op": ("instructions",),
    "default": (),
    "read_only": (),
}


@dataclass
class Builder:
    """Builds one description; problems go to `diagnostics`."""

    source: HdlFile
    top: list[RBlock]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # DeviceNode hashes by identity (eq=False): node / (node, prop, i) -> Span
    _report: dict = field(default_factory=dict)
    _built_from: dict[DeviceNode, RBlock] = field(default_factory=dict)

    def build(self) -> HardwareDescription | None:
        name = self.source.name
        parallelism = self._parallelism()
        device = self._device_block()
        if parallelism is None or device is None:
            return None
        hierarchy = self._hierarchy(parallelism)
        root = self._device_node(device, None, device.name)
        blocks = {
            b.name: self._device_node(b, None, b.name)
            for b in self.top
            if b.kind not in HIERARCHY_KINDS
        }
        hwd = HardwareDescription(name, self.source.parent, self.source.file, hierarchy, root,
                                  blocks, self.source.name_span)
        self._check_device(hwd)
        return hwd

    # ------------------------------------------------------------------ top level

    def _parallelism(self) -> RBlock | None:
        found = [b for b in self.top if b.kind == "parallelism"]
        if not found:
            self._error("hdl-missing-parallelism",
                        f"'{self.source.name}' has no parallelism block",
                        self.source.name_span, "add `parallelism hierarchy { ... }`")
            return None
        for extra in found[1:]:
            self._error("hdl-duplicate-parallelism",
                        "a description has exactly one parallelism block", extra.where)
        if found[0].name != "hierarchy":
            self._error("hdl-parallelism-name",
                        f"the parallelism block must be named 'hierarchy', not '{found[0].name}'",
                        found[0].name_span,
                        "qualified names such as 'gpu.hierarchy.blocks' rely on it")
        return found[0]

    def _device_block(self) -> RBlock | None:
        name = self.source.name
        devices = [b for b in self.top if b.kind == "device"]
        named = [b for b in devices if b.name == name]
        if named:
            return named[0]
        if len(devices) == 1:
            # hdl.md §3.3: a leaf reusing its family's device name is accepted with a warning.
            self.diagnostics.append(warning(
                "hdl-device-name",
                f"the device block of '{name}' is named '{devices[0].name}'",
                devices[0].name_span,
                f"name it `device {name}` unless it deliberately reuses its family's name",
            ))
            return devices[0]
        hint = (f"found device blocks {', '.join(repr(d.name) for d in devices)}; one must be "
                f"named '{name}'") if devices else f"add `device {name} {{ ... }}`"
        self._error("hdl-missing-device", f"'{name}' has no `device {name}` block",
                    self.source.name_span, hint)
        return None

    # ------------------------------------------------------------------ hierarchy

    def _hierarchy(self, block: RBlock) -> Parallelism:
        root = Parallelism(span=block.name_span)
        self._check_shape(block)
        root.spaces = self._spaces(block, root)
        root.inner = self._inner_group(block, root)
        if root.inner is None:
            self._error("hdl-missing-par_group",
                        "the parallelism block declares no par_group", block.name_span,
                        "kernels need at least one par_group and its par_unit to run on")
        return root

    def _check_shape(self, block: RBlock) -> None:
        allowed = _HIERARCHY_CHILDREN.get(block.kind, ())
        for child in block.blocks:
            if child.kind not in allowed:
                where = (f"a {block.kind}" if block.kind != "parallelism"
                         else "the parallelism block")
                expected = " or ".join(allowed) if allowed else "no blocks"
                self._error("hdl-misplaced-block",
                            f"{child.kind} '{child.name}' is not allowed in {where}",
                            child.where, f"expected {expected}")
        props = _HIERARCHY_PROPS.get(block.kind, ())
        for prop in block.props:
            if prop.name not in props:
                self._error("hdl-misplaced-property",
                            f"property '{prop.name}' is not allowed in {block.kind} '{block.name}'",
                            prop.span,
                            ("expected " + " or ".join(props)) if props else None)

    def _spaces(self, block: RBlock, scope) -> list[MemorySpace]:
        spaces = []
        for b in block.blocks:
            if b.kind == "memory_space":
                self._check_shape(b)
                flags = {p.name for p in b.props if p.kind == "flag"}
                spaces.append(MemorySpace(b.name, "default" in flags, "read_only" in flags,
                                          scope, b.name_span))
        return spaces

    def _inner_group(self, block: RBlock, parent: Parallelism | ParUnit) -> ParGroup | None:
        groups = [b for b in block.blocks if b.kind == "par_group"]
        for extra in groups[1:]:
            self._error("hdl-second-par_group",
                        f"a second par_group '{extra.name}' in one scope; par_groups form a chain",
                        extra.where, f"nest it inside the par_unit of '{groups[0].name}'")
        return self._group(groups[0], parent) if groups else None

    def _group(self, block: RBlock, parent: Parallelism | ParUnit) -> ParGroup:
        self._check_shape(block)
        exact, bound = self._count(block)
        group = ParGroup(block.name, parent, nr_units=exact, max_nr_units=bound,
                         span=block.name_span)
        group.spaces = self._spaces(block, group)
        units = [b for b in block.blocks if b.kind == "par_unit"]
        if not units:
            self._error("hdl-missing-par_unit",
                        f"par_group '{block.name}' holds no par_unit", block.where,
                        "a par_group holds exactly one par_unit")
            return group
        for extra in units[1:]:
            self._error("hdl-second-par_unit",
                        f"par_group '{block.name}' holds a second par_unit '{extra.name}'",
                        extra.where, "a par_group holds exactly one par_unit")
        ublock = units[0]
        self._check_shape(ublock)
        unit = ParUnit(ublock.name, group, span=ublock.name_span)
        unit.spaces = self._spaces(ublock, unit)
        unit.inner = self._inner_group(ublock, unit)
        group.unit = unit
        return group

    def _count(self, block: RBlock) -> tuple[float | int | None, float | int | None]:
        """(nr_units, max_nr_units) of a `_group` block; exactly one must be stated."""
        exact = _valued(block, "nr_units")
        bound = _valued(block, "max_nr_units")
        if exact is None and bound is None:
            self._error("hdl-missing-count",
                        f"{block.kind} '{block.name}' states neither nr_units nor max_nr_units",
                        block.where, "add `nr_units = N;` (exact) or `max_nr_units = N;` (bound)")
            return None, 1
        if exact is not None and bound is not None:
            self._error("hdl-two-counts",
                        f"{block.kind} '{block.name}' states both nr_units and max_nr_units",
                        block.where, "keep one: nr_units is exact, max_nr_units an upper bound")
            return exact, None
        return exact, bound

    # ------------------------------------------------------------------ device

    def _device_node(self, block: RBlock, parent: DeviceNode | None, path: str,
                     report: Span | None = None) -> DeviceNode:
        node = DeviceNode(block.kind, block.name, path, parent, span=block.name_span)
        # Report problems where the user can fix them in THIS file: a block copied from
        # another description is reported at the reference statement that brought it in.
        mine = block.origin == self.source.name
        if block.via is not None and block.via.file == self.source.file:
            report = block.via
        here = block.name_span if mine or report is None else report
        self._report[node] = here
        self._built_from[node] = block
        for prop in block.props:
            if prop.kind == "flag":
                node.flags.add(prop.name)
                self._report[(node, prop.name, 0)] = prop.span if mine else here
            elif prop.kind == "valued":
                # a "valued" property holds a Quantity or a bool (`Prop.value` is typed for every
                # kind: `object`)
                node.values[prop.name] = prop.value  # type: ignore[assignment]
                self._report[(node, prop.name, 0)] = prop.span if mine else here
            else:
                args = node.args.setdefault(prop.name, [])
                self._report[(node, prop.name, len(args))] = prop.span if mine else here
                # an "arg" property holds a tuple of ArgValue (`Prop.value` is `object`)
                args.append(tuple(prop.value))  # type: ignore[arg-type]
        # Paths are relative to the device (or to the top-level block): 'smps.smp.on_chip'.
        for child in block.blocks:
            child_path = child.name if parent is None else f"{path}.{child.name}"
            node.children.append(self._device_node(child, node, child_path, report))
        return node

    def _check_device(self, hwd: HardwareDescription) -> None:
        used = {self._built_from[n].span for n in hwd.device.walk()}
        trees = [hwd.device] + [
            t for t in hwd.blocks.values() if self._built_from[t].span not in used
        ]
        for tree in trees:
            for node in tree.walk():
                self._check_node(hwd, node)
        if not any(n.kind == "load_store_unit" for n in hwd.device.walk()):
            # The paper (4.2) says every description has one, but its own figures leave it
            # out ("not shown"), and they must load unchanged: a warning, not an error.
            self.diagnostics.append(warning(
                "hdl-missing-load-store", f"the device of '{hwd.name}' has no load_store_unit",
                self._report[hwd.device],
                "the feedback on memory accesses needs one (the paper's section 4.2)"))

    def _check_node(self, hwd: HardwareDescription, node: DeviceNode) -> None:
        where = self._report[node]
        if node.kind in HIERARCHY_KINDS:
            self._error("hdl-misplaced-block",
                        f"{node.kind} '{node.name}' belongs in the parallelism block, "
                        "not in the device", where)
            return
        for prop in [*node.values, *node.flags, *node.args]:
            allowed = _DEVICE_PROPS.get(prop)
            if allowed is not None and node.kind not in allowed:
                on = ", ".join(sorted(set(allowed))) if allowed else "memory_space blocks only"
                self._error("hdl-misplaced-property",
                            f"property '{prop}' is not allowed in {node.kind} '{node.name}'",
                            self._prop_span(node, prop), f"'{prop}' belongs on: {on}")
        if node.kind.endswith("_group") and not (
            "nr_units" in node.values or "max_nr_units" in node.values
        ):
            self._error("hdl-missing-count",
                        f"{node.kind} '{node.name}' states neither nr_units nor max_nr_units",
                        where, "add `nr_units = N;` or `max_nr_units = N;`")
        if node.kind == "cache" and "cache_line_size" not in node.values:
            # The original toolchain accepted this; the feedback needs a line size, so the
            # common 64 B is assumed and said (docs/hdl.md).
            node.values["cache_line_size"] = Quantity(DEFAULT_CACHE_LINE, "B")
            self.diagnostics.append(warning(
                "hdl-cache-line", f"cache '{node.name}' has no cache_line_size; "
                f"assuming {DEFAULT_CACHE_LINE} B", where,
                f"add `cache_line_size = {DEFAULT_CACHE_LINE} B;` (or the real size)"))
        if node.kind in UNIT_KINDS and not any("slots" in n.args for n in node.walk()):
            self._error("hdl-missing-slots", f"{node.kind} '{node.name}' states no slots", where,
                        "add `slots(PAR_UNIT, N);` (hdl.md §3.3)")
        spaces = [s.name for s in hwd.memory_spaces()]
        units = [u.name for u in hwd.par_units()]
        for i, arg in enumerate(node.args.get("space", [])):
            at = self._report[(node, "space", i)]
            if self._arity(arg, 1, "space(MEMORY_SPACE)", at):
                self._known(arg[0], spaces, "hdl-unknown-space", f"space({arg[0]})",
                            "memory space", at)
        for i, arg in enumerate(node.args.get("slots", [])):
            at = self._report[(node, "slots", i)]
            if self._arity(arg, 2, "slots(PAR_UNIT, N)", at):
                self._known(arg[0], units, "hdl-unknown-par-unit", f"slots({arg[0]}, ...)",
                            "par_unit", at)
                count = arg[1].value if isinstance(arg[1], Quantity) else arg[1]
                if isinstance(count, bool) or not isinstance(count, (int, float)) \
                        or not 1 <= count < math.inf or count % 1:
                    # The analyses divide by the slots (units per issue cycle).
                    self._error("hdl-bad-argument", f"slots({arg[0]}, N) needs a whole "
                                f"number N of at least 1, not {count}", at)
        for i, arg in enumerate(node.args.get("connects", [])):
            at = self._report[(node, "connects", i)]
            if self._arity(arg, 2, "connects(A, B)", at):
                names = sorted({n.name for n in hwd.device.walk()} |
                               {n.path for n in hwd.device.walk()})
                for end in arg:
                    if not isinstance(end, str) or hwd.node(end) is None:
                        self._known(str(end), [], "hdl-unknown-reference",
                                    f"connects(..., {end}, ...)", "device block", at, names)
        for i, arg in enumerate(node.args.get("performance_feedback", [])):
            if len(arg) != 1 or not isinstance(arg[0], str):
                self._error("hdl-bad-argument",
                            'performance_feedback takes one name: performance_feedback("NAME")',
                            self._report[(node, "performance_feedback", i)])

    def _prop_span(self, node: DeviceNode, prop: str) -> Span | None:
        return self._report.get((node, prop, 0), self._report[node])

    def _arity(self, arg: tuple, n: int, form: str, at: Span | None) -> bool:
        if len(arg) == n:
            return True
        self._error("hdl-bad-argument", f"expected {form}, got {len(arg)} argument(s)", at)
        return False

    def _known(self, name: object, names: list[str], code: str, stmt: str, what: str,
               at: Span | None, suggest_from: list[str] | None = None) -> None:
        if isinstance(name, str) and name in names:
            return
        candidates = suggest_from if suggest_from is not None else names
        hint = did_you_mean(str(name), candidates) or (
            f"the {what}s are: {', '.join(candidates)}" if candidates and len(candidates) < 12
            else None
        )
        self._error(code, f"{stmt} names no {what} '{name}'", at, hint)

    def _error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diagnostics.append(error(code, message, span, hint))


def _valued(block: RBlock, name: str):
    prop: Prop | None = next((p for p in block.props if p.name == name), None)
    if prop is None or not isinstance(prop.value, Quantity):
        return None
    return prop.value.value
