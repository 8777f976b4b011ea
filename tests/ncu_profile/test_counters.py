"""Reading Nsight Compute's CSV raw page (mcl.profile.counters): header, units row,
thousands separators, n/a cells, ncu's notes before the table, and one run's totals."""

from __future__ import annotations

import csv
import io

import pytest

from mcl.diagnostics import MclError
from mcl.profile.counters import (
    METRICS,
    ProfiledLaunch,
    parse_number,
    parse_raw_csv,
    sm_clock_hz,
    totals,
)

LAUNCH_COLUMNS = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
                  "Stream", "Block Size", "Grid Size", "Device", "CC"]


def raw_page(rows: list[tuple[str, dict[str, str]]], before: str = "") -> str:
    """A raw page as ncu writes it: quoted header, a units row, one row per launch."""
    out = io.StringIO()
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    metrics = sorted({m for _, values in rows for m in values})
    w.writerow(LAUNCH_COLUMNS + metrics)
    w.writerow([""] * len(LAUNCH_COLUMNS) + ["byte"] * len(metrics))
    for i, (name, values) in enumerate(rows):
        w.writerow([str(i), "42", "python3", "host", name, "1", "7", "(256, 1, 1)",
                    "(512, 1, 1)", "0", "9.0"] + [values.get(m, "") for m in metrics])
    return before + out.getvalue()


def test_numbers_with_separators_and_missing_values() -> None:
    assert parse_number("1,048,576") == 1048576.0
    assert parse_number(" 45.25 ") == 45.25
    assert parse_number("n/a") is None
    assert parse_number("") is None
    assert parse_number("(256, 1, 1)") is None


def test_rows_after_notes_and_units() -> None:
    text = raw_page([("k0", {"dram__bytes_read.sum": "134,217,728",
                             "gpu__time_duration.sum": "40,960",
                             "sm__warps_active.avg.pct_of_peak_sustained_active": "n/a"})],
                    before="==PROF== Connected to process 42\nrow 1 of the program\n")
    [launch] = parse_raw_csv(text)
    assert launch.kernel == "k0"
    assert launch.metrics == {"dram__bytes_read.sum": 134217728.0,
                              "gpu__time_duration.sum": 40960.0}


def test_columns_not_asked_for_are_left_out() -> None:
    text = raw_page([("k0", {"dram__bytes_read.sum": "1", "sm__cycles_elapsed.avg": "9"})])
    assert set(parse_raw_csv(text)[0].metrics) == {"dram__bytes_read.sum"}


def test_no_table_is_a_one_line_error() -> None:
    with pytest.raises(MclError) as caught:
        parse_raw_csv("==PROF== No kernels were profiled.\n")
    assert caught.value.diagnostics[0].code == "profile-csv"


def test_totals_add_counts_and_take_ratios_from_the_longest_launch() -> None:
    short = ProfiledLaunch("a", {"gpu__time_duration.sum": 10.0, "dram__bytes_read.sum": 100.0,
                         "sm__maximum_warps_per_active_cycle_pct": 25.0})
    long = ProfiledLaunch("b", {"gpu__time_duration.sum": 30.0, "dram__bytes_read.sum": 50.0,
                        "sm__maximum_warps_per_active_cycle_pct": 75.0})
    result = totals([short, long])
    assert result["gpu__time_duration.sum"] == 40.0
    assert result["dram__bytes_read.sum"] == 150.0
    assert result["sm__maximum_warps_per_active_cycle_pct"] == 75.0
    assert totals([]) == {}


def test_every_metric_is_a_documented_name() -> None:
    # ncu names: unit__counter[.rollup]; a typo makes ncu refuse the whole run.
    for name in METRICS:
        assert "__" in name and " " not in name, name


def test_the_sm_clock_is_the_longest_launch_s_cycles_over_its_time() -> None:
    short = ProfiledLaunch("a", {"gpu__time_duration.sum": 1e3, "gpc__cycles_elapsed.max": 1.98e3})
    long = ProfiledLaunch("b", {"gpu__time_duration.sum": 2e6, "gpc__cycles_elapsed.max": 3.18e6})
    assert sm_clock_hz([short, long]) == pytest.approx(1.59e9)
    assert sm_clock_hz([ProfiledLaunch("c", {"gpu__time_duration.sum": 1e3})]) is None
    assert sm_clock_hz([]) is None
