"""One step down the hierarchy (Appendix A.1, TRANSLATE): a parent description, one of its
children, and the equivalence between their par_groups found by Appendix A.2."""

from __future__ import annotations

from dataclasses import dataclass

from mcl.hdl.model import HardwareDescription, ParGroup, ParGroupMapping


@dataclass(frozen=True)
class Step:
    source: HardwareDescription
    target: HardwareDescription
    mapping: ParGroupMapping

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
