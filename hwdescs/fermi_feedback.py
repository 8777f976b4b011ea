"""Performance feedback functions of `fermi.hdl` (the paper's section 5.1, "fermi").

`load_store_optimality`: "the compiler can give feedback on the complex memory-access rules
of the fermi architecture. It tells us that the memory access patterns of a, b, and c are
optimal, and that there are no bank conflicts in the access of shared memory."

For every load and store of the executing unit, the function steps the evaluator through
the threads of one warp (the lock-step group of the load/store units, the paper's
"issuing increment() 32 times in a for-loop") with every other unit and for-loop at its
first index, and computes the byte addresses they touch:

- a space held by a cache (global memory): the lines of the innermost cache the warp
  touches against the fewest lines its bytes fit in (coalescing; CUDA C Programming
  Guide, compute capability 2.x: a warp's request is served in 128 B L1 lines);
- a space held by a banked memory (shared memory): the largest number of distinct 32-bit
  words that fall in one bank (successive 32-bit words lie in successive banks; threads
  reading the same word share it).
"""

from __future__ import annotations

from mcl.feedback.kernel_api import Kernel, MemoryInstruction, MissingValues, NotStatic
from mcl.feedback.warp_access import bank_conflict, coalescing

# Fermi tuning guide / CUDA C Programming Guide 2.x: banks are 32 bits wide. HDL states
# the number of banks (nr_banks) but not their width.
BANK_WORD_BYTES = 4


def _warp_addresses(kernel: Kernel, instruction: MemoryInstruction, group: str,
                    size: int) -> list[int]:
    cursor = kernel.evaluator.units(group, at=instruction)
    cursor.reset()
    addresses = []
    for _ in range(min(size, cursor.count)):
        addresses.append(kernel.evaluator.address(instruction))
        cursor.increment()
    cursor.reset()
    return addresses


def load_store_optimality(kernel: Kernel):
    """Coalescing of global loads/stores and bank conflicts of shared-memory accesses for
    the threads of a warp."""
    hwd = kernel.hwd.description
    thread = hwd.executing_unit().name
    warp = hwd.lockstep(thread)
    if warp is None:
        return None
    size = int(warp.count)
    messages = []
    coalesced = conflict_free = 0
    missing: set[str] = set()
    for instruction in kernel.instructions:
        if instruction.unit != thread or not instruction.indices:
            continue
        memories = hwd.memories_for(instruction.space)
        caches = [m for m in memories if m.is_cache and m.line_size]
        banked = [m for m in memories if not m.is_cache and m.nr_banks]
        if not caches and not banked:
            continue
        try:
            addresses = _warp_addresses(kernel, instruction, warp.name, size)
        except MissingValues as exc:  # collect every name, then ask for all at once
            missing.update(exc.names)
            continue
        except NotStatic as exc:
            messages.append(kernel.message(
                f"{instruction.kind} of {instruction.text}: cannot tell whether it is "
                f"optimal for a warp: {exc}", span=instruction.span, severity="warning",
                code="warp-access-unknown"))
            continue
        element = instruction.element_bytes or BANK_WORD_BYTES
        threads = len(addresses)
        if banked:
            banks = int(banked[0].nr_banks)
            result = bank_conflict(addresses, banks, BANK_WORD_BYTES)
            if result.conflict:
                messages.append(kernel.message(
                    f"{instruction.kind} of {instruction.text} in {instruction.space} memory: "
                    "{conflict_degree}-way bank conflict for the " + f"{threads} threads of "
                    "a warp: the accesses to one bank run one after another ({banks} banks "
                    f"of {BANK_WORD_BYTES} B; bank {result.bank} is hit most)",
                    span=instruction.span, code="bank-conflict",
                    values={"conflict_degree": result.degree, "banks": banks},
                    hint="pad the array or change the index so that consecutive threads "
                         "use consecutive words"))
            else:
                conflict_free += 1
        else:
            line = int(caches[0].line_size)
            result = coalescing(addresses, element, line)
            if result.optimal:
                coalesced += 1
            else:
                messages.append(kernel.message(
                    f"{instruction.kind} of {instruction.text} is not coalesced: the "
                    f"{threads} threads of a warp touch " + "{lines:line|lines} of "
                    "{line_bytes} B where {minimum_lines} would do, so the warp moves more "
                    "memory than it uses", span=instruction.span,
                    code="uncoalesced", values={"lines": result.lines,
                                                "minimum_lines": result.minimum,
                                                "line_bytes": line},
                    hint="let consecutive threads access consecutive elements"))
    if missing:
        raise MissingValues(missing)
    if not messages and (coalesced or conflict_free):
        parts = []
        if coalesced:
            parts.append("all {coalesced} global loads/stores are coalesced")
        parts.append("no bank conflicts in the {conflict_free} shared-memory accesses"
                     if conflict_free else "no shared-memory accesses")
        messages.append(kernel.message(
            "optimal memory access: " + ", ".join(parts), severity="info",
            code="memory-access-optimal",
            values={"coalesced": coalesced, "conflict_free": conflict_free}))
    return messages
