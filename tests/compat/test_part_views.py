"""Views of a part, as the original MCL writes them (docs/mcpl.md 4): an element
(`a[i] as float[4][4] t;`) or a field (`b.data as float[4][4] d;`) given another shape.
Each kernel runs through the interpreter and, translated to a leaf (x86_avx512, fermi),
on PoCL against numpy on uneven sizes; CUDA is compiled with NVRTC; the feedback counts
the view's accesses as accesses of the viewed array, as it does for the same accesses
written through a view of the whole array."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.cli import main
from mcl.hdl.library import default_library
from mcl.mcpl import ast as A
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_module

from .test_original_language import device, errors, interpreted, load, refused

ELEMENT = """
perfect void tiles(int n, float[n][16] a, float[n][4] diag) {
  foreach (int i in n threads) {
    a[i] as float[4][4] t;
    for (int k = 0; k < 4; k++) {
      diag[i][k] = t[k][k] + t[3 - k][k];
      t[k][3 - k] = t[k][3 - k] * 2.0;
    }
  }
}
"""


def tiles_expected(a: np.ndarray) -> dict[str, np.ndarray]:
    a = a.copy()
    diag = np.zeros((len(a), 4), dtype=np.float32)
    for i in range(len(a)):
        t = a[i].reshape(4, 4)  # numpy's view of the row: its writes reach `a`
        for k in range(4):
            diag[i, k] = t[k, k] + t[3 - k, k]
            t[k, 3 - k] = t[k, 3 - k] * np.float32(2.0)
    return {"a": a, "diag": diag}


def test_a_view_of_an_element_reads_and_writes_the_element(tmp_path: Path) -> None:
    program, diagnostics = load(tmp_path, ELEMENT)
    assert errors(diagnostics) == []
    n = 7
    a = np.arange(n * 16, dtype=np.float32).reshape(n, 16) * np.float32(0.25) - 3
    args = {"n": n, "a": a, "diag": np.zeros((n, 4), dtype=np.float32)}
    expected = tiles_expected(a)
    for result in (interpreted(program, "tiles", args), device(program, "tiles", args)):
        for name in ("a", "diag"):
            np.testing.assert_array_equal(result[name], expected[name])


FIELDS = """
type Tile {
  int tag;
  float[16] data;
}

