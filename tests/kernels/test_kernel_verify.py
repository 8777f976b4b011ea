"""mcl.verify: the comparison and reporting shared by every way of running a kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from mcl.diagnostics import MclError
from mcl.resources import kernels_dir
from mcl.verify import (
    compare_output,
    expected_outputs,
    format_rate,
    load_reference,
    make_inputs,
    parse_defines,
    print_report,
    rate_of,
    sizes_from,
    verify,
)


def test_compare_output_counts_elements_outside_the_tolerance() -> None:
    expected = np.array([1.0, 2.0, 0.0, -4.0], dtype=np.float32)
    got = np.array([1.0, 2.1, 1e-7, -4.0], dtype=np.float32)
    check = compare_output("y", got, expected, rtol=1e-3, atol=1e-6)
    assert not check.ok and check.mismatches == 1
    assert check.max_abs == pytest.approx(0.1, rel=1e-5)
    assert check.max_rel == np.inf  # 1e-7 where 0 was expected
    assert "first at [1]" in check.note
    assert compare_output("y", got, expected, rtol=0.06, atol=1e-6).ok


def test_nan_and_shape_never_match() -> None:
    expected = np.zeros(3, dtype=np.float32)
    nan = compare_output("y", np.array([0, np.nan, 0], dtype=np.float32), expected, 1, 1)
    assert not nan.ok and nan.mismatches == 1 and np.isnan(nan.max_abs)
    shape = compare_output("y", np.zeros(4, dtype=np.float32), expected, 1, 1)
    assert not shape.ok and "shape" in shape.note


def test_expected_outputs_are_computed_on_copies() -> None:
    ref = load_reference(kernels_dir() / "vectoradd" / "reference.py")
    sizes, args = make_inputs(ref, {"n": 5}, seed=2)
    assert sizes == {"n": 5}
    expected = expected_outputs(ref, args)
    assert not args["c"].any()  # the output argument is untouched
    checks = verify(ref, expected, {"c": args["a"] + args["b"]}, args)
    assert [c.ok for c in checks] == [True]
    assert [c.ok for c in verify(ref, expected, {}, args)] == [False]  # output missing


def test_print_report(capsys: pytest.CaptureFixture[str]) -> None:
    ok = compare_output("c", np.ones(2), np.ones(2), 0, 0)
    bad = compare_output("d", np.zeros(2), np.ones(2), 0, 0)
    console = Console(width=200, force_terminal=False)
    assert print_report([ok], "t", console) is True
    assert print_report([ok, bad], "t", console) is False
    out = capsys.readouterr().out
    assert "OK" in out and "FAIL" in out


def test_parse_defines() -> None:
    assert parse_defines(["n=13", "m = 0x10"], {"n": 1, "m": 1}) == {"n": 13, "m": 16}
    with pytest.raises(MclError, match="not a size"):
        parse_defines(["nn=3"], {"n": 1})
    with pytest.raises(MclError, match="a size is an integer"):
        parse_defines(["n=1.5"], {"n": 1})


def test_report_run_takes_its_sizes_from_the_feedback_values() -> None:
    """`mcl report -D ... --run` parses -D once (mcl.defines, as the feedback does) and
    picks the reference's sizes from those values; other names are feedback values."""
    from mcl.feedback.values import collect_values

    values = collect_values(["n=0x10", "iters_x=2.5", "m=3"])
    assert sizes_from(values, {"n": 1, "m": 1}, strict=False) == {"n": 16, "m": 3}
    with pytest.raises(MclError, match="not a size"):
        sizes_from(values, {"n": 1, "m": 1}, strict=True)
    with pytest.raises(MclError, match="a size is an integer"):
        sizes_from(collect_values(["n=2.5"]), {"n": 1}, strict=False)


def test_format_rate_uses_the_papers_units() -> None:
    assert format_rate((2e9, "FLOP"), 0.5) == "4 GFLOP/s"
    # GB/s in 10^9 bytes per second, as mcl report --run (one formula: rate_of)
    assert format_rate((1e9, "B"), 2.0) == "0.5 GB/s"
    assert format_rate((1024**3, "B"), 1.0) == "1.07 GB/s"
    assert format_rate(None, 1.0) == ""


def test_run_report_and_tune_share_one_rate() -> None:
    for work in ((3e9, "FLOP"), (5e9, "B")):
        rate, unit = rate_of(work, 2.0)
        assert rate is not None and abs(rate - work[0] / 2e9) < 1e-12
        assert format_rate(work, 2.0) == f"{rate:.3g} {unit}"
        assert unit == ("GFLOP/s" if work[1] == "FLOP" else "GB/s")


def test_broken_references_are_diagnostics(tmp_path: Path) -> None:
    bad = tmp_path / "reference.py"
    bad.write_text("FUNCTION = 'f'\n")
    with pytest.raises(MclError, match="lacks SIZES"):
        load_reference(bad)
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(MclError, match="boom"):
        load_reference(bad)
    with pytest.raises(MclError, match="no numpy reference"):
        load_reference(tmp_path / "missing.py")
    ref = load_reference(kernels_dir() / "spmv" / "reference.py")
    with pytest.raises(MclError, match="inputs"):
        make_inputs(ref, {"nnz": 10**6}, seed=0)


def test_references_with_any_suffix_load_and_bad_python_is_positioned(tmp_path: Path) -> None:
    # `--reference ref.txt` (or a binary file) used to end in an AssertionError: importlib
    # finds no loader for a name without the .py suffix.
    plain = tmp_path / "ref.txt"
    plain.write_text((kernels_dir() / "vectoradd" / "reference.py").read_text())
    assert load_reference(plain).function == "vectoradd"
    broken = tmp_path / "broken.txt"
    broken.write_text("FUNCTION = 'f'\nSIZES = {\n")
    with pytest.raises(MclError) as exc:
        load_reference(broken)
    d = exc.value.diagnostics[0]
    assert "is not valid Python" in d.message
    assert (d.span.line, d.span.column) == (2, 9)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)))
    with pytest.raises(MclError, match="not valid Python|failed to load"):
        load_reference(garbage)
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(MclError, match="SystemExit"):
        load_reference(exits)


def test_format_rate_never_uses_scientific_notation_for_large_rates() -> None:
    assert format_rate((5275.3e9, "FLOP"), 1.0) == "5,280 GFLOP/s"
    assert format_rate((51_170e9, "FLOP"), 1.0) == "51,200 GFLOP/s"
    assert format_rate((100e9, "FLOP"), 1.0) == "100 GFLOP/s"


def test_tolerance_can_grow_with_the_sizes() -> None:
    """matmul's float32 dot products of length p err by about p * eps; the reference
    scales atol with p (an H200 run at p = 4096 erred by 3.5e-4 on 4 of 16M elements)."""
    from mcl.resources import kernels_dir
    from mcl.verify import load_reference

    ref = load_reference(kernels_dir() / "matmul" / "reference.py")
    assert ref.tolerance_for({"n": 8, "m": 8, "p": 8})["atol"] == ref.tolerance["atol"]
    assert ref.tolerance_for({"n": 8, "m": 8, "p": 4096})["atol"] >= 3.5e-4 * 10
