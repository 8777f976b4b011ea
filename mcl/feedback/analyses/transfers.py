"""Host <-> device transfers (paper section 5, level `accelerator`; feedback.md analysis 2).

"The analysis to provide this feedback infers that variables a and b are read and that c
is written inside the foreach loops. The compiler can give this feedback because the sizes
of a, b, and c are known in terms of parameters n, m, and p." Every array parameter the
kernel reads moves host -> device, every one it writes moves device -> host (a parameter
both read and written moves both ways); the time is bytes at the bandwidth of the
interconnect between host and device memory. A parameter whose every element the kernel's
first foreach nest writes before any is read (`mcl.feedback.facts.overwritten`: spmv
hopper (v2) clears `y`, then adds into it) does not move host -> device: its values on
entry are never read.

Runs only for descriptions with a host (feedback.md: "no host/interconnect -> no transfer
report").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.emit import Emitter, number_text, readable
from mcl.feedback.facts.overwritten import overwritten_first
from mcl.feedback.facts.sizes import parameter_bytes
from mcl.feedback.findings import TRANSFERS_DOCS, Finding, TransferTotals, code_of, declaration
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription


# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = TRANSFERS_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("transfers-parameter", "host <-> device transfer of a parameter",
                (FeedbackSeverity.INFO,), DOCS),
    declaration(TransferTotals),
)


def has_host(hwd: HardwareDescription) -> bool:
    return bool(hwd.has_host())


def transfers(ctx: AnalysisContext) -> list[Finding]:
    """Bytes moved between host and device memory per parameter and in total."""
    function, hwd, facts, values = ctx.function, ctx.hwd, ctx.facts, ctx.values
    emit = Emitter(facts, "transfers", values)
    link = hwd.host_link()
    bandwidth = link.bandwidth.value if link is not None and link.bandwidth else None
    link_name = link.node.name if link is not None else "the host interconnect"
    out: list[Finding] = []
    total_in, total_out = sympy.Integer(0), sympy.Integer(0)
    cleared = overwritten_first(facts)
    for name, mode, size in parameter_bytes(facts):
        param = facts.param(name)
        span = param.span if param is not None else function.span
        size = readable(size)  # totals keep each parameter's readable term
        directions = []
        if "r" in mode and name not in cleared:
            total_in += size
            directions.append("host -> device (read by the kernel)")
        if "w" in mode:
            total_out += size
            directions.append("device -> host (written by the kernel)")
        text = f"{name}: {{bytes}} bytes " + " and ".join(directions)
        if name in cleared:
            text += (f"; nothing host -> device: the first kernel writes every element of "
                     f"{name} before the kernel reads it")
        out.append(Finding(emit.message("transfers-parameter", FeedbackSeverity.INFO, text,
                                        span, {"bytes": size})))
    if not out:
        return out
    figures: dict[str, Any] = {"bytes_in": total_in, "bytes_out": total_out,
                               "bytes_total": total_in + total_out}
    text = (f"{link_name} transfers: {{bytes_in}} bytes host -> device, {{bytes_out}} bytes "
            "device -> host, {bytes_total} bytes in total")
    if bandwidth is not None and bandwidth != float("inf") and bandwidth > 0:
        # bandwidth is in bit/s (mcl.hdl.model normalises units)
        # factor_terms: (m*n + m*p + n*p)/2000000000 rather than a sum of fractions
        seconds = sympy.factor_terms((total_in + total_out) * 8 / sympy.Integer(int(bandwidth)))
        figures["seconds"] = seconds
        text += f"; {{seconds}} s at {number_text(bandwidth / 8e9)} GB/s"
    message = emit.message(code_of(TransferTotals), FeedbackSeverity.INFO, text,
                           function.span, figures)
    stated = message.value_map  # the totals as the message states them
    out.append(TransferTotals(message, bytes_in=stated["bytes_in"],
                              bytes_out=stated["bytes_out"]))
    return out