perfect void fields(int n, Tile[n] b, Tile one, float[n][3] out) {
  one.data as float[2][8] first;
  foreach (int i in n threads) {
    b[i].data as float[2][8] e as float[4][4] f;
    e[1] as float[2][4] g;
    out[i][0] = e[1][3] + f[3][3] + first[1][i % 8];
    out[i][1] = g[1][2] + toFloat(b[i].tag);
    f[0][1] = f[0][1] + 1.0;
  }
}
"""


def test_views_of_fields_of_structs_and_of_struct_elements(tmp_path: Path) -> None:
    program, diagnostics = load(tmp_path, FIELDS)
    assert errors(diagnostics) == []
    n = 5
    tile = np.dtype([("tag", "i4"), ("data", "f4", (16,))])
    b = np.zeros(n, dtype=tile)
    b["tag"] = np.arange(n) * 3 - 4
    b["data"] = np.sqrt(np.arange(n * 16, dtype=np.float32)).reshape(n, 16)
    one = np.zeros((), dtype=tile)
    one["data"] = np.arange(16, dtype=np.float32) * np.float32(-1.5)
    args = {"n": n, "b": b, "one": one, "out": np.zeros((n, 3), dtype=np.float32)}
    data = b["data"]
    i = np.arange(n)
    expected_out = np.zeros((n, 3), dtype=np.float32)
    expected_out[:, 0] = data[:, 11] + data[:, 15] + one["data"][8 + i % 8]
    expected_out[:, 1] = data[:, 14] + b["tag"]
    expected_data = data.copy()
    expected_data[:, 1] += np.float32(1.0)
    result = interpreted(program, "fields", args)
    np.testing.assert_allclose(result["out"], expected_out, rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(result["b"])["data"], expected_data)
    np.testing.assert_array_equal(np.asarray(result["b"])["tag"], b["tag"])


def test_views_of_fields_of_struct_elements_on_a_device(tmp_path: Path) -> None:
    source = FIELDS.replace("Tile one, ", "").replace(" + first[1][i % 8]", "")
    source = source.replace("  one.data as float[2][8] first;\n", "")
    program, diagnostics = load(tmp_path, source)
    assert errors(diagnostics) == []
    n = 6
    tile = np.dtype([("tag", "i4"), ("data", "f4", (16,))])
    b = np.zeros(n, dtype=tile)
    b["tag"] = np.arange(n) + 2
    b["data"] = (np.arange(n * 16, dtype=np.float32) * np.float32(0.5)).reshape(n, 16)
    args = {"n": n, "b": b, "out": np.zeros((n, 3), dtype=np.float32)}
    expected = interpreted(program, "fields", args)
    result = device(program, "fields", args)
    np.testing.assert_array_equal(result["out"], expected["out"])
    np.testing.assert_array_equal(np.asarray(result["b"])["data"],
                                  np.asarray(expected["b"])["data"])
    assert np.asarray(expected["b"])["data"][0, 1] == b["data"][0, 1] + 1


# A view of an element between the foreach levels of a GPU (one per block, in the
# block's kernel prologue), and one outside all foreach statements indexed by a
# parameter (declared again in the kernel).
LEVELS = """
gpu void rows(int n, int k, dev float[n][32] a, dev float[n][32] out) {
  a[k] as float[4][8] pick;
  foreach (int r in n blocks) {
    a[r] as float[8][4] row;
    out[r] as float[4][8] o;
    foreach (int t in 32 threads) {
      o[t / 8][t % 8] = row[t % 8][t / 8] + pick[t % 4][t / 4];
    }
  }
}
"""


def test_views_of_elements_between_levels_and_outside_all_foreach(tmp_path: Path) -> None:
    program, diagnostics = load(tmp_path, LEVELS)
    assert errors(diagnostics) == []
    n, k = 5, 3
    a = np.arange(n * 32, dtype=np.float32).reshape(n, 32) * np.float32(0.5)
    args = {"n": n, "k": k, "a": a, "out": np.zeros((n, 32), dtype=np.float32)}
    t = np.arange(32)
    expected = (a.reshape(n, 8, 4)[:, t % 8, t // 8]
                + a[k].reshape(4, 8)[t % 4, t // 4]).reshape(n, 4, 8)
    expected = expected[:, :, :].reshape(n, 32)
    for result in (interpreted(program, "rows", args), device(program, "rows", args, "fermi")):
        np.testing.assert_array_equal(result["out"], expected)


@pytest.mark.parametrize("source", [ELEMENT, FIELDS, LEVELS], ids=["element", "field", "levels"])
def test_views_of_parts_compile_with_nvrtc(tmp_path: Path, source: str) -> None:
    program, diagnostics = load(tmp_path, source)
    assert errors(diagnostics) == []
    checked = pipeline.checked(program, default_library())
    generated = pipeline.generate(checked, "hopper", default_library(), language="cuda")
    assert "(view of " in generated.source
    compiled = compile_cuda(generated.source, "k.cu", "sm_90", warnings_as_errors=True)
    assert compiled.cubin.startswith(b"\x7fELF")


def test_the_generated_code_points_into_the_part(tmp_path: Path) -> None:
    program, _ = load(tmp_path, ELEMENT)
    checked = pipeline.checked(program, default_library())
    source = pipeline.generate(checked, "x86_avx512", default_library()).source
    assert "__global float* const t = (a + i * 16);" in source


def test_a_view_of_a_part_prints_and_parses_back() -> None:
    module = parse_source(FIELDS)
    view = module.functions[0].body.stmts[1].body.stmts[0]
    assert isinstance(view, A.ViewDecl) and view.source == "b"
    assert view.part == A.Field(A.Index(A.Name("b"), (A.Name("i"),)), "data")
    text = print_module(module)
    assert "b[i].data as float[2][8] e;" in text and "e as float[4][4] f;" in text
    assert "e[1] as float[2][4] g;" in text
    assert parse_source(text) == module


def test_translation_keeps_the_view_of_the_part(tmp_path: Path, capsys) -> None:
    path = tmp_path / "k.mcl"
    path.write_text(ELEMENT, encoding="utf-8")
    assert main(["translate", str(path), "--to", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "a[i] as float[4][4] t;" in out
    assert "int i = " in out  # the split index is defined before the view uses it


def test_a_view_of_a_part_that_is_no_array_is_one_error(tmp_path: Path, capsys) -> None:
    line, err = refused(tmp_path, capsys, """
