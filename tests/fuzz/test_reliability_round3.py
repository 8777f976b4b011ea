"""Reliability, round 3: the classes an independent fuzzer found, each as its smallest
trigger. Analyses are total (a figure, perhaps approximate, never an internal error),
values that no C type or no hardware holds get a located diagnostic, and a run never
touches memory outside an array (docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl.cli import main
from mcl.verify import compare_bounded
from tests.fuzz.checking import run_json

REPO = Path(__file__).resolve().parents[2]


def _kernel(body: str, params: str = "int n, main float[n] a", level: str = "perfect") -> str:
    return (f"{level} void k({params}) {{\n  foreach (int i in n threads) {{\n{body}\n"
            "  }\n}\n")


def _summary(doc: dict) -> dict:
    return next(m for m in doc["messages"] if m["code"] == "opstats-summary")


def _trips(start: int, bound: int, factor: int, inclusive: bool) -> int:
    count, k = 0, start
    while (k <= bound) if inclusive else (k < bound):
        count, k = count + 1, k * factor
    return count


GEOMETRIC = _kernel(
    "    float s = 0.0;\n"
    "    for (int k = 1; k < m; k *= 2) { s += b[i]; }\n"
    "    for (int k = 3; k <= m; k *= 3) { s += b[i]; }\n"
    "    for (int k = 1; k < -5; k *= 2) { s += b[i]; }\n"
    "    for (int k = 1; k < i; k *= 2) { s += 1.0; }\n"
    "    a[i] = s;", "int n, int m, main float[n] a, main float[n] b")


@pytest.mark.parametrize("level", ["perfect", "fermi", "hopper"])
@pytest.mark.parametrize("m", [1, 2, 3, 9, 10, 100])
def test_geometric_loops_count_like_a_brute_force_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str, m: int
) -> None:
    """Doubling loops with a bound below the start (`k < -5`, or a counter that is 0)
    used to take the logarithm of a negative number or of 0 ('3 + 5*I', 'zoo')."""
    code, doc, _ = run_json(tmp_path, capsys, GEOMETRIC,
                            ["--level", level, "-D", "n=50", "-D", f"m={m}"])
    assert code == 0
    loads = _summary(doc)["values"]["loads"]["numeric"]
    expected = 50 * (_trips(1, m, 2, False) + _trips(3, m, 3, True) + _trips(1, -5, 2, False))
    assert loads == expected


def test_trip_counts_are_clamped_at_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    source = _kernel("    float s = 0.0;\n    for (int k = 0; k < m - 100; k++) { s += a[i]; }\n"
                     "    a[i] = s;", "int n, int m, main float[n] a")
    code, doc, _ = run_json(tmp_path, capsys, source, ["-D", "n=10", "-D", "m=5"])
    assert code == 0
    values = _summary(doc)["values"]
    assert values["loads"]["numeric"] == 0  # the loop runs no iteration, not -95
    assert values["computational"]["numeric"] == 0
    code, doc, _ = run_json(tmp_path, capsys, source, ["-D", "n=10", "-D", "m=103"])
    assert _summary(doc)["values"]["loads"]["numeric"] == 10 * 3


@pytest.mark.parametrize("level", ["fermi", "hopper"])
@pytest.mark.parametrize("loop", [
    "for (int k = 0; k < toInt(toFloat(i) * 100.0); k++) { s += 1.0; }",
    "for (int k = 0; k < -50; k++) { for (int j = 0; j < toInt(exp(toFloat(i))); j++) "
    "{ s += 1.0; } }",
])
def test_float_dependent_trip_counts_give_a_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str, loop: str
) -> None:
    source = _kernel(f"    float s = 0.0;\n    {loop}\n    a[i] = s;")
    code, doc, _ = run_json(tmp_path, capsys, source, ["--level", level, "-D", "n=100"])
    assert code == 0
    assert _summary(doc)["values"]["computational"]["numeric"] is not None


@pytest.mark.parametrize("command", [["check"], ["translate", "--to", "gpu"]])
def test_a_literal_of_thousands_of_digits_is_an_int_range_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    source = _kernel("    a[i] = " + "1" * 4301 + ";", "int n, main int[n] a")
    path = tmp_path / "k.mcpl"
    path.write_text(source, encoding="utf-8")
    assert main([*command, str(path)]) == 1
    err = capsys.readouterr().err
    assert "[mcpl-int-range]" in err and "more than 40 digits" in err
    assert len(err) < 2000  # the digits are not printed back in full


@pytest.mark.parametrize("body, params, code, line", [
    ("    int k = 100 % (0 / n);\n    a[i] = toFloat(k);", "int n, main float[n] a",
     "mcpl-division-by-zero", 3),
    ("    a[i] = toFloat(i / (n - n));", "int n, main float[n] a", "mcpl-division-by-zero", 3),
    ("    byte b = 300;\n    a[i] = toFloat(b);", "int n, main float[n] a", "mcpl-byte-range", 3),
    ("    float[4] t;\n    t[4] = 1.0;\n    a[i] = t[0];", "int n, main float[n] a",
     "mcpl-index-range", 4),
    ("    a[i] = 1.0;", "int n, main float[2 - 5] a", "mcpl-array-size", 1),
    ("    float x;\n    a[i] = x;", "int n, main float[n] a", "mcpl-uninitialised", 4),
    ("    for (int e; e < n; e++) { a[i] = 1.0; }", "int n, main float[n] a",
     "mcpl-uninitialised", 3),
])
def test_values_no_unit_can_run_with_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, params: str, code: str,
    line: int
) -> None:
    status, doc, _ = run_json(tmp_path, capsys, _kernel(body, params), ["--feedback"])
    assert status == 1
    found = [d for d in doc["files"][0]["diagnostics"] if d["code"] == code]
    assert found and found[0]["line"] == line and found[0]["severity"] == "error"


def test_empty_foreach_inside_warps_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ("hopper void k(int n, global float[n] a) {\n  foreach (int b in 4 blocks) {\n"
              "    foreach (int w in 2 warps) {\n      foreach (int t in n - n threads) {\n"
              "        a[t] = 1.0;\n      }\n    }\n  }\n}\n")
    status, doc, _ = run_json(tmp_path, capsys, source, ["--feedback"])
    assert status == 1
    assert [d["code"] for d in doc["files"][0]["diagnostics"]] == ["mcpl-foreach-count"]


def _user_descriptions(tmp_path: Path) -> Path:
    folder = tmp_path / "hwd"
    folder.mkdir()
    cpu = (REPO / "hwdescs/cpu.hdl").read_text(encoding="utf-8")
    assert "slots(thread, 1);" in cpu
    (folder / "cpu.hdl").write_text(cpu.replace("slots(thread, 1);", "slots(thread, 0);", 1),
                                    encoding="utf-8")
    mic = (REPO / "hwdescs/mic.hdl").read_text(encoding="utf-8")
    assert "latency = 20 cycles;" in mic
    (folder / "mic.hdl").write_text(
        mic.replace("latency = 20 cycles;", "latency = 1" + "0" * 309 + " cycles;"),
        encoding="utf-8")
    return folder


def test_description_values_are_validated_where_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _user_descriptions(tmp_path)
    assert main(["hwd", "list", "--hwd-path", str(folder)]) == 1  # errors: exit 1
    captured = capsys.readouterr()
    assert "slots(thread, N) needs a whole number N of at least 1, not 0" in captured.err
    assert "this number is too large" in captured.err
    # the other descriptions still list
    assert "hopper" in captured.out and "fermi" in captured.out
    source = _kernel("    a[i] = 1.0;")
    path = tmp_path / "k.mcpl"
    path.write_text(source, encoding="utf-8")
    assert main(["check", "--hwd-path", str(folder), "--level", "cpu", str(path)]) == 1
    assert "internal error" not in capsys.readouterr().err


def test_run_target_refuses_an_access_outside_its_array(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`float[4] a` written by n = 1000 threads: refused before anything is allocated (it
    used to end in 'double free or corruption', exit 134), and `check -D` says the same."""
    kernel = tmp_path / "k.mcpl"
    kernel.write_text(_kernel("    a[i] = 1.0;", "int n, main float[4] a"), encoding="utf-8")
    reference = tmp_path / "reference.py"
    reference.write_text(
        "import numpy as np\nFUNCTION = 'k'\nSIZES = {'n': 4}\nOUTPUTS = ('a',)\n"
        "TOLERANCE = {'atol': 0.0}\n"
        "def inputs(sizes, rng):\n    return {'n': sizes['n'], 'a': np.zeros(4, np.float32)}\n"
        "def reference(args):\n    return {'a': np.ones(4, np.float32)}\n", encoding="utf-8")
    assert main(["run", "--target", "fermi", "-D", "n=1000", str(kernel)]) == 1
    err = capsys.readouterr().err
    assert "[values-index-range]" in err
    assert "with n = 1000 and i = 999, 'i' is 999, outside 'a' (4 elements" in err
    assert main(["check", "-D", "n=1000", str(kernel)]) == 1
    assert "[values-index-range]" in capsys.readouterr().err


