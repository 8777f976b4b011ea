"""The budget of CPU time of each compiler call the feedback's figures come from (NVRTC
compiling the kernel's generated CUDA for the register count and the machine code per
line, `nvdisasm` listing that code: mcl.feedback.compiler_registers,
mcl.feedback.compiler_instructions), and what a counter answers past it.

A compile is no analysis of the kernel, so its seconds are not the analyses' budget
(mcl.feedback.budget.not_counted); but NVRTC compiling a generated loop nest 300 deep
took seconds, in native code that no cooperative check interrupts. The counter runs
each call under `seconds()` of CPU time (mcl.cpu_budget) and, past it, answers
`NotCompiled`: the register count is then the estimate with its uncertainty, and the
time estimate issues only what the model counts itself, each saying that the compiler's
figure was not analysed and why (docs/feedback.md, "Compiler budget") — never a figure
from a compile cut short.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# CPU seconds of one compiler call: more than four times what NVRTC takes on the slowest
# shipped hopper kernel (convolution hopper_v1, 0.70 s of CPU on the 2-core machine).
SECONDS = 3.0


def seconds() -> float:
    """The budget of one compiler call; `MCL_COMPILE_BUDGET` (seconds) overrides it."""
    try:
        value = float(os.environ.get("MCL_COMPILE_BUDGET", SECONDS))
    except ValueError:
        return SECONDS
    return value if value > 0 else SECONDS


@dataclass(frozen=True)
class NotCompiled:
    """A counter's answer where a compiler call ran past its budget."""

    tool: str  # "NVRTC", "nvdisasm"
    seconds: float

    @property
    def reason(self) -> str:
        return f"{self.tool} ran past its budget of {self.seconds:g} s of CPU time"
