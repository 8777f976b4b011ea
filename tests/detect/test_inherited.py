"""A detected Hopper GPU keeps what hopper.hdl states beyond the query and the benchmarks:
the L2 figures fitted on the validation cases and the feedback functions whose analyses
the time model reads (without them a transpose writing partial sectors was estimated 5x
too fast at the detected description, docs/hdl.md)."""

from __future__ import annotations

import json
from pathlib import Path

from mcl.detect.generate import generate
from mcl.detect.inherited import FITTED, fitted
from mcl.hdl.library import default_library, library_with

DATA = Path(__file__).parent / "data"


def _detected(tmp_path: Path, query: str):
    generated = generate(json.loads((DATA / query).read_text()), "detected")
    for file, text in generated.files().items():
        (tmp_path / file).write_text(text)
    library = library_with([tmp_path])
    assert "detected" not in library.failed, library.failed.get("detected")
    return generated, library.get("detected")


def _l2(hwd):
    return next(c for c in hwd.caches() if c.node.name == "l2").node.values


def test_a_detected_h100_states_hopper_s_fitted_l2_figures(tmp_path: Path) -> None:
    generated, hwd = _detected(tmp_path, "h100_query.json")
    assert generated.parent == "hopper"
    hopper = _l2(default_library().get("hopper"))
    names = FITTED["cache l2"]
    assert all(name in hopper for name in names)  # else the test checks nothing
    assert {n: _l2(hwd)[n] for n in names} == {n: hopper[n] for n in names}


def test_a_detected_h100_names_hopper_s_feedback_functions(tmp_path: Path) -> None:
    generated, hwd = _detected(tmp_path, "h100_query.json")
    hopper = {name for name, _ in default_library().get("hopper").feedback_functions()}
    assert {"load_store_optimality", "divergence", "occupancy"} <= hopper
    assert {name for name, _ in hwd.feedback_functions()} >= hopper
    # each found in the detected description's own module (mcl.feedback.analyses.functions)
    assert generated.feedback is not None
    assert all(name in generated.feedback for name in hopper)


def test_another_parent_takes_nothing(tmp_path: Path) -> None:
    assert fitted("gpu", "cache l2") == []
    assert fitted("hopper", "cache l1") == []
    assert fitted("no_such_description", "cache l2") == []
    generated, _ = _detected(tmp_path, "mi210_query.json")
    assert "partial_write_bandwidth" not in generated.hdl
    assert "performance_feedback" not in generated.hdl
