"""The roofline message (issue 17): intensity against each memory level, the bound and the
attainable performance, checked against hand computations at the paper's sizes."""

from __future__ import annotations

import pytest
import sympy
from conftest import KERNELS, by_code, feedback, load_kernel

from mcl import pipeline
from mcl.feedback.analyses.roofline import COMPUTE, roofline_of

PAPER = {"n": 2048, "m": 2048, "p": 2048}  # the paper's matmul (section 7)


def roof(path: str, level: str | None = None):
    program, library = load_kernel(KERNELS / path, level)
    function = program.main.functions[-1]
    return roofline_of(function, pipeline.check(program, library), library.get(function.hwd))


def test_vectoradd_is_bound_by_global_memory_at_any_size():
    r = roof("vectoradd/perfect.mcpl", "hopper")
    (level,) = r.levels
    assert level.space == "global"
    assert r.intensity(level) == sympy.Rational(1, 12)  # 1 flop per 3 floats of 4 B
    assert r.bound({}) == "global"  # a constant intensity: no sizes needed
    n = 2**24
    assert r.attainable({"n": n}) == pytest.approx(3350e9 / 12)
    assert r.min_seconds({"n": n}) == pytest.approx(12 * n / 3350e9)


def test_gesummv_is_bound_by_device_memory():
    r = roof("gesummv/perfect.mcpl", "fermi")
    n = 4096
    assert r.bound({"n": n}) == "global"
    # compulsory traffic: a, b and x read once, y written once; every access (x read
    # for both sums of each row) is the worst case
    flops, moved = 4 * n * n + 3 * n, 4 * (2 * n * n + 2 * n)
    assert r.attainable({"n": n}) == pytest.approx(flops / (moved / (384 * 3696e6 / 8)))
    worst = r.no_reuse()
    assert worst is not None and worst.min_seconds({"n": n}) > r.min_seconds({"n": n})


def test_naive_matmul_bounds_and_a_blocked_one_by_compute():
    naive = roof("matmul/perfect.mcpl", "fermi")
    # the lower bound: a, b read and c written once (4 (nm + mp + np) B) is far below
    # the arithmetic's time at the paper's sizes; the worst case, every access from
    # global memory, is bound by it
    assert naive.bound(PAPER) == COMPUTE
    assert naive.bound({}) is None  # the bound depends on the sizes
    assert naive.min_seconds(PAPER) == pytest.approx(2 * 2048**3 / 1345e9, rel=1e-3)
    worst = naive.no_reuse()
    assert worst is not None and worst.bound(PAPER) == "global"
    bytes_global = 4 * (2 * 2048**3 + 2048**2)
    assert worst.min_seconds(PAPER) == pytest.approx(bytes_global / 177.408e9)
    blocked = roof("matmul/x86_avx512_v3.mcpl")
    assert blocked.bound(PAPER) == COMPUTE
    assert blocked.attainable(PAPER) == pytest.approx(2 * 16 * 2 * 3.7e9)


def test_fraction_is_the_least_time_over_the_measured_time():
    r = roof("vectoradd/perfect.mcpl", "hopper")
    least = r.min_seconds({"n": 1000})
    assert r.fraction({"n": 1000}, 4 * least) == pytest.approx(0.25)
    assert r.fraction({}, 1.0) is None


def test_message_names_the_bound_and_attainable_performance():
    (m,) = by_code(feedback(KERNELS / "matmul/perfect.mcpl", "fermi", values=PAPER), "roofline")
    assert "bound by the arithmetic peak (compute)" in m.text
    assert "at least 12.8 ms (387 ms in the worst case, if no cache served any reuse)" \
        in m.text  # 2 x 2048^3 flop at 1345 GFLOP/s; 4 (2 x 2048^3 + 2048^2) B at 177.4 GB/s
    assert "against global (177 GB/s, compulsory traffic)" in m.text
    values = m.value_map
    assert values["bytes_global"].numeric == 3 * 4 * 2048**2
    assert str(values["bytes_global_no_reuse"].symbolic) == "8*m*n*p + 4*m*n"
    assert values["flops"].numeric == 2 * 2048**3


def test_message_without_sizes_asks_for_them():
    (m,) = by_code(feedback(KERNELS / "matmul/perfect.mcpl", "fermi"), "roofline")
    assert "the bound depends on the sizes" in m.text
    assert m.hint is not None and "-D m=..." in m.hint and "-D p=..." in m.hint