type Pair {
  float re;
  float im;
}

perfect void f(int n, Pair[n] p, float[n] out) {
  foreach (int i in n threads) {
    p[i].re as float[1] r;
    out[i] = r[0];
  }
}
""")
    assert "k.mcl:9:5: error: 'p[i].re' is not an array, so it has no view" in line
    assert line.endswith("[mcpl-type-mismatch]")
    assert "hint: a view gives another shape to an array, or to an element" in err


def test_a_view_of_a_part_with_other_elements_is_one_error(tmp_path: Path, capsys) -> None:
    line, _ = refused(tmp_path, capsys, """
perfect void f(int n, float[n][16] a, int[n] out) {
  foreach (int i in n threads) {
    a[i] as int[4][4] t;
    out[i] = t[1][2];
  }
}
""")
    assert "k.mcl:4:13: error: view 't' has elements of type int, but 'a[i]' holds float" \
        in line


def test_a_view_larger_than_its_part_is_one_error(tmp_path: Path, capsys) -> None:
    line, err = refused(tmp_path, capsys, ELEMENT.replace("float[4][4] t", "float[5][4] t"))
    assert "k.mcl:4:13: error: view 't' needs 20 elements, but 'a[i]' holds 16" in line
    assert line.endswith("[mcpl-array-size]")
    assert "hint: a view gives the storage it views another shape" in err


def test_a_view_larger_than_its_part_stops_the_interpreter(tmp_path: Path) -> None:
    from mcl.diagnostics import MclError

    # a size known only when the kernel runs: the interpreter applies the rule
    source = ELEMENT.replace("float[4][4] t", "float[w][4] t").replace("int n,", "int n, int w,")
    program, diagnostics = load(tmp_path, source)
    assert errors(diagnostics) == []
    args = {"n": 2, "w": 5, "a": np.zeros((2, 16), np.float32),
            "diag": np.zeros((2, 4), np.float32)}
    with pytest.raises(MclError) as exc:
        interpreted(program, "tiles", args)
    assert "view 't' of shape (5, 4) needs 20 elements, its array has 16" in str(exc.value)


# The same kernel written with a view of the whole array and the element's index as a
# leading dimension: the feedback must say the same of both.
PART_FEEDBACK = """
fermi void rows(int n, global float[n][16] a, global float[n] out) {
  foreach (int b in (n + 255) / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int i = b * 256 + w * 32 + t;
        if (i < n) {
          a[i] as float[4][4] d;
          float s = 0.0;
          for (int x = 0; x < 4; x++) {
            s += d[x][x];
          }
          out[i] = s;
        }
      }
    }
  }
}
"""


def _feedback(tmp_path: Path, capsys, name: str, source: str) -> str:
    path = tmp_path / f"{name}.mcl"
    path.write_text(source, encoding="utf-8")
    main(["check", "-v", "--level", "fermi", "-D", "n=4096", str(path)])
    # the name of the file and the length of the markers under an access aside
    return re.sub(r"\^~*", "^", capsys.readouterr().out.replace(f"{name}.mcl", "K"))


@pytest.mark.usefixtures("whole_lines")  # the two texts compared line by line
def test_feedback_counts_a_view_of_an_element_as_accesses_of_the_array(tmp_path, capsys):
    part = _feedback(tmp_path, capsys, "part", PART_FEEDBACK)
    whole = _feedback(tmp_path, capsys, "whole", PART_FEEDBACK.replace(
        "a[i] as float[4][4] d;", "a as float[n][4][4] d;").replace("d[x][x]", "d[i][x][x]"))
    assert "load of d[x][x] is not coalesced" in part  # 16 floats apart per thread
    assert "global: 4*n (= 16,384) loads and n (= 4,096) stores" in part
    assert part == whole.replace("d[i][x][x]", "d[x][x]")


# Translating to fermi splits the 30 threads into warps of 32 and guards them with
# `t < 30`; a view read after the barrier is declared before the guard.
ACROSS_BARRIER = """
gpu void g(int n, dev float[n][32] a, dev float[n][30] out) {
  foreach (int r in n blocks) {
    local float[32] s;
    VIEW_BETWEEN
    foreach (int t in 30 threads) {
      VIEW_INSIDE
      s[t] = row[ROW(t / 8)][t % 8];
      barrier(local);
      out[r][t] = s[29 - t] + row[ROW(0)][1];
    }
  }
}
"""


def across_barrier(between: str, inside: str, row: str) -> str:
    return (ACROSS_BARRIER.replace("VIEW_BETWEEN", between).replace("VIEW_INSIDE", inside)
            .replace("ROW(t / 8)", row.format("t / 8")).replace("ROW(0)", row.format("0")))


@pytest.mark.parametrize(("between", "inside", "row"), [
    ("a[r] as float[4][8] row;", "", "{}"),
    ("", "a as float[n][4][8] row;", "r][{}"),
], ids=["part-between-levels", "whole-inside"])
def test_a_view_read_after_a_barrier_in_a_guarded_foreach(tmp_path, between, inside, row):
    program, diagnostics = load(tmp_path, across_barrier(between, inside, row))
    assert errors(diagnostics) == []
    n = 3
    a = np.arange(n * 32, dtype=np.float32).reshape(n, 32)
    args = {"n": n, "a": a, "out": np.zeros((n, 30), dtype=np.float32)}
    t = np.arange(30)
    expected = a[:, 29 - t] + a[:, 1:2]
    for result in (interpreted(program, "g", args), device(program, "g", args, "fermi")):
        np.testing.assert_array_equal(result["out"], expected)


def test_a_view_of_a_part_per_unit_read_after_a_guarded_barrier_is_one_error(tmp_path):
    from mcl.diagnostics import MclError

    program, diagnostics = load(tmp_path, across_barrier("", "a[r] as float[4][8] row;", "{}"))
    assert errors(diagnostics) == []
    with pytest.raises(MclError) as exc:
        pipeline.generate(pipeline.checked(program, default_library()), "fermi", default_library())
    (diagnostic,) = exc.value.diagnostics
    assert diagnostic.code == "translate-unsafe-guard"
    assert "view 'row' is used after a barrier, and what it views, 'a[r]'" in diagnostic.message
    assert "declare the view before the foreach whose units are guarded" in diagnostic.hint


HOST_INDEX = """
perfect void h(int n, float[n][8] a, float[n] out) {
  int k = n / 2;
  a[k] as float[2][4] mid;
  foreach (int i in n threads) {
    out[i] = mid[i % 2][i % 4];
  }
}
"""


def test_a_view_outside_all_foreach_indexed_by_a_host_variable(tmp_path: Path) -> None:
    program, diagnostics = load(tmp_path, HOST_INDEX)
    assert errors(diagnostics) == []
    n = 7
    a = np.arange(n * 8, dtype=np.float32).reshape(n, 8) - 20
    args = {"n": n, "a": a, "out": np.zeros(n, dtype=np.float32)}
    i = np.arange(n)
    expected = a[n // 2].reshape(2, 4)[i % 2, i % 4]
    for result in (interpreted(program, "h", args), device(program, "h", args)):
        np.testing.assert_array_equal(result["out"], expected)


FIELD_FEEDBACK = """
type Tile {
  int tag;
  float[16] data;
}

