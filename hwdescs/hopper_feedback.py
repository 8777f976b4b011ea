"""Performance feedback functions of `hopper.hdl` (feedback.md analysis 7: "an occupancy
function for hopper that gives the same blocks/warps per SM as CUDA's occupancy
calculator for the same threads, registers and shared memory").

Slots and capacities come from the description (32 blocks, 64 warps and 2048 threads per
SM; 65536 registers; 228 kB of shared memory; the 4 processing blocks that each hold a
quarter of the register file). Hopper's allocation rules are not properties HDL can
state, so they live here:

- registers are allocated per warp in units of 256 (CUDA Occupancy Calculator, compute
  capability 9.0: "register allocation unit size 256", allocation granularity "warp");
- a warp's registers come from the register file of one processing block (H100
  whitepaper: 16384 registers per SM sub-partition);
- shared memory per block is rounded up to 128 B ("shared memory allocation unit size")
  after adding the 1 kB CUDA reserves for every block (cudaDeviceProp
  reservedSharedMemPerBlock = 1024).

tests/feedback/data/hopper_occupancy.json holds 1008 cases measured with
`cudaOccupancyMaxActiveBlocksPerMultiprocessor` on an H200 (benchmarks/gpu/
occupancy_table.cu); tests/feedback/test_occupancy_hopper.py checks every one.
"""

from __future__ import annotations

from mcl.feedback.kernel_api import Kernel
from mcl.feedback.occupancy import Multiprocessor, blocks_per_sm, kernel_usage, multiprocessor

REGISTER_ALLOCATION_UNIT = 256  # registers per warp are a multiple of this
SHARED_ALLOCATION_UNIT = 128  # bytes
SHARED_RESERVED_PER_BLOCK = 1024  # bytes
MAX_REGISTERS_PER_THREAD = 255  # CUDA cc 9.0 (hopper.hdl's comment on regs)


def register_partitions(kernel: Kernel) -> int:
    """Processing blocks of the SM: the execution group inside it whose units hold warp
    slots (hopper.hdl: `partitions`, 4 units)."""
    for node in kernel.node.walk() if kernel.node is not None else ():
        if node is kernel.node or not node.kind.endswith("_group"):
            continue
        if any(child.slots_for("warp") is not None for child in node.children):
            return int(node.count())
    return 1


def hopper_multiprocessor(kernel: Kernel) -> Multiprocessor:
    """The SM as the occupancy rules see it, from hopper.hdl plus the rules above."""
    return multiprocessor(
        kernel, register_unit=REGISTER_ALLOCATION_UNIT,
        register_partitions=register_partitions(kernel), shared_unit=SHARED_ALLOCATION_UNIT,
        shared_reserved=SHARED_RESERVED_PER_BLOCK)


def occupancy(kernel: Kernel):
    """Blocks and warps per SM, and what limits them."""
    sm = hopper_multiprocessor(kernel)
    usage, registers = kernel_usage(kernel, sm)
    if usage.threads == 0:
        return None
    usage = type(usage)(usage.threads, min(usage.registers_per_thread,
                                           MAX_REGISTERS_PER_THREAD), usage.shared_bytes)
    result = blocks_per_sm(sm.resources, usage)
    warp_slots = int(sm.resources.warp_slots)
    limiting = [name for name in result.limiting if name != "block slots"] or ["block slots"]
    full = result.warps >= warp_slots
    text = ("occupancy: {blocks_per_sm:block|blocks} per SM ({warps_per_sm} of "
            f"{{warp_slots}} warps, {100 * result.warps // warp_slots}%), limited by "
            f"{' and '.join(limiting)} ({{threads_per_block}} threads, "
            "{shared_bytes_per_block} B " + f"{sm.shared_space} memory and about "
            "{registers_per_thread_estimate} registers per thread per block)")
    advice = [ADVICE[name] for name in limiting if name in ADVICE]
    if advice and not full:
        text += ": " + "; ".join(dict.fromkeys(advice))
    figures = {"blocks_per_sm": result.blocks, "warps_per_sm": result.warps,
               "warp_slots": warp_slots, "threads_per_block": usage.threads,
               "shared_bytes_per_block": usage.shared_bytes,
               "registers_per_thread_estimate": usage.registers_per_thread}
    figures.update({f"limit_{name.replace(' ', '_')}": limit
                    for name, limit in result.limits.items()})
    return kernel.message(
        text, severity="info" if full else "suggestion", code="occupancy", values=figures,
        hint=("more warps per SM hide memory latency; each limit_* value is the number of "
              f"blocks one resource allows; registers per thread are estimated from "
              f"{registers.basis}"))


# What to try for each limiting resource.
ADVICE = {
    "registers": "keep fewer values per thread in registers (fewer elements per thread)",
    "shared memory": "use less shared memory per block (smaller tiles, or phases)",
    "threads": "use fewer threads per block",
    "warps": "use fewer threads per block",
    "block slots": "use more threads per block",
}
