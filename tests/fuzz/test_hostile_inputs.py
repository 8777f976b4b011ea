"""Hostile inputs (issue 20): each crash the fuzzer found and each piece of nonsense that
used to pass silently, as its minimal reproducer. The outcome is a located diagnostic with
a code (exit status 1), never "internal error" (status 2) and never silence.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.cli import internal_error_text, main
from tests.fuzz.checking import run_json

REPO = Path(__file__).resolve().parents[2]


def _kernel(body: str, params: str = "int n, main float[n] a") -> str:
    return f"perfect void k({params}) {{\n  foreach (int i in n threads) {{\n{body}\n  }}\n}}\n"


# (name, source, extra arguments, expected code, expected line)
CHECK_CASES = [
    ("const_div_zero", "const int N = 1 / 0;\n" + _kernel("    a[i] = N;"), [],
     "mcpl-division-by-zero", 1),
    ("size_div_zero", _kernel("    a[i] = 1.0;", "int n, main float[10 / 0] a"), [],
     "mcpl-division-by-zero", 1),
    ("count_div_zero",
     "perfect void k(int n, main float[n] a) {\n  foreach (int i in n / 0 threads) {\n"
     "    a[i] = 1.0;\n  }\n}\n", [], "mcpl-division-by-zero", 2),
    ("mod_zero_times_n", _kernel("    a[i % (0 * n)] = 1.0;"), [], "mcpl-division-by-zero", 3),
    ("count_zero", "perfect void k(int n, main float[n] a) {\n  foreach (int i in 0 threads) {"
     "\n    a[i] = 1.0;\n  }\n}\n", [], "mcpl-foreach-count", 2),
    ("count_negative", "perfect void k(int n, main float[n] a) {\n  foreach (int i in -5 threads)"
     " {\n    a[i] = 1.0;\n  }\n}\n", [], "mcpl-foreach-count", 2),
    ("recursion", "perfect int f(int x) {\n  return f(x - 1);\n}\n"
     + _kernel("    a[i] = f(i);", "int n, main int[n] a"), [], "mcpl-recursion", 2),
    ("mutual_recursion", "perfect int f(int x) {\n  return g(x);\n}\n"
     "perfect int g(int x) {\n  return f(x);\n}\n"
     + _kernel("    a[i] = f(i);", "int n, main int[n] a"), [], "mcpl-recursion", 2),
    ("power_tower", _kernel("    a[i] = 2^2^2^2^2^2;", "int n, main int[n] a"), [],
     "mcpl-int-overflow", 3),
    ("huge_power", _kernel("    a[i] = 10 ^ 100000;", "int n, main int[n] a"), [],
     "mcpl-int-overflow", 3),
    ("infinite_literal", _kernel("    a[i] = 1e99999;"), [], "mcpl-float-range", 3),
    ("nested_foreach_same_index",
     "perfect void k(int n, main float[n, n] a) {\n  foreach (int i in n threads) {\n"
     "    foreach (int i in n threads) {\n      a[i, i] = 1.0;\n    }\n  }\n}\n", [],
     "mcpl-duplicate", 3),
    # -D values that divide by zero: the analyses used to fail on SymPy's nan and zoo.
    ("values_divide_by_zero", (REPO / "kernels/reduction/gpu_v1.mcpl").read_text(),
     ["--level", "hopper", "-D", "chunk=0", "-D", "n=1000"], "values-division-by-zero", None),
    ("values_empty_foreach", (REPO / "kernels/reduction/gpu_v1.mcpl").read_text(),
     ["-D", "chunk=5", "-D", "n=0"], "values-empty-foreach", None),
]


def _check(tmp_path: Path, source: str, extra: list[str],
           capsys: pytest.CaptureFixture[str]) -> tuple[int, list[dict]]:
    code, doc, _ = run_json(tmp_path, capsys, source, extra)
    return code, doc["files"][0]["diagnostics"]


@pytest.mark.parametrize("name,source,extra,code,line", CHECK_CASES,
                         ids=[c[0] for c in CHECK_CASES])
def test_hostile_input_gets_a_located_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, source: str,
    extra: list[str], code: str, line: int | None
) -> None:
    status, diags = _check(tmp_path, source, extra, capsys)
    assert status == 1
    found = [d for d in diags if d["code"] == code]
    assert found, f"no {code} among {[d['code'] for d in diags]}"
    if line is not None:
        assert found[0]["line"] == line
    assert found[0]["column"] >= 1


def test_count_that_can_be_empty_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n - 100 threads) {\n"
              "    a[i] = 1.0;\n  }\n}\n")
    status, diags = _check(tmp_path, source, ["--no-feedback"], capsys)
    assert status == 0
    assert [(d["severity"], d["code"], d["line"]) for d in diags] == [
        ("warning", "mcpl-foreach-count", 2)]


def test_constant_arithmetic_that_fits_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The folding must not reject what C computes fine (the hardware constants of the
    shipped kernels are such products, and 2^30 fits)."""
    source = ("const int A = 2 ^ 30;\nconst int B = (A - 1) * 2 + 1;\nconst float F = 1e38;\n"
              + _kernel("    a[i] = B / 7 % 3 + F + (-7 / 2);"))
    status, diags = _check(tmp_path, source, ["--no-feedback"], capsys)
    assert (status, diags) == (0, [])


