"""The stable message codes and their short titles (docs/feedback.md is the catalogue).

A report opens with a summary of what to act on: the warnings and suggestions, one line
per code with its title and the places it is about ("compute several elements per unit:
c[i, j] (line 13)"). A code without a title here (a user's feedback function) is
summarised by the start of its message.

`HEADLINE_FACTS` are the facts worth reading without asking for more: what `mcl check`
shows by default and what `mcl report`'s feedback column quotes (mcl.feedback.render.visibility
holds the one rule; docs/feedback.md, "What a report shows").
"""

from __future__ import annotations

TITLES: dict[str, str] = {
    # opstats (paper 6.2)
    "opstats-summary": "operation counts",
    "opstats-overhead": "indexing and control-flow overhead",
    "opstats-memory": "loads and stores per memory space",
    "opstats-approximate": "counts that are upper bounds",
    # transfers
    "transfers-parameter": "host <-> device transfer of a parameter",
    "transfers-total": "host <-> device transfers",
    # reuse and faster memories (paper 6.3)
    "reuse-independent": "data reuse",
    "reuse-ratio": "data reuse ratio",
    "reuse-unpredictable": "data reuse unknown",
    "memory-faster-space": "share reused data in a faster memory",
    "memory-broadcast": "read-only data broadcast by its cache",
    # several elements per unit
    "elements-several-per-unit": "compute several elements per unit",
    # units beyond a par_group's limit
    "units-over-limit": "more units than the par_group allows",
    # irregular access
    "store-contention": "concurrent writers per data-dependent address",
    "store-race": "data-dependent updates without atomicAdd",
    "store-privatise": "privatise a contended array",
    "loop-data-bounds-stride": "stride inside a loop with data-dependent bounds",
    "loop-data-bounds-imbalance": "load imbalance of data-dependent trip counts",
    # the time budget of the analyses
    "feedback-budget": "analysis out of time: figures approximate",
    # values
    "values-unknown-name": "value for a name the kernel does not have",
    # cache (paper 6.4)
    "cache-benefits": "accesses that benefit from the cache",
    "cache-may-benefit": "accesses that may benefit from the cache",
    "cache-no-benefit": "accesses that do not benefit from the cache",
    "cache-unpredictable": "unpredictable cache behaviour",
    "cache-not-affine": "no cache figures for an index that is not affine",
    "cache-oriented": "make every access benefit from the cache (cache-oriented architecture)",
    "cache-temporary-size": "fit a temporary array to the caches",
    # the roofline (docs/hardware.md)
    "roofline": "the bound and the attainable performance (roofline)",
    # performance feedback functions (paper 6.5)
    "shared-mem-parallelism": "fewer blocks per SMP than it has slots",
    "memory-access-optimal": "coalescing and bank conflicts",
    "uncoalesced": "uncoalesced global memory access",
    "bank-conflict": "shared-memory bank conflict",
    "warp-access-unknown": "access pattern of a warp unknown",
    "divergence": "divergent branch",
    "occupancy": "occupancy below 100%",
    "function-needs-values": "feedback function needs values",
    "function-missing": "feedback function not found",
    "function-module-error": "feedback function module does not load",
    "function-failed": "feedback function failed",
    "function-not-static": "feedback function cannot complete",
}


# The facts (info messages) a programmer reads first, as the paper's Table II quotes them:
# operation counts, transfers in total, coalescing and bank conflicts, occupancy, data
# reuse (of the kernel's parameters only, mcl.feedback.render.visibility), and the roofline. The
# other facts of the catalogue (every array x loop cache fact, per-parameter transfers,
# overhead and per-space counts, ...) have nothing to act on: shown with `-v`.
HEADLINE_FACTS = frozenset({
    "opstats-summary", "transfers-total", "reuse-independent", "reuse-ratio",
    "memory-access-optimal", "occupancy", "shared-mem-parallelism", "roofline",
})


def title(code: str, text: str = "") -> str:
    """The title of `code`, or the start of the message text for a code of its own."""
    if code in TITLES:
        return TITLES[code]
    head = text.split(":")[0].strip()
    return head if len(head) <= 60 else head[:57] + "..."
