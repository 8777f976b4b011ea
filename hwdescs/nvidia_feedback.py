"""Performance feedback functions of `nvidia.hdl` (the paper's Fig. 13 and 14).

`shared_mem_parallelism`: how many blocks an SMP runs at once, and what limits it. The
paper: "memory on_chip is a scarce resource [...] we execute only 1 out of 8 blocks per SMP
in parallel which depends on the number of threads, the number of registers, and the
amount of shared memory we use. Finally, it proposes a strategy to manage shared memory,
namely by reducing the amount of shared memory by using multiple store-load phases."
"""

from __future__ import annotations

from mcl.feedback.kernel_api import Kernel
from mcl.feedback.occupancy import SHARED_MEMORY, blocks_per_sm, kernel_usage, multiprocessor

ADVICE = {
    SHARED_MEMORY: "load/store shared memory in phases",
    "threads": "use fewer threads per block",
    "warps": "use fewer threads per block",
    "registers": "keep fewer values per thread in registers",
}


def _bytes(n: int) -> str:
    return f"{n // 1024} kB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def limit_phrase(limiting: list[str]) -> str:
    """`shared memory limits`, `threads limit`, `threads and registers limit`: the
    resources that allow no more blocks, with the verb agreeing (the paper: "shared memory
    limits")."""
    plural = len(limiting) > 1 or limiting[0] != SHARED_MEMORY
    return f"{' and '.join(limiting)} limit{'' if plural else 's'}"


def shared_mem_parallelism(kernel: Kernel):
    """Blocks per SMP given shared memory, threads and registers per block (paper Fig. 14)."""
    sm = multiprocessor(kernel)
    if sm.shared_space is None:
        return None
    used = kernel.context.space_bytes(sm.shared_space)
    if used == 0:  # Fig. 14: no message when the kernel uses no shared memory
        return None
    usage, registers = kernel_usage(kernel, sm)
    occupancy = blocks_per_sm(sm.resources, usage)
    slots = int(occupancy.block_slots)
    limiting = [name for name in occupancy.limiting if name != "block slots"]
    # The paper's wording (section 5.1): "using 1/8 blocks per SMP: shared memory limits;
    # load/store shared memory in phases".
    text = "using {blocks_per_smp}/{block_slots} blocks per SMP"
    if occupancy.blocks < slots and limiting:
        text += ": " + limit_phrase(limiting)
        advice = [ADVICE[name] for name in limiting if name in ADVICE]
        if advice:
            text += "; " + "; ".join(dict.fromkeys(advice))
    text += (f" ({_bytes(usage.shared_bytes)} {sm.shared_space} memory, "
             "{threads_per_block} threads and about {registers_per_thread_estimate} "
             "registers per thread per block)")
    shared_decls = [b for b in kernel.facts.bindings
                    if b.space == sm.shared_space and b.kind == "local"]
    span = shared_decls[0].span if shared_decls else None
    figures = {"blocks_per_smp": occupancy.blocks, "block_slots": slots,
               "shared_bytes_per_block": usage.shared_bytes,
               "threads_per_block": usage.threads,
               "registers_per_thread_estimate": usage.registers_per_thread}
    figures.update({f"limit_{name.replace(' ', '_')}": limit
                    for name, limit in occupancy.limits.items()})
    return kernel.message(
        text, span=span, severity="suggestion" if occupancy.blocks < slots else "info",
        code="shared-mem-parallelism", values=figures,
        hint=("more blocks per SMP hide memory latency; each limit_* value is the number of "
              f"blocks one resource allows; registers per thread are estimated from "
              f"{registers.basis}"))