def test_declaration_without_initialiser_before_a_barrier_translates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The guard of a count that does not divide hoisted `int j;` by reading its missing
    initialiser (TypeError in ast.children via translate/guard.py)."""
    path = tmp_path / "k.mcpl"
    path.write_text(
        "perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
        "    int j;\n    barrier(main);\n    for (j = 0; j < 4; j++) {\n"
        "      a[i] = a[i] + 1.0;\n    }\n  }\n}\n", encoding="utf-8")
    assert main(["translate", "--to", "hopper", str(path)]) == 0
    assert "int j;" in capsys.readouterr().out
    assert main(["codegen", "--target", "hopper", "-o", str(tmp_path / "out"), str(path)]) == 0


def test_description_memory_without_addressable_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Registers that a description forgot to mark `addressable = false;` are addressable
    memory: a declaration with an initialiser is a store, printed by its name (it used to
    reach the printer as a Decl: TypeError in mcpl/printer.py)."""
    hwd = tmp_path / "hwd"
    hwd.mkdir()
    text = (REPO / "hwdescs/hopper.hdl").read_text(encoding="utf-8")
    assert "addressable = false;" in text
    (hwd / "hopper.hdl").write_text(text.replace("addressable = false;", ""), encoding="utf-8")
    code = main(["check", "--hwd-path", str(hwd), "--level", "hopper", "--format", "json",
                 "-D", "n=64", "-D", "m=64", "-D", "p=64",
                 str(REPO / "kernels/matmul/perfect.mcpl")])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["messages"]


def test_internal_error_names_the_command_and_where_to_report() -> None:
    text = internal_error_text(TypeError("boom\nsecond line"), ["check", "my file.mcpl"])
    lines = text.splitlines()
    assert lines[0] == "mcl: internal error: TypeError: boom"
    assert "  MCL_DEBUG=1 mcl check 'my file.mcpl'" in lines
    assert "report" in text and "Traceback" not in text


def test_min_bound_in_nested_loop_finishes_within_seconds(tmp_path: Path) -> None:
    """CPU time, not wall-clock time: a loaded CI machine must not fail it."""
    path = tmp_path / "k.mcpl"
    path.write_text(
        "perfect void k(int n, int p, main float[n] a) {\n  foreach (int i in n threads) {\n"
        "    float s = 0.0;\n    for (int l = 0; l < p; l++) {\n"
        "      for (int k = 0; k < min(4, p - l * l); k++) {\n        s = s + 1.0;\n"
        "      }\n    }\n    a[i] = s;\n  }\n}\n", encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        done = subprocess.run([sys.executable, "-m", "mcl", "check", "-D", "n=10",
                               "-D", "p=100000", str(path)], capture_output=True, timeout=120,
                              # killed after 10 s of CPU, so a hang costs CI 10 s, not 120
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (10, 10)))
    except subprocess.TimeoutExpired:
        pytest.fail("mcl check ran past 120 s")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert done.returncode in (0, 1) and cpu < 5, f"{cpu:.1f} s of CPU"


def test_constant_folding_keeps_check_free_of_numpy() -> None:
    """`mcl check` folds int constants with mcl/mcpl/operators.py; loading numpy for that
    would cost every check its start-up time (benchmarks/bench_check.py)."""
    code = ("import sys; from mcl.cli import main; "
            f"main(['check', '--no-feedback', {str(REPO / 'kernels/matmul/fermi_v1.mcpl')!r}]); "
            "print('numpy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr
