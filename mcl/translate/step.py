"""One step down the hierarchy (Appendix A.1, TRANSLATE): a parent description, one of its
children, and the equivalence between their par_groups found by Appendix A.2.

A step also knows the steps that follow it in the same translation (`later`), so that a
dimension statement can read the most specific bound on the path (see `count_constant`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcl.hdl.model import HardwareDescription, ParGroup, ParGroupMapping
from mcl.mcpl import ast
from mcl.translate.counts import count_constant


@dataclass(frozen=True)
class Step:
    """One edge of the hierarchy a translation takes, and the steps after it."""

    source: HardwareDescription
    target: HardwareDescription
    mapping: ParGroupMapping
    later: tuple[Step, ...] = ()  # the steps after this one, down to the requested level

    def groups_for(self, group: str) -> list[ParGroup] | None:
        """The target par_groups that par_group `group` of the source maps to (GETLEVEL in
        Appendix A.4), outermost first; None when `group` is not in the mapping."""
        for source_group, target_groups in self.mapping:
            if isinstance(source_group, ParGroup) and source_group.name == group:
                return [g for g in target_groups if isinstance(g, ParGroup)]
        return None

    @property
    def executing_group(self) -> str:
        """The target's executing par_group: the one around the unit that runs statements."""
        return self.target.executing_unit().group.name

    def relaxed_child(self, group: ParGroup) -> ParGroup | None:
        """The target par_group that source par_group `group` maps to one-to-one under the
        relaxation of hdl.md §3.4 (both state only an upper bound, the child's is not
        smaller: cpu's 4 `vectors` -> x86_avx512's 16); None for any other mapping."""
        targets = self.groups_for(group.name)
        if targets is None or len(targets) != 1:
            return None
        child = targets[0]
        if group.exact or child.exact or child.count < group.count:
            return None
        return child

    def count_constant(self, group: ParGroup) -> ast.HwdConst:
        """The description constant a dimension statement of this step reads for `group`, a
        par_group of the target. The target's own bound, unless a later step of the same
        translation maps the group one-to-one to one with a LARGER upper bound (the
        relaxation): then the most specific, largest, bound on the path, so perfect ->
        cpu -> x86_avx512 uses x86_avx512's 16 vector lanes, not cpu's 4. Following the
        path at generation time (rather than rewriting afterwards) lets the static
        reasoning about exact divisions and guards see the value that is finally used."""
        hwd, best = self.target, group
        current = group
        for step in self.later:
            child = step.relaxed_child(current)
            if child is None:
                break
            if child.count > best.count:
                hwd, best = step.target, child
            current = child
        return count_constant(hwd, best)
