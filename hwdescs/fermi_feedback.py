"""Performance feedback functions of `fermi.hdl` (the paper's section 5.1, "fermi").

`occupancy`: blocks and warps per SM and what limits them, with advice for the grid only
(4 blocks on the GTX480's 15 SMs leave 11 idle), by the allocation rules
of compute capability 2.0 (CUDA Occupancy Calculator: registers allocated per warp in
units of 64, at most 63 per thread; shared memory in units of 128 B).

`load_store_optimality`: "the compiler can give feedback on the complex memory-access rules
of the fermi architecture. It tells us that the memory access patterns of a, b, and c are
optimal, and that there are no bank conflicts in the access of shared memory."

For every load and store of the executing unit, the function steps the evaluator through
the threads of a warp (the lock-step group of the load/store units, the paper's "issuing
increment() 32 times in a for-loop") with every other unit and for-loop at its first
index, and computes the byte addresses they touch; a guarded access counts only the
threads whose guards hold, in every warp of a block that runs it
(`mcl.feedback.lockstep`):

- a space held by a cache (global memory): the lines of the innermost cache the warp
  touches against the fewest lines its bytes fit in (coalescing; CUDA C Programming
  Guide, compute capability 2.x: a warp's request is served in 128 B L1 lines);
- a space held by a banked memory (shared memory): the largest number of distinct 32-bit
  words that fall in one bank (successive 32-bit words lie in successive banks; threads
  reading the same word share it).
"""

from __future__ import annotations

from mcl.feedback.kernel_api import Kernel
from mcl.feedback.lockstep import divergence_messages, memory_access_messages
from mcl.feedback.occupancy import multiprocessor, occupancy_message


def load_store_optimality(kernel: Kernel):
    """Coalescing of global loads/stores and bank conflicts of shared-memory accesses for
    the active threads of each warp (mcl.feedback.lockstep)."""
    return memory_access_messages(kernel)


def divergence(kernel: Kernel):
    """Branches the threads of one warp take different ways (mcl.feedback.lockstep)."""
    return divergence_messages(kernel)


REGISTER_ALLOCATION_UNIT = 64  # registers per warp are a multiple of this (cc 2.0)
SHARED_ALLOCATION_UNIT = 128  # bytes
MAX_REGISTERS_PER_THREAD = 63  # CUDA cc 2.0


def occupancy(kernel: Kernel):
    """Blocks and warps per SM, what limits them, and a change that raises them
    (`mcl.feedback.occupancy`, the rule hopper's and nvidia's functions use)."""
    sm = multiprocessor(kernel, register_unit=REGISTER_ALLOCATION_UNIT,
                        shared_unit=SHARED_ALLOCATION_UNIT)
    # Only the grid is advised: the cc 2.0 rules above are not checked against a
    # measurement as hopper's are, and registers per thread are an estimate; fewer
    # registers than a register-tiled kernel keeps (fermi (v1)) would slow it.
    return occupancy_message(kernel, sm, MAX_REGISTERS_PER_THREAD, advise_resources=False)
