"""The bank conflicts of a shared-memory access whose index the data decide: a histogram's
`atomicAdd(lh[bin], 1)` with `int bin = toInt(v[i] * 64.0)`.

No static analysis knows which words such a request touches, but it knows where they
can lie: a subscript must stay inside its dimension (an access outside the array is a
bug the checker reports elsewhere), so a lane's word is its other subscripts' offset
plus one of the dimension's values. Banked memory serves each bank's distinct words one
after another and lanes that read the same word share it (the paper's section 6.5, "the
number of bank conflicts"; `mcl.feedback.warp_access.bank_conflict`), so a request
costs its worst bank's distinct words. Two figures follow:

- the worst request: per bank, the words of that bank any active lane can reach, at most
  the active lanes (64 bins of 4 bytes: two words a bank, so at most 2-way). A true
  bound whatever the data.
- the expected request where the data spread the lanes evenly and independently over the
  dimension's values: the mean of the worst bank's distinct words over `SAMPLES` draws
  of a fixed generator (deterministic). With 64 bins that is 1.9993 wavefronts per
  request: only when no bank gets both of its words, about 7 requests in 10,000, is a
  request conflict-free. Nsight Compute measured 1.9993 on an H100 for the unseen
  corpus's histogram of uniform values (docs/validation.md, "The unseen corpus").

Data that are not spread evenly (many equal values: one bin) cost less than the
expectation on words of one bank and more on atomics of one word; the figure says which
assumption it rests on. The walk over a warp's lanes is `mcl.feedback.lockstep`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import sympy

from mcl.feedback.facts.layout import element_layout, extents, subscript_strides
from mcl.feedback.kernel_api import Kernel, MemoryInstruction
from mcl.feedback.warp_access import BankConflict, bank_conflict

if TYPE_CHECKING:
    import numpy as np

# Draws of the lanes' data-decided values whose mean is the expected cost of a request:
# the standard error of the mean of a degree between 1 and 32 is under 1% at this many.
SAMPLES = 4096
# The words per bank enumerated for the worst request; beyond, the bound is the lanes.
MAX_ENUMERATED_WORDS = 1 << 16
# A fixed seed: the same kernel gets the same figure on every run.
SEED = 0


@dataclass(frozen=True)
class DataIndex:
    """The element offset of an access split into the part the units and loops decide
    (`known`, SymPy) and the subscripts the data decide, each as (stride in elements,
    extent: the number of values it can take)."""

    known: Any
    spread: tuple[tuple[int, int], ...]

    @property
    def values(self) -> int:
        """How many elements the data-decided subscripts can reach from one offset."""
        count = 1
        for _, extent in self.spread:
            count *= extent
        return count


def data_index(kernel: Kernel, instruction: MemoryInstruction) -> DataIndex | None:
    """The split of `instruction`'s element offset, where some subscript depends on data
    and every such subscript's extent and stride are numbers at the kernel's values; None
    otherwise (the access is then not judged). A data-decided subscript that does not
    depend on the lock-step units (the innermost foreach: a Hillis-Steele scan's buffer
    `dst = 1 - src`, the same in every lane) moves every lane's word alike, which only
    rotates the banks: it is left out, and the lanes' words are the other subscripts'."""
    facts, access = kernel.facts, instruction.access
    binding = access.binding
    if binding.storage is not None or access.field is not None:
        return None  # (a view or a field: the subscripts are not the array's own)
    symbolic = facts.evaluator
    sizes, strides = extents(facts, binding), subscript_strides(facts, binding)
    if len(access.indices) != len(sizes):
        return None
    units = [loop for loop in access.item.loops if loop.kind == "foreach"]
    known: Any = sympy.Integer(0)
    spread: list[tuple[int, int]] = []
    opaque = False
    for index, size, stride in zip(access.indices, sizes, strides, strict=True):
        value = symbolic.sym(index, access.item.scope)
        if value is None:
            return None
        value = sympy.sympify(value)
        if any(symbolic.is_opaque(s) for s in value.free_symbols):
            opaque = True
            if not units or units[-1] not in symbolic.deps(index, access.item.scope):
                continue  # the same in every lane: a rotation of the banks
            number_size, number_stride = kernel.evaluator.number(size), \
                kernel.evaluator.number(stride)
            if int(number_size) != number_size or int(number_stride) != number_stride:
                return None
            spread.append((int(number_stride), int(number_size)))
        else:
            known = known + value * stride
    if not opaque:
        return None
    return DataIndex(sympy.expand(known), tuple(spread))


@dataclass(frozen=True)
class DataRequest:
    """One warp's request at a data-decided index: its expected wavefronts (passes over
    the banks) where the data spread evenly, the fewest (1), and its worst case."""

    wavefronts: float
    worst: BankConflict


def data_request(offsets: Sequence[int], index: DataIndex, record: int, word_bytes: int,
                 banks: int) -> DataRequest:
    """The cost of one request whose active lanes have the byte `offsets` before their
    data-decided subscripts (`index.spread`, elements of `record` bytes), each lane's
    value drawn evenly and independently from its dimension; without such subscripts,
    the request of the `offsets` themselves."""
    if not index.spread:
        worst = bank_conflict(offsets, banks, word_bytes)
        return DataRequest(float(worst.degree), worst)
    return _sampled_request(tuple(offsets), index.spread, record, word_bytes, banks)


# A process that analyses a kernel again and again (the editor's worker, at every edit)
# asks for the same requests each time: their draws (SAMPLES lanes' values each) are a
# pure function of these numbers, the generator's seed fixed.
@lru_cache(maxsize=256)
def _sampled_request(offsets: tuple[int, ...], spread: tuple[tuple[int, int], ...],
                     record: int, word_bytes: int, banks: int) -> DataRequest:
    """`data_request` where some subscript is data-decided (`spread` not empty)."""
    index = DataIndex(None, spread)
    # numpy only where a data-decided index is costed: `mcl check` stays light elsewhere
    import numpy as np
    base = np.asarray(offsets, dtype=np.int64)
    rng = np.random.default_rng(SEED)
    addresses = np.broadcast_to(base, (SAMPLES, len(base))).copy()
    for stride, extent in index.spread:
        addresses += rng.integers(0, extent, size=addresses.shape) * (stride * record)
    words = np.sort(addresses // word_bytes, axis=1)
    distinct = np.ones(words.shape, dtype=np.int64)
    distinct[:, 1:] = words[:, 1:] != words[:, :-1]
    rows = np.arange(SAMPLES, dtype=np.int64)[:, None] * banks
    per_bank = np.bincount((rows + words % banks).ravel(), weights=distinct.ravel(),
                           minlength=SAMPLES * banks).reshape(SAMPLES, banks)
    return DataRequest(float(per_bank.max(axis=1).mean()),
                       _worst(base, index, record, word_bytes, banks))


def _worst(base: np.ndarray, index: DataIndex, record: int, word_bytes: int, banks: int
           ) -> BankConflict:
    """The most distinct words one bank can be asked for in one request: per bank, the
    words the lanes can reach there, at most one a lane."""
    import numpy as np
    lanes = len(base)
    starts = np.unique(base)
    if len(starts) * index.values > MAX_ENUMERATED_WORDS:
        return BankConflict(lanes, 0)
    reach = np.zeros(1, dtype=np.int64)
    for stride, extent in index.spread:
        reach = (reach[:, None] + np.arange(extent, dtype=np.int64) * (stride * record)
                 ).ravel()
    words = np.unique((starts[:, None] + reach[None, :]).ravel() // word_bytes)
    per_bank = np.bincount(words % banks, minlength=banks)
    bank = int(per_bank.argmax())
    return BankConflict(int(min(lanes, per_bank[bank])), bank)


def layout_of(kernel: Kernel, instruction: MemoryInstruction) -> tuple[int, int] | None:
    """(bytes of one element, byte offset of the accessed part in it), None unknown."""
    access = instruction.access
    layout = element_layout(kernel.facts, access.binding, access.field)
    return None if layout is None else (layout[0], layout[2])
