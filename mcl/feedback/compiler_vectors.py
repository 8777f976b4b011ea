"""The for-loops that code generation issues as one wide access per unit, for the
coalescing of global loads and stores (mcl.feedback.lockstep), where a higher layer can
say.

A copy loop `for (c = 0; c < VEC; c++) call[g * VEC + c] = rc[e * VEC + c];` is, at a
leaf whose mapping asks for vectors (`codegen.vector_width`), one 16-byte store per
thread: the request a warp's lanes make is their 16 bytes each over all the loop's
iterations together, not 4 bytes 16 apart per iteration (the paper's section 6.5 judges
the request the hardware sees). Whether a loop becomes one is code generation's rule
(mcl.codegen.vectorize), which the feedback may not import (docs/architecture.md,
"Layers"): as with the register count (mcl.feedback.compiler_registers), the command
line hands it a finder (mcl.backends.wide_copies: the loops the generated code has as
one vector access) before it runs a command.

Without one (a program that calls the analyses directly, the editor's worker process) or
where it cannot tell (a level that is not a leaf), an access that has the shape of such a
copy is judged element by element as written, but no gain is promised for it: whether
it is one wide access is not known (docs/feedback.md, "Coalescing").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcl.diagnostics import Span
    from mcl.feedback.facts.kernel import KernelFacts

# The span of each for-loop generated as one wide access -> the bytes a unit moves in it.
Copies = Mapping["Span", int]
Finder = Callable[["KernelFacts"], "Copies | None"]
_finder: list[Finder] = []


def use_finder(finder: Finder | None) -> None:
    """Ask `finder` from now on (None: no one can tell)."""
    _finder[:] = [finder] if finder is not None else []


def wide_copies(facts: KernelFacts) -> Copies | None:
    """The loops of the function of `facts` issued as one wide access, or None where
    nothing says."""
    return _finder[0](facts) if _finder else None