fermi void fields(int n, global Tile[n] b, global float[n] out) {
  foreach (int bk in (n + 31) / 32 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        int i = bk * 32 + t;
        if (i < n) {
          VIEW
          out[i] = E13 + F33;
          F01 = F01 + 1.0;
        }
      }
    }
  }
}
"""


def test_feedback_counts_a_view_of_a_field_as_accesses_of_the_records(tmp_path, capsys):
    def written(view: str, e13: str, f33: str, f01: str) -> str:
        return (FIELD_FEEDBACK.replace("VIEW", view).replace("E13", e13)
                .replace("F33", f33).replace("F01", f01))

    viewed = _feedback(tmp_path, capsys, "viewed", written(
        "b[i].data as float[2][8] e as float[4][4] f;", "e[1][3]", "f[3][3]", "f[0][1]"))
    direct = _feedback(tmp_path, capsys, "direct", written(
        "", "b[i].data[11]", "b[i].data[15]", "b[i].data[1]"))

    def figures(text: str, code: str) -> str:
        (line,) = [x for x in text.splitlines() if x.endswith(f"[{code}]")]
        return line

    for code in ("opstats-summary", "opstats-memory", "roofline"):
        assert figures(viewed, code) == figures(direct, code)
    assert "3*n (= 12,288) loads" in figures(viewed, "opstats-memory")
