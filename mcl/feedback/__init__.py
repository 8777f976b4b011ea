"""Performance feedback: what limits a kernel at a level, in terms of its own code (the MCL
paper, sections 5 and 6.2-6.5; docs/feedback.md).

    analyse(function, program, hwd, values) -> list[Message]
    analyse_findings(function, program, hwd, values) -> list[Finding]

runs every analysis that applies to the description: each returns findings, typed
records that carry their messages (`findings`). The package has four layers, each
importing only those below it (docs/architecture.md, "Feedback in layers"):

- the engine, here at the top: `registry` (which analyses run, and running them),
  `analysis` (the `Analysis` record and the `AnalysisContext` each one gets), `budget`
  (the time budget), `stage` (feedback for `mcl check`), `codes` (the catalogue of the
  message codes the analyses declare), `values` and `value_checks` (the user's `-D`
  values), `emit` (building message texts from figures); and at the bottom, below the
  analyses, `findings` (what an analysis returns, and the changes it proposes),
  `messages` (the messages the findings carry), `message_code` (a code's declaration)
  and `phrases`;
- `facts/`: what the analyses know about one function, derived once and shared
  (`kernel`: loops, statements, accesses, `declarations` their records; `symbolic`:
  SymPy values; `loop_forms`: a for-loop's condition and step; `counting`: exact
  sums and distinct counts; `reuse`, `costs`, ...: derived facts, `ctx.get(ReuseFacts)`);
- `analyses/`: one module per analysis (`opstats` 6.2, `transfers`, `reuse` 6.3,
  `memory` 6.3, `elements`, `cache` 6.4, `functions` 6.5, `unit_counts`, `irregular`,
  `roofline`), each reading facts and never another analysis;
- `render/`: `text` and `json_report` print reports, `visibility` says which messages a
  report shows without `--verbose`.

The API of the description's performance feedback functions (paper 6.5) stays at the
top, where `hwdescs/*_feedback.py` import it: `kernel_api` (the `Kernel` object),
`program_view`, `lockstep`, `warp_access` and `occupancy`.

Attributes are loaded lazily so that importing this package (e.g. for `mcl check`
without feedback) does not import SymPy.
"""

from __future__ import annotations

from typing import Any

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
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mcl.feedback' has no attribute {name!r}")
