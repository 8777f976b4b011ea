"""mcl.verify: the comparison and reporting shared by every way of running a kernel."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from mcl.diagnostics import MclError
from mcl.resources import kernels_dir
from mcl.verify import (
    apart,
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


def test_a_mismatch_is_printed_with_the_digits_that_tell_the_numbers_apart() -> None:
    # -0.3922085 and its float32 neighbour printed the same with 7 digits
    expected = np.array([-0.3922085], dtype=np.float32)
    got = np.nextafter(expected, np.float32(0))
    check = compare_output("y", got, expected, rtol=0.0, atol=0.0)
    assert not check.ok
    shown = check.note.split("got ")[1].split(", bound")[0]
    got_text, expected_text = shown.split(", expected ")
    assert got_text != expected_text
    assert np.float32(float(got_text)) == got[0] and np.float32(float(expected_text)) == expected[0]
    assert apart(0.5, 0.25) == ("0.5", "0.25")


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


def test_the_bound_grows_with_the_number_of_terms() -> None:
    """gamma(k) is the worst-case ku/(1 - ku) for few terms and the probabilistic
    λ√k·u beyond λ² terms: above the sum's real error, below a dropped term."""
    from mcl.verify import LAMBDA, U32, gamma

    assert gamma(1) == pytest.approx(U32 / (1 - U32))
    assert gamma(4096, "worst-case") == pytest.approx(4096 * U32, rel=1e-3)
    assert gamma(4096) == pytest.approx(LAMBDA * 64 * U32, rel=1e-3)
    assert gamma(10**6) < gamma(10**6, "worst-case") / 50
    assert np.all(np.diff(gamma(np.arange(1, 10**5))) > 0)


def test_error_bounds_scale_with_the_sum_of_absolute_terms() -> None:
    """reduction: the bound of a chunk is gamma(chunk) times sum |x| of that chunk (the
    reference run on absolute values)."""
    from mcl.verify import gamma

    ref = load_reference(kernels_dir() / "reduction" / "reference.py")
    _, args = make_inputs(ref, {"n": 100, "chunk": 30}, seed=1)
    expected = expected_outputs(ref, args)
    sums = np.add.reduceat(np.abs(args["x"].astype(np.float64)), np.arange(0, 100, 30))
    assert expected.bounds["partial"] == pytest.approx(gamma(30) * sums, rel=1e-6)
    assert "γ(30)" in expected.rules["partial"]
    # Exact kernels get a zero bound: any difference fails.
    exact = load_reference(kernels_dir() / "transpose" / "reference.py")
    _, targs = make_inputs(exact, {}, seed=1)
    texpected = expected_outputs(exact, targs)
    assert not texpected.bounds["b"].any()
    got = texpected["b"].copy()
    got.flat[3] = np.nextafter(got.flat[3], np.float32(2))
    assert [c.ok for c in verify(exact, texpected, {"b": got}, targs)] == [False]


def test_bound_and_worst_ratio_are_in_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    ref = load_reference(kernels_dir() / "gesummv" / "reference.py")
    _, args = make_inputs(ref, {"n": 40}, seed=1)
    expected = expected_outputs(ref, args)
    got = expected["y"].copy()
    got[5] += np.float32(0.5 * expected.bounds["y"][5])
    (check,) = verify(ref, expected, {"y": got}, args)
    assert check.ok and 0.4 < check.ratio <= 0.5 and check.rule == "γ(43)·Σ|terms|"
    print_report([check], "t", Console(width=250, force_terminal=False))
    out = capsys.readouterr().out
    assert "err/bound" in out and "bounds: y: γ(43)·Σ|terms|" in out


def test_references_may_keep_a_fixed_tolerance_or_give_their_own_bound(tmp_path: Path) -> None:
    source = (kernels_dir() / "vectoradd" / "reference.py").read_text()
    fixed = tmp_path / "fixed.py"
    fixed.write_text(source.replace("def error_terms", "TOLERANCE = {'atol': 0.5}\n\n\ndef _no"))
    ref = load_reference(fixed)
    _, args = make_inputs(ref, {"n": 4}, seed=0)
    expected = expected_outputs(ref, args)
    (check,) = verify(ref, expected, {"c": expected["c"] + np.float32(0.4)}, args)
    assert check.ok and check.rule.startswith("atol 0.5")
    own = tmp_path / "own.py"
    own.write_text(source + "\ndef error_bound(args, outputs):\n    return {'c': 1e-3}\n")
    ref = load_reference(own)
    expected = expected_outputs(ref, args)
    (check,) = verify(ref, expected, {"c": expected["c"] + np.float32(2e-3)}, args)
    assert not check.ok and check.rule == "error_bound()" and check.ratio > 1.9
    none = tmp_path / "none.py"
    none.write_text(source.replace("def error_terms", "def _no"))
    with pytest.raises(MclError, match="error_bound or error_terms or TOLERANCE"):
        load_reference(none)
