"""Performance feedback: what limits a kernel at a level, in terms of its own code (the MCL
paper, sections 5 and 6.2-6.5; docs/feedback.md).

    analyse(function, program, hwd, values) -> list[Message]
    analyse_findings(function, program, hwd, values) -> list[Finding]

runs every analysis that applies to the description: each returns findings, typed
records that carry their messages (`findings`). The package is ordered in rows, each
module importing only its own row and those below (docs/architecture.md, "Feedback in
layers", whose table tests/test_import_layers.py checks), from the top:

- `stage` (feedback for `mcl check`), then `render/` (`text` and `json_report` print
  reports, `visibility` says which messages a report shows without `--verbose`), then
  `codes` (the catalogue of the message codes the analyses declare), then `registry`
  (which analyses run, and running them);
- `analyses/`: one module per analysis (`opstats` 6.2, `transfers`, `reuse` 6.3,
  `memory` 6.3, `elements`, `cache` 6.4, `functions` 6.5, `unit_counts`, `irregular`,
  `roofline`, `timemodel`), each reading facts and never another analysis;
- the API of the descriptions' performance feedback functions (paper 6.5), which
  `hwdescs/*_feedback.py` import: `lockstep` and `occupancy`, then `kernel_api` (the
  `Kernel` object);
- `facts/`: what the analyses know about one function, derived once and shared
  (`kernel`: loops, statements, accesses, `declarations` their records; `symbolic`:
  SymPy values; `loop_forms`: a for-loop's condition and step; `counting`: exact
  sums and distinct counts; `reuse`, `costs`, ...: derived facts, `ctx.get(ReuseFacts)`),
  and beside them `analysis` (the `Analysis` record and the `AnalysisContext` each
  analysis gets), `emit` (building message texts from figures), `values` and
  `value_checks` (the user's `-D` values), `findings` (what an analysis returns, and the
  changes it proposes) and `compiler_registers`;
- at the bottom: `messages` (the messages the findings carry), `message_code` (a code's
  declaration), `phrases`, `budget` (the time budget), `exact`, `program_view`,
  `warp_access` and `refinable`.

Attributes are loaded lazily so that importing this package (e.g. for `mcl check`
without feedback) does not import SymPy.
"""

from __future__ import annotations

from typing import Any

from mcl import exported

_EXPORTS = {
    "analyse": "mcl.feedback.registry",
    "analyse_findings": "mcl.feedback.registry",
    "Finding": "mcl.feedback.findings",
    "analyse_program": "mcl.feedback.registry",
    "analyses": "mcl.feedback.registry",
    "Analysis": "mcl.feedback.analysis",
    "AnalysisContext": "mcl.feedback.analysis",
    "Message": "mcl.feedback.messages",
    "FeedbackSeverity": "mcl.feedback.messages",
    "Value": "mcl.feedback.messages",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    return exported(__name__, _EXPORTS, name)
