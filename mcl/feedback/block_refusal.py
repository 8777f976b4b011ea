"""A block that no multiprocessor can hold: refused by `mcl check`, not first at the launch.

The paper's section 5: a programmer learns the limits of a level while refining towards
it, not when the device refuses the launch. The occupancy rules (mcl.feedback.occupancy,
section 5.1) count the blocks of a kernel that one multiprocessor runs at once; where one
resource allows none, the kernel cannot start at all:
- shared memory: a block needs more than a multiprocessor gives one block (its capacity
  less what the system reserves for every block: 227 kB of hopper's 228 kB);
- registers: the compiler's count per thread, allocated per warp, times the block's warps
  exceeds the register file (an estimate refuses nothing: it limits nothing either);
- threads or warps: a block has more than the multiprocessor's slots.

`mcl.feedback.occupancy.refusal` finds the resource; the occupancy finding carries it.
`mcl check` analyses with values (`-D`, `--values`) or at a leaf (`--level`): the sizes
from parameters are known there, and the registers come from the compiler. A refusal is
then an error of the check (`mcpl-block-resources`) that names the resource, what a
block needs and the limit; the occupancy message stays beside it as the figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcl.diagnostics import Diagnostic, error
from mcl.feedback.findings import Finding, OccupancyFinding


def refused_blocks(findings: Iterable[Finding], levels: Mapping[str, str]
                   ) -> list[Diagnostic]:
    """The check's errors for the kernels whose blocks cannot start (their occupancy
    finding's `refusal`), from a file's feedback findings; `levels`: each analysed
    function's level."""
    out = []
    for f in findings:
        if isinstance(f, OccupancyFinding) and f.refusal:
            level = levels.get(f.function, "its level")
            out.append(error(
                "mcpl-block-resources",
                f"a block of '{f.function}' cannot start at '{level}': {f.refusal}", f.span,
                "use fewer threads per block, smaller shared tiles (the paper's phases) or "
                "fewer values per thread; the occupancy message has the figures"))
    return out
