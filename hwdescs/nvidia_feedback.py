"""Performance feedback functions of `nvidia.hdl` (the paper's Fig. 13 and 14).

`shared_mem_parallelism`: how many blocks an SMP runs at once, and what limits it. The
paper: "memory on_chip is a scarce resource [...] we execute only 1 out of 8 blocks per SMP
in parallel which depends on the number of threads, the number of registers, and the
amount of shared memory we use. Finally, it proposes a strategy to manage shared memory,
namely by reducing the amount of shared memory by using multiple store-load phases."

What limits the blocks and what to change come from `mcl.feedback.occupancy.verdict`, the
rule hopper's `occupancy` uses too: advice only for a change that raises the warps per
SMP, none when all thread slots are in use, and the grid first when it has too few
blocks.
"""

from __future__ import annotations

from mcl.feedback.kernel_api import Kernel
from mcl.feedback.occupancy import (
    figures,
    kernel_usage,
    limit_phrase,
    limiting_usage,
    multiprocessor,
    occupancy_hint,
    verdict_for,
)


def _bytes(n: int) -> str:
    return f"{n // 1024} kB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def shared_mem_parallelism(kernel: Kernel):
    """Blocks per SMP given shared memory, threads and registers per block (paper Fig. 14)."""
    sm = multiprocessor(kernel)
    if sm.shared_space is None:
        return None
    used = kernel.context.space_bytes(sm.shared_space)
    if used == 0:  # Fig. 14: no message when the kernel uses no shared memory
        return None
    usage, registers = kernel_usage(kernel, sm)
    v = verdict_for(kernel, sm, limiting_usage(usage, registers))
    slots = int(v.occupancy.block_slots)
    # The paper's wording (section 5.1): "using 1/8 blocks per SMP: shared memory limits;
    # load/store shared memory in phases".
    text = "using {blocks_per_smp}/{block_slots} blocks per SMP"
    if v.limiting and (v.blocks < slots or v.advice):
        text += ": " + limit_phrase(v)
        if v.advice:
            text += "; " + "; ".join(v.advice)
    text += (f" ({_bytes(usage.shared_bytes)} {sm.shared_space} memory, "
             "{threads_per_block} threads and about {registers_per_thread_estimate} "
             "registers per thread per block)")
    shared_decls = [b for b in kernel.facts.bindings
                    if b.space == sm.shared_space and b.kind == "local"]
    span = shared_decls[0].span if shared_decls else None
    values = {"blocks_per_smp": v.blocks, "block_slots": slots, **figures(v, usage)}
    return kernel.message(
        text, span=span, severity="suggestion" if v.advice else "info",
        code="shared-mem-parallelism", values=values,
        hint=occupancy_hint(v, "SMP", registers.basis))
