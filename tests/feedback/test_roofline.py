"""The roofline message (issue 17): intensity against each memory level, the bound and the
attainable performance, checked against hand computations at the paper's sizes."""

from __future__ import annotations

import pytest
import sympy
from conftest import KERNELS, by_code, feedback, load_kernel

from mcl.feedback.roofline import COMPUTE, roofline_of

PAPER = {"n": 2048, "m": 2048, "p": 2048}  # the paper's matmul (section 7)


def roof(path: str, level: str | None = None):
    program, library = load_kernel(KERNELS / path, level)
    function = program.main.functions[-1]
    return roofline_of(function, program, library.get(function.hwd))


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
    flops, moved = 4 * n * n + 3 * n, 16 * n * n + 4 * n  # 2 multiply-adds per a, b element
    assert r.attainable({"n": n}) == pytest.approx(flops / (moved / (384 * 3696e6 / 8)))


def test_naive_matmul_is_bound_by_memory_and_a_blocked_one_by_compute():
    naive = roof("matmul/perfect.mcpl", "fermi")
    assert naive.bound(PAPER) == "global"
    assert naive.bound({}) is None  # p/(4p + 2): the bound depends on the sizes
    bytes_global = 4 * (2 * 2048**3 + 2048**2)
    assert naive.min_seconds(PAPER) == pytest.approx(bytes_global / 177.408e9)
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
    assert "bound by global memory bandwidth" in m.text
    assert "attainable 44.3 GFLOP/s" in m.text  # 177.4 GB/s x 2048/(4 x 2048 + 2) flop/B
    values = m.value_map
    assert str(values["intensity_global"].symbolic) == "p/(4*p + 2)"
    assert values["flops"].numeric == 2 * 2048**3


def test_message_without_sizes_asks_for_them():
    (m,) = by_code(feedback(KERNELS / "matmul/perfect.mcpl", "fermi"), "roofline")
    assert "the bound depends on the sizes" in m.text
    assert m.hint is not None and "-D m=..." in m.hint and "-D p=..." in m.hint


@pytest.mark.parametrize("level", [None, "accelerator", "gpu", "nvidia", "mic"])
def test_no_roofline_without_a_peak(level):
    assert by_code(feedback(KERNELS / "matmul/perfect.mcpl", level, values=PAPER),
                   "roofline") == []


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
