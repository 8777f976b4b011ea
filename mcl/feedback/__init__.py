"""Performance feedback: what limits a kernel at a level, in terms of its own code (the MCL
paper, sections 5 and 6.2-6.5; docs/feedback.md).

    analyse(function, program, hwd, values) -> list[Message]

runs every analysis that applies to the description (`registry` lists them; `analysis`
defines an `Analysis` record and the `AnalysisContext` each one gets); one module per
analysis: `opstats` (6.2), `transfers`, `reuse` (6.3), `memory` (6.3, faster memories),
`elements` (several elements per unit), `cache` (6.4) and `functions` (6.5). They share
the facts of a function (`kernel`: loops, statements, accesses; `symbolic`: SymPy values;
`counting`: exact sums and distinct counts). `values` reads `-D`/`--values`, `emit`
builds message texts from figures, `codes` names every message code, `visibility` says
which messages a report shows without `--verbose`, `render_text` / `render_json` print
reports, `stage` runs and reports it for `mcl check` (`--severity`,
`--verbose`).

Attributes are loaded lazily so that importing this package (e.g. for `mcl check`
without feedback) does not import SymPy.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "analyse": "mcl.feedback.registry",
    "analyse_program": "mcl.feedback.registry",
    "analyses": "mcl.feedback.registry",
    "Analysis": "mcl.feedback.analysis",
    "AnalysisContext": "mcl.feedback.analysis",
    "Message": "mcl.feedback.messages",
    "Severity": "mcl.feedback.messages",
    "Value": "mcl.feedback.messages",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'mcl.feedback' has no attribute {name!r}")