@pytest.mark.parametrize("level", [None, "accelerator", "gpu", "nvidia", "mic"])
def test_no_roofline_without_a_peak(level):
    assert by_code(feedback(KERNELS / "matmul/perfect.mcpl", level, values=PAPER),
                   "roofline") == []


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_mcl_roofline_does_not_analyse_a_kernel_with_errors(tmp_path, capsys):
    # the checker runs first (as for mcl check and codegen): the version is skipped with
    # its error at file:line:col, not given a roofline of a kernel that is not valid MCPL
    from mcl.cli import main

    bad = tmp_path / "bad.mcpl"
    bad.write_text("perfect void f(int n, float[n] a) {\n"
                   "  foreach (int i in n threads) { a[i] = b; }\n}\n")
    rc = main(["roofline", str(bad), "--level", "fermi", "-D", "n=64"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "bad.mcpl:2:" in out and "error: unknown variable 'b'" in out
    assert "flop/B" not in out


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_mcl_roofline_of_a_file_without_functions_is_an_error(tmp_path, capsys):
    # an empty file used to end in an internal error (IndexError): one line at file:1:1
    from mcl.cli import main

    empty = tmp_path / "empty.mcpl"
    empty.write_text("// nothing here\n")
    rc = main(["roofline", str(empty)])
    captured = capsys.readouterr()
    assert rc == 1 and "Traceback" not in captured.err and "internal error" not in captured.err
    assert f"{empty}:1:1: error:" in captured.out and "defines no function" in captured.out


@pytest.mark.parametrize("app", ["matmul", "convolution", "gesummv", "blackscholes",
                                 "vectoradd"])
def test_the_bound_needs_no_more_traffic_than_a_brute_force_run_moves(app):
    """The lower bound's bytes at hopper never exceed the distinct bytes of every array
    parameter a brute-force trace touches (read and written), at small sizes."""
    import numpy as np
    from brute import Tracer
    from cases import reference

    from mcl.feedback.values import evaluate

    program, library = load_kernel(KERNELS / f"{app}/perfect.mcpl", "hopper")
    ref = reference(KERNELS / app)
    function = program.main.function(ref.FUNCTION)
    hwd = library.get(function.hwd)
    sizes = dict(ref.SIZES)
    args = ref.inputs(dict(sizes), np.random.default_rng(0))
    trace = Tracer(program, hwd).run(function, args)
    touched: dict[tuple[str, str], set] = {}
    for slot, index, _ in trace.log:
        site = trace.slots[slot]
        if site.param is not None:
            for mode in set(site.mode):
                touched.setdefault((site.param, mode), set()).add(index)
    # the kernels' elements are 4-byte floats and ints (the trace computes in 8 bytes)
    distinct = sum(len(v) * 4 for v in touched.values())
    (level,) = [lv for lv in roofline_of(function, pipeline.check(program, library), hwd).levels
                if lv.space == "global"]
    assert evaluate(level.bytes, sizes).numeric <= distinct


def test_the_hint_asks_only_for_values_not_given():
    # spmv's row loop depends on data (iters_k); nrows was given and is not asked again
    (m,) = by_code(feedback(KERNELS / "spmv/perfect.mcpl", "hopper",
                            values={"nrows": 4096, "ncols": 4096, "nnz": 65536}), "roofline")
    assert m.hint is not None and "-D iters_k=..." in m.hint
    assert "nrows" not in m.hint and "ncols" not in m.hint


@pytest.mark.parametrize("share, text", [
    (0.63, "63%"), (0.1, "10%"), (0.099999, "10%"), (0.05, "5%"), (0.012, "1.2%"),
    (0.00042, "0.042%"), (9.9e-7, "0.000099%"), (0.0, "0%")])
def test_a_share_of_the_roof_is_never_written_in_exponent_notation(share: float,
                                                                     text: str) -> None:
    # a tiny kernel on a loaded machine reached 9.9e-07 of its roof, printed "9.9e-05%"
    from mcl.feedback.analyses.roofline import percent

    assert percent(share) == text


def test_compulsory_traffic_without_a_gathered_array_says_it_is_a_lower_bound():
    """ELL SpMV reads x through `cols`: which of x's elements move depends on data, so the
    compulsory traffic leaves x out. Against the brute-force trace the figure is the
    other arrays' traffic exactly and below the whole traffic: a lower bound, which the
    text must say (it was shown as the compulsory traffic itself)."""
    import numpy as np
    from brute import Tracer

    from mcl.feedback import analyse
    from mcl.verify import load_reference

    folder = KERNELS.parent / "benchmarks" / "validation_corpus" / "ell_spmv"
    sizes = {"n": 301, "ncols": 53, "width": 5}
    program, library = load_kernel(folder / "hopper.mcpl")
    function = program.main.functions[-1]
    hwd = library.get(function.hwd)
    args = load_reference(folder / "reference.py").module.inputs(
        dict(sizes), np.random.default_rng(1))
    trace = Tracer(program, hwd).run(function, args)
    touched: dict[str, set[tuple[str, tuple[int, ...]]]] = {}
    for slot_number, index, _ in trace.log:
        slot = trace.slots[slot_number]
        for mode in slot.mode:  # an element read once and written once at least
            touched.setdefault(slot.param, set()).add((mode, index))
    traced = {name: 4 * len(elements) for name, elements in touched.items()}
    (m,) = by_code(analyse(function, pipeline.check(program, library), hwd, sizes),
                   "roofline")
    assert "a lower bound: x, read through a subscript that depends on data, not " \
        "counted" in m.text
    figure = m.value_map["bytes_global"].numeric
    assert figure == sum(b for name, b in traced.items() if name != "x")
    assert figure < sum(traced.values())


def test_compulsory_traffic_of_affine_subscripts_is_not_called_a_lower_bound():
    (m,) = by_code(feedback(KERNELS / "gesummv/perfect.mcpl", "fermi", values={"n": 64}),
                   "roofline")
    assert "compulsory traffic)" in m.text and "a lower bound" not in m.text
