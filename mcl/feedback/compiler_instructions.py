"""The compiler's machine instructions per source line, for the time model's issue term,
where a higher layer can give them.

As with the register count (mcl.feedback.compiler_registers), the feedback cannot compile
a kernel itself: the command line hands it a counter (the CUDA backend's,
mcl.backends.cuda.line_instructions: NVRTC's cubin disassembled by `nvdisasm`) before it
runs a command. Without one (a program that calls the analyses directly, the editor's
worker process, whose checks must not wait for a compiler at every edit), or where it
has no count, the time model issues only the arithmetic and on-chip accesses it counts
itself (docs/feedback.md, "Time estimate"); where a compiler call ran past its budget
(mcl.feedback.compiler_budget), the estimate says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcl.feedback.compiler_budget import NotCompiled
    from mcl.feedback.facts.kernel import KernelFacts


@dataclass(frozen=True)
class LineCode:
    """The machine code the compiler made of one source line at one loop depth (how many
    loops of the machine code hold it: a loop the compiler unrolled fully is none, code
    it hoisted out of a loop is one fewer), over every copy of it (a loop unrolled in
    part holds several): its instructions, the bytes per thread its loads and stores
    move (a vector load of four floats, 16), its loads from global memory, its
    conditional branches (an `if` whose line has none is predicated: every warp that
    reaches it issues its body, with the lanes that fail the condition turned off)."""

    instructions: int
    memory_bytes: int
    global_loads: int
    depth: int = 0
    branches: int = 0
    # the global loads a warp has issued and not yet used where it first uses one of the
    # line's, on average over them: the loads in flight the compiler's schedule gives (0
    # without any); `flying` the figures added over the `uses`, which the cache keeps
    in_flight: float = 0.0
    flying: int = 0
    uses: int = 0


# The source line -> its code, by loop depth; line 0 holds the code of no line of the
# source (a kernel's entry and exit), which every warp runs once.
Lines = Mapping[int, tuple[LineCode, ...]]
Counter = Callable[["KernelFacts"], "Lines | NotCompiled | None"]
_counter: list[Counter] = []


def use_counter(counter: Counter | None) -> None:
    """Count instructions with `counter` from now on (None: none)."""
    _counter[:] = [counter] if counter is not None else []


def compiler_instructions(facts: KernelFacts) -> Lines | NotCompiled | None:
    """The machine code of each source line of the function of `facts`, NotCompiled
    where a compiler call ran past its budget, or None."""
    return _counter[0](facts) if _counter else None
