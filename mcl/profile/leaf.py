"""The feedback of a kernel at the leaf it is profiled at, as `mcl check --level LEAF
--format json -v -D ...` would give it, plus the roofline bound (mcl.report.attained)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcl.commands.run import _raise_errors
from mcl.profile.prediction import Prediction, predict


def feedback_messages(program: Any, library: Any, sizes: Mapping[str, int]
                      ) -> list[dict[str, Any]]:
    """Every feedback message of `program` (verbose), as the JSON document holds them."""
    from mcl.feedback.messages import Severity as FeedbackSeverity
    from mcl.feedback.stage import FeedbackOptions, json_report, run_feedback

    options = FeedbackOptions(tuple(f"{k}={v}" for k, v in sizes.items()), (),
                              FeedbackSeverity.INFO, verbose=True)
    report = run_feedback(program, library, options)
    messages: list[dict[str, Any]] = json_report([report])["messages"]
    return messages


def at_leaf(path: Path, include_dirs: Sequence[str], library: Any, function: str,
            leaf: str) -> Any:
    """The program of `path`, translated to `leaf` when `function` is written higher up
    (code generation does the same), after a clean check."""
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program

    program = load_program(path, list(include_dirs), library)
    _raise_errors(check_program(program, library))
    found = program.main.function(function)
    if found is not None and found.hwd != leaf:
        from mcl.translate import translate_program

        translated = translate_program(program, leaf, library).program
        assert translated is not None  # translate_program always sets the program
        program = translated
        _raise_errors(check_program(program, library))
    return program


def predict_at_leaf(program: Any, library: Any, function: str, leaf: str,
                    sizes: Mapping[str, int]) -> Prediction:
    from mcl.report.attained import leaf_roofline

    prediction = predict(function, feedback_messages(program, library, sizes))
    roof = leaf_roofline(program, function, leaf, library)
    if roof is not None:
        prediction.bound_seconds = roof.min_seconds(sizes)
        prediction.bound_by = roof.bound(sizes)
    return prediction
