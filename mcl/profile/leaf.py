"""The feedback of a kernel at the leaf it is profiled at, as `mcl check --level LEAF
--feedback -v -D ...` finds it (its findings; the messages of `--format json` for the
benchmarks that read the document), plus the roofline bound (mcl.report.attained)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.profile.prediction import Prediction, predict

if TYPE_CHECKING:
    from mcl.feedback.findings import Finding
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program


def feedback_messages(program: CheckedProgram | Program, library: Any,
                      sizes: Mapping[str, int], clock_hz: float | None = None
                      ) -> list[dict[str, Any]]:
    """Every feedback message of `program` (verbose), as the JSON document holds them
    (a bare `Program` is checked first), the time model at the SM clock `clock_hz` where
    given (FeedbackOptions.clock_hz)."""
    from mcl.feedback.messages import FeedbackSeverity
    from mcl.feedback.stage import FeedbackOptions, json_report, run_feedback

    options = FeedbackOptions(tuple(f"{k}={v}" for k, v in sizes.items()), (),
                              FeedbackSeverity.INFO, verbose=True, clock_hz=clock_hz)
    from mcl import pipeline

    report = run_feedback(pipeline.checked(program, library), library, options)
    messages: list[dict[str, Any]] = json_report([report])["messages"]
    return messages


def feedback_findings(program: CheckedProgram | Program, library: Any,
                      sizes: Mapping[str, int], clock_hz: float | None = None
                      ) -> list[Finding]:
    """Every feedback finding of `program` (a bare `Program` is checked first), the time
    model at the SM clock `clock_hz` where given (FeedbackOptions.clock_hz)."""
    from mcl import pipeline
    from mcl.feedback.registry import analyse_program_findings

    findings, _ = analyse_program_findings(pipeline.checked(program, library), library,
                                           sizes, clock_hz)
    return findings


def at_leaf(path: Path, include_dirs: Sequence[str], library: Any, function: str,
            leaf: str) -> CheckedProgram:
    """The program of `path`, translated to `leaf` when `function` is written higher up
    (code generation does the same), after a clean check: with its side tables, so the
    feedback and the roofline of `predict_at_leaf` do not check it again."""
    from mcl import pipeline

    return pipeline.lower(pipeline.checked_at(path, include_dirs, library), leaf, library,
                          function)


def predict_at_leaf(program: CheckedProgram, library: Any, function: str, leaf: str,
                    sizes: Mapping[str, int], clock_hz: float | None = None) -> Prediction:
    """The feedback's figures, the time model at the SM clock `clock_hz` where given (the
    clock the profiler ran the kernel at). The roofline bound stays at the description's
    clock: a faster clock only lowers it, so it bounds the measured time all the same."""
    from mcl.report.attained import leaf_roofline

    prediction = predict(function, feedback_findings(program, library, sizes, clock_hz))
    # a kernel without arithmetic is bound by its traffic all the same
    roof = leaf_roofline(program, function, leaf, library, memory_only=True, values=sizes)
    if roof is not None:
        prediction.bound_seconds = roof.min_seconds(sizes)
        prediction.bound_by = roof.bound(sizes)
    return prediction
