"""The compiler's register count for occupancy, where a higher layer can give it.

Feedback stands below code generation and the backends (docs/architecture.md, "Layers"),
so it cannot compile a kernel itself: the command line hands it a counter
(`mcl.backends.register_count`: a backend's count, NVRTC's for the kernel's CUDA read
from the cubin) before it runs a command, and `Context.registers_per_thread`
(mcl.feedback.kernel_api) asks it first. Without one (a program that calls the analyses
directly, an editor's worker process), or where it has no count, the registers per thread
are the estimate; where the compile ran past its budget (mcl.feedback.compiler_budget),
the estimate says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcl.feedback.compiler_budget import NotCompiled
    from mcl.feedback.facts.kernel import KernelFacts

Counter = Callable[["KernelFacts"], "int | NotCompiled | None"]
_counter: list[Counter] = []


def use_counter(counter: Counter | None) -> None:
    """Count registers with `counter` from now on (None: estimate them)."""
    _counter[:] = [counter] if counter is not None else []


def compiler_registers(facts: KernelFacts) -> int | NotCompiled | None:
    """The compiler's registers per thread for the function of `facts`, NotCompiled
    where its compile ran past its budget, or None."""
    return _counter[0](facts) if _counter else None
