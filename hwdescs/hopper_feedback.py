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
from mcl.feedback.lockstep import divergence_messages, memory_access_messages
from mcl.feedback.occupancy import Multiprocessor, multiprocessor, occupancy_message

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
    """Blocks and warps per SM, what limits them, and a change that raises them
    (`mcl.feedback.occupancy.verdict`, the rule nvidia's function uses too)."""
    return occupancy_message(kernel, hopper_multiprocessor(kernel), MAX_REGISTERS_PER_THREAD)


# CUDA C++ Programming Guide, compute capability 5.x and later, "Global Memory": a
# warp's global accesses are served in 32-byte transactions (sectors of the 128 B
# lines, hopper.hdl's l2 comment): four rows of 32 B each are as cheap as one 128 B
# row. HDL states the line size but not the sector size.
SECTOR_BYTES = 32


def load_store_optimality(kernel: Kernel):
    """Coalescing of global loads/stores (in 32 B sectors) and bank conflicts of
    shared-memory accesses (32 banks of 4 B; CUDA C++ Programming Guide, compute
    capability 9.0, "Shared Memory") for the active threads of each warp, the analysis
    fermi's function makes (mcl.feedback.lockstep)."""
    return memory_access_messages(kernel, SECTOR_BYTES)


def divergence(kernel: Kernel):
    """Branches the threads of one warp take different ways (mcl.feedback.lockstep)."""
    return divergence_messages(kernel)
