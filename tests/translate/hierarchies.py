"""Small hand-built parallelism hierarchies, so the foreach logic can be tested without the
HDL loader. They follow hdl.md: `perfect`-like (unlimited threads) and `gpu`-like
(blocks x threads, `local` in block), and a `warps` split like fermi's."""

from __future__ import annotations

import math

from mcl.hdl.model import (
    HardwareDescription,
    MemorySpace,
    Parallelism,
    ParGroup,
    ParGroupMapping,
    ParUnit,
    Quantity,
)


class HandBuilt(HardwareDescription):
    """Answers the few queries the translation asks, from a hand-built hierarchy."""

    def __init__(self, name: str, parent: str | None, parallelism: Parallelism):
        self.name = name
        self.parent = parent
        self.file = f"<{name}>"
        self.parallelism = parallelism

    def par_groups(self) -> list[ParGroup]:
        groups, group = [], self.parallelism.inner
        while group is not None:
            groups.append(group)
            group = group.unit.inner if group.unit else None
        return groups

    def par_group(self, name: str) -> ParGroup | None:
        return next((g for g in self.par_groups() if g.name == name), None)

    def executing_unit(self) -> ParUnit:
        return self.par_groups()[-1].unit

    def memory_spaces(self) -> list[MemorySpace]:
        spaces = list(self.parallelism.spaces)
        for g in self.par_groups():
            spaces += g.spaces + g.unit.spaces
        return spaces

    def memory_space(self, name: str) -> MemorySpace | None:
        return next((s for s in self.memory_spaces() if s.name == name), None)

    def default_spaces(self) -> list[MemorySpace]:
        return [s for s in self.memory_spaces() if s.default]

    def value(self, path):
        parts = path.split(".") if isinstance(path, str) else list(path)
        if parts[0] == self.name:
            parts = parts[1:]
        if parts[0] != "hierarchy":
            return None
        *names, prop = parts[1:]
        group = self.par_group(names[-1])
        value = getattr(group, prop, None) if group else None
        return None if value is None else Quantity(value)


def _group(name, parent, unit_name, nr=None, max_nr=None, unit_spaces=()):
    group = ParGroup(name, parent, nr_units=nr, max_nr_units=max_nr)
    unit = ParUnit(unit_name, group)
    group.unit = unit
    if isinstance(parent, ParUnit):
        parent.inner = group
    else:
        parent.inner = group
    for space_name, default, read_only in unit_spaces:
        unit.spaces.append(MemorySpace(space_name, default, read_only, unit))
    return group


def perfect_like(name: str = "flat") -> HandBuilt:
    root = Parallelism(name="hierarchy")
    root.spaces.append(MemorySpace("main", True, False, root))
    _group("threads", root, "thread", max_nr=math.inf, unit_spaces=[("reg", True, False)])
    return HandBuilt(name, None, root)


def gpu_like(name: str = "blocky", parent: str = "flat", threads: int = 1024) -> HandBuilt:
    root = Parallelism(name="hierarchy")
    root.spaces.append(MemorySpace("dev", True, False, root))
    blocks = _group("blocks", root, "block", max_nr=65535, unit_spaces=[("local", False, False)])
    _group("threads", blocks.unit, "thread", max_nr=threads, unit_spaces=[("reg", True, False)])
    return HandBuilt(name, parent, root)


def warps_like(name: str = "warpy", parent: str = "blocky") -> HandBuilt:
    root = Parallelism(name="hierarchy")
    root.spaces.append(MemorySpace("global", True, False, root))
    blocks = _group("blocks", root, "block", max_nr=65535, unit_spaces=[("shared", False, False)])
    warps = _group("warps", blocks.unit, "warp", max_nr=32)
    _group("threads", warps.unit, "thread", nr=32, unit_spaces=[("reg", True, False)])
    return HandBuilt(name, parent, root)


def mapping(source: HandBuilt, target: HandBuilt, groups: dict[str, list[str]]) -> ParGroupMapping:
    """Appendix A.2's result written out by hand: source par_group -> target par_groups."""
    m: ParGroupMapping = [(source.parallelism, [target.parallelism])]
    for g in source.par_groups():
        m.append((g, [target.par_group(t) for t in groups[g.name]]))
    return m


class HandLibrary:
    """The part of `HwdLibrary` the translation uses, over hand-built descriptions."""

    def __init__(self, *descriptions: HandBuilt):
        self.descriptions = {d.name: d for d in descriptions}

    def get(self, name: str) -> HandBuilt:
        return self.descriptions[name]

    def names(self) -> list[str]:
        return list(self.descriptions)


def hand_library() -> HandLibrary:
    """flat ─┬─ blocky ── warpy
             └─ sidey            (a second branch)"""
    return HandLibrary(
        perfect_like("flat"),
        gpu_like("blocky", "flat"),
        warps_like("warpy", "blocky"),
        gpu_like("sidey", "flat", threads=512),
    )


def groups_like(name: str = "groupy") -> HandBuilt:
    """Unlimited `groups` of at most 64 `threads`, `local` in a group."""
    root = Parallelism(name="hierarchy")
    root.spaces.append(MemorySpace("dev", True, False, root))
    groups = _group("groups", root, "group", max_nr=math.inf, unit_spaces=[("local", False, False)])
    _group("threads", groups.unit, "thread", max_nr=64, unit_spaces=[("reg", True, False)])
    return HandBuilt(name, None, root)


def clusters_like(name: str = "clustery", parent: str = "groupy") -> HandBuilt:
    """As `groups_like`, with the groups split: unlimited `clusters` of exactly 4 `groups`
    — a split of a par_group that is not the executing one."""
    root = Parallelism(name="hierarchy")
    root.spaces.append(MemorySpace("dev", True, False, root))
    clusters = _group("clusters", root, "cluster", max_nr=math.inf)
    groups = _group("groups", clusters.unit, "group", nr=4, unit_spaces=[("local", False, False)])
    _group("threads", groups.unit, "thread", max_nr=64, unit_spaces=[("reg", True, False)])
    return HandBuilt(name, parent, root)


# The paper's Fig. 2 written for the hand-built root `flat` (perfect_like).
FLAT_MATMUL = """
flat void matmul(int n, int m, int p, main float[n, m] c, main float[n, p] a, main float[p, m] b) {
  foreach (int i in n threads) {
    foreach (int j in m threads) {
      float sum = 0.0;
      for (int k = 0; k < p; k++) { sum += a[i, k] * b[k, j]; }
      c[i, j] = sum;
    }
  }
}
"""
