"""Read/write inference (section 4.3; mcpl.md §5 rule 7): which parameters each function
reads and writes, through calls, views and `mcl_builtin_read/write` signatures."""

from __future__ import annotations

from pathlib import Path

from check_support import REPO

from mcl.mcpl.check import access_table, infer_access
from mcl.mcpl.loader import load_program


def access_of(tmp_path: Path, text: str) -> dict[str, dict[str, str]]:
    path = tmp_path / "k.mcpl"
    path.write_text(text, encoding="utf-8")
    return infer_access(load_program(path))


def test_matmul_reads_a_and_b_and_writes_c() -> None:
    access = infer_access(load_program(REPO / "kernels" / "matmul" / "perfect.mcpl"))
    assert access["matmul"] == {"n": "r", "m": "r", "p": "r", "c": "w", "a": "r", "b": "r"}


def test_atomic_add_reads_and_writes_its_target() -> None:
    access = infer_access(load_program(REPO / "kernels" / "histogram" / "perfect.mcpl"))
    assert access["histogram"]["hist"] == "rw"
    assert access["histogram"]["image"] == "r"


def test_writes_propagate_through_calls_to_a_fixed_point(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        # `even` calls `odd` before `odd` is known to write; mutual recursion included.
        "perfect void even(int n, main float[n] x, main float[n] y) {\n"
        "  if (n > 0) {\n    odd(n - 1, x, y);\n  }\n}\n"
        "perfect void odd(int n, main float[n] x, main float[n] y) {\n"
        "  y[0] = x[0];\n  even(n, x, y);\n}\n"
        "perfect void top(int n, main float[n] a, main float[n] b, main float[n] unused) {\n"
        "  foreach (int i in 1 threads) {\n    even(n, a, b);\n  }\n}\n",
    )
    assert access["even"] == {"n": "r", "x": "r", "y": "w"}
    assert access["odd"] == {"n": "r", "x": "r", "y": "w"}
    assert access["top"] == {"n": "r", "a": "r", "b": "w", "unused": ""}


def test_library_signatures_state_reads_and_writes(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        "perfect void sincosOf(float x, float s, float c) {\n"
        "  mcl_builtin_read(x);\n  mcl_builtin_write(s, c);\n}\n"
        "perfect void k(int n, main float[n] a, main float[n] s, main float[n] c) {\n"
        "  foreach (int i in n threads) {\n    sincosOf(a[i], s[i], c[i]);\n  }\n}\n",
    )
    assert access["sincosOf"] == {"x": "r", "s": "w", "c": "w"}
    assert access["k"] == {"n": "r", "a": "r", "s": "w", "c": "w"}


def test_views_write_the_array_they_show(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        "perfect void k(int n, main float[n] a, main float[n] b) {\n"
        "  a as float[n / 2][2] pairs;\n"
        "  foreach (int i in n / 2 threads) {\n    pairs[i][0] = b[i];\n  }\n}\n",
    )
    assert access["k"] == {"n": "r", "a": "w", "b": "r"}


def test_compound_assignment_and_swap_read_and_write(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        "perfect void k(int n, main float[n] a, main float[n] b, main float[n] c) {\n"
        "  foreach (int i in n threads) {\n    a[i] += 1.0;\n    b[i] <=> c[i];\n  }\n}\n",
    )
    assert access["k"] == {"n": "r", "a": "rw", "b": "rw", "c": "rw"}


def test_a_local_that_shadows_a_parameter_is_not_the_parameter(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    float n2 = 1.0;\n"
        "    if (i > 0) {\n      float a = 2.0;\n      a = n2;\n    }\n  }\n}\n",
    )
    assert access["k"] == {"n": "r", "a": ""}


def test_index_expressions_of_a_written_element_are_reads(tmp_path: Path) -> None:
    access = access_of(
        tmp_path,
        "perfect void k(int n, main int[n] idx, main float[n] out) {\n"
        "  foreach (int i in n threads) {\n    out[idx[i]] = 1.0;\n  }\n}\n",
    )
    assert access["k"] == {"n": "r", "idx": "r", "out": "w"}


def test_the_table_answers_per_function_object(tmp_path: Path) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text(
        "import lib.math.common;\n"
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    a[i] = sqr(a[i]);\n  }\n}\n"
    )
    program = load_program(path)
    table = access_table(program)
    sqr = program.modules["lib.math.common"].function("sqr")
    assert table.params(sqr) == {"x": "r"}
    assert table.params(program.main.function("k")) == {"n": "r", "a": "rw"}