def test_extent_check_has_no_false_alarms(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Triangular and strided loops, guards and an early return: every access stays
    inside, and the witness search must find no point outside."""
    source = _kernel(
        "    for (int j = 0; j < n - i; j++) { a[i + j] = 1.0; }\n"
        "    for (int j = 0; j < n; j += 2) { m[i, j] = 1.0; }\n"
        "    int q = n - 1 - i;\n    a[q] = 2.0;\n"
        "    if (i + 1 < n) { a[i + 1] = 3.0; }\n"
        "    if (i == 0) { return; }\n    a[i - 1] = 3.0;",
        "int n, main float[n] a, main float[n, n] m")
    status, doc, _ = run_json(tmp_path, capsys, source, ["-D", "n=7"])
    assert status == 0
    assert not [d for d in doc["files"][0]["diagnostics"] if d["severity"] == "error"]


@pytest.mark.parametrize("kernel", sorted((REPO / "kernels").glob("*/*.mcpl")),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_shipped_kernels_pass_the_extent_check_at_their_sizes(kernel: Path) -> None:
    from mcl.mcpl.extents import extent_errors
    from mcl.mcpl.parse import parse_file
    from mcl.verify import load_reference

    sizes = load_reference(kernel.parent / "reference.py").sizes
    for size in (sizes, {k: v + 3 for k, v in sizes.items()}):  # sizes that do not divide
        for f in parse_file(kernel).functions:
            assert extent_errors(f, size) == []


def test_verify_matches_equal_infinities_and_nans() -> None:
    expected = np.array([np.inf, -np.inf, np.nan, 1.0])
    same = compare_bounded("x", expected.copy(), expected, np.zeros(4))
    assert same.ok and same.mismatches == 0 and same.max_rel == 0.0
    other = compare_bounded("x", np.array([np.inf, np.inf, 1.0, 1.0]), expected, np.zeros(4))
    assert not other.ok and other.mismatches == 2


def test_power_chains_render_each_operand_once(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """codegen rendered both operands of `^` twice: 22 terms took 25 s. Counted, not
    timed: the renderer visits each node of a chain a bounded number of times."""
    from mcl.codegen import c_expr

    calls = {"n": 0}
    original = c_expr.ExprRenderer.expr if hasattr(c_expr, "ExprRenderer") else None
    renderer = original and c_expr.ExprRenderer
    if renderer is None:  # the renderer class by whatever name defines `_power`
        renderer = next(v for v in vars(c_expr).values()
                        if isinstance(v, type) and hasattr(v, "_power"))
        original = renderer.expr

    def counting(self, e):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        return original(self, e)

    monkeypatch.setattr(renderer, "expr", counting)
    terms = 30
    path = tmp_path / "k.mcpl"
    path.write_text(_kernel("    a[i] = " + " ^ ".join(["a[i]"] * terms) + ";"),
                    encoding="utf-8")
    assert main(["codegen", "--target", "fermi", "-o", str(tmp_path / "out"), str(path)]) == 0
    assert calls["n"] < 40 * terms  # 2^30 before


def test_a_description_number_of_thousands_of_digits_is_too_large(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by `mcl.fuzz` (round 3): the HDL parser converted the digits with int(),
    which Python refuses past 4,300 digits."""
    folder = tmp_path / "hwd"
    folder.mkdir()
    text = (REPO / "hwdescs/gpu.hdl").read_text(encoding="utf-8")
    assert "max_nr_units = 1024;" in text
    (folder / "gpu.hdl").write_text(
        text.replace("max_nr_units = 1024;", "max_nr_units = " + "9" * 4301 + ";"),
        encoding="utf-8")
    assert main(["hwd", "show", "gpu", "--hwd-path", str(folder)]) == 1
    err = capsys.readouterr().err
    assert "this number is too large" in err and "internal error" not in err


def test_a_result_argument_of_a_builtin_is_set_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _kernel("    float c;\n    float s = sincos(a[i], c);\n    a[i] = s + c;")
    status, doc, _ = run_json(tmp_path, capsys, source, ["--no-feedback"])
    assert (status, doc["files"][0]["diagnostics"]) == (0, [])


def test_diagnostics_escape_control_characters_and_cut_long_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text(_kernel("    a[i] = b\u202eX\x00;"), encoding="utf-8")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "\u202e" not in err and "\x00" not in err
    assert "b\\u202eX\\x00;" in err
    path.write_text(_kernel("    a[i] = " + "1.0 + " * 200_000 + " ) zz;"), encoding="utf-8")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "[mcpl-syntax]" in err and len(err) < 1000  # 1.2 MB of source on that line
