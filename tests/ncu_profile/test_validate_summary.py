"""benchmarks/validate_feedback.py's summary: per figure kind the compared and flagged
figures and the error's median, 90th percentile and worst, computed by hand here."""

from __future__ import annotations

import statistics

import pytest

from benchmarks.validate_feedback import (
    line_error,
    partial_writes,
    percentile,
    summarise,
    table,
)
from mcl.hdl.library import default_library


def fig(kind: str, error: float | None, ok: bool | None) -> dict:
    return {"kind": kind, "error": error, "ok": ok}


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 11)]
    assert percentile(values, 0.9) == 9.0
    assert percentile(values, 0.5) == 5.0
    assert percentile([3.0], 0.9) == 3.0


def test_summary_per_kind() -> None:
    cases = [
        {"case": "a", "figures": [fig("dram-read", 0.05, True), fig("spills", None, True)]},
        {"case": "b", "figures": [fig("dram-read", -0.40, False), fig("spills", None, None)]},
        {"case": "c", "figures": [fig("dram-read", 0.10, True)]},
        {"case": "d", "error": "the run failed"},
    ]
    rows = {r["kind"]: r for r in summarise(cases)}
    read = rows["dram-read"]
    assert (read["compared"], read["flagged"], read["flagged_cases"]) == (3, 1, ["b"])
    assert read["median"] == statistics.median([0.05, 0.40, 0.10])
    assert read["p90"] == 0.40
    assert (read["worst"], read["worst_case"]) == (-0.40, "b")  # the sign is kept
    spills = rows["spills"]
    assert (spills["compared"], spills["median"], spills["worst_case"]) == (1, None, None)
    text = table(list(rows.values()))
    assert "| dram-read | 3 | 1 | 10% | 40% | -40% (b) |" in text


def test_line_errors() -> None:
    assert line_error({"kind": "coalescing", "predicted": 1.0, "measured": 4.5}) == 3.5
    assert line_error({"kind": "divergence", "predicted": 50.0, "measured": 12}) is None
    assert line_error({"kind": "bank-conflicts", "predicted": 1.0, "measured": None}) is None


def test_series_steps_pair_consecutive_versions() -> None:
    from benchmarks.validate_feedback import series_steps
    from mcl.profile.series import steps_table

    def case(name: str, seconds: float, bound: float, suggestions: list,
             estimate: float | None = None) -> dict:
        return {"case": name, "suggestions": suggestions, "figures": [
            {"kind": "time-bound", "predicted": bound, "measured": seconds},
            {"kind": "time-estimate", "predicted": estimate, "measured": seconds}]}

    occupancy = {"line": 9, "code": "occupancy", "estimated_gain": 1.25}
    steps = series_steps([case("mm-hopper_v1", 6e-3, 2e-3, [occupancy], 5e-3),
                          case("mm-hopper_v2", 4e-3, 2e-3, [], 4e-3),
                          case("mm-perfect", 1.0, 0.5, []),
                          case("gv-hopper_v2", 1e-3, 1e-4, [])])  # no v3: no step
    assert [s["step"] for s in steps] == ["mm v1 -> mm v2"]
    assert steps[0]["measured_gain"] == 1.5
    # the model's estimate before over after, beside the measured gain
    assert steps[0]["estimates"] == [5e-3, 4e-3] and steps[0]["estimated_gain"] == 1.25
    assert steps[0]["suggestions"] == [occupancy]
    assert ("| mm v1 -> mm v2 | 6000.0 -> 4000.0 us | 1.50x | 5000.0 -> 4000.0 us | 1.25x | "
            "occupancy (line 9: 1.25x) |") in steps_table(steps)


def test_series_steps_cross_levels_in_the_order_of_the_hierarchy() -> None:
    """A version written above hopper (transpose gpu_v1) comes before the hopper versions
    made from it; cases of other kinds (reduction's lone gpu_v1, the idiom corpus) make
    no step."""
    from benchmarks.validate_feedback import series_steps

    def case(name: str) -> dict:
        return {"case": name, "suggestions": [], "figures": [
            {"kind": "time-bound", "predicted": 1e-4, "measured": 2e-4}]}

    steps = series_steps([case("transpose-hopper_v1"), case("transpose-gpu_v1"),
                          case("transpose-perfect"), case("reduction-gpu_v1"),
                          case("idiom-scan"), case("mm-hopper_v2"), case("mm-hopper_v1")])
    assert [s["step"] for s in steps] == ["mm v1 -> mm v2", "transpose gpu_v1 -> transpose v1"]


def test_the_time_estimate_is_held_out_on_half_the_cases() -> None:
    from benchmarks.validate_feedback import estimate_halves, halves

    calibration, held_out = halves(["d", "a", "c", "b"])
    assert (calibration, held_out) == (["b", "d"], ["a", "c"])
    cases = [{"case": name, "figures": [{"kind": "time-estimate", "error": error}]}
             for name, error in (("a", 0.1), ("b", -0.5), ("c", 0.3), ("d", 0.2))]
    cases.append({"case": "e", "figures": []})  # no estimate: in the held-out half, unused
    rows = {r["cases"]: r for r in estimate_halves(cases)}
    assert rows["all"]["median"] == pytest.approx(0.25)
    assert rows["calibration half"]["worst_case"] == "b"
    assert rows["held-out half"]["median"] == pytest.approx(0.2)
    assert rows["held-out half"]["within_25"] == 1


def test_the_partial_write_rate_is_fitted_only_where_that_term_is_the_estimate() -> None:
    """The estimate is the launch and the phases, no less than the partial-sector writes:
    the term binds where it is the estimate less the launch (transpose perfect), not
    where the phases add up to more (convolution hopper_v2: 133 µs of phases, 79.5 µs
    of partial writes, which exceed the 53 µs difference)."""
    hwd = default_library().get("hopper")
    bound = {"estimated_seconds": 1.2725e-3, "seconds_launch": 2.5e-6,
             "seconds_partial_sector_writes": 1.27e-3}
    rate = partial_writes(bound, 1.2725e-3, hwd)
    assert rate is not None
    assert rate == pytest.approx(1.27e-3 * 1689e9 / (1.2725e-3 - 2.5e-6), rel=1e-3)
    phases = {"estimated_seconds": 132.8e-6, "seconds_launch": 2.5e-6,
              "seconds_partial_sector_writes": 79.5e-6}
    assert partial_writes(phases, 177e-6, hwd) is None
