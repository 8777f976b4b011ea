"""Reliability, round 6: the wrong acceptances that remained after round 5
(docs/reliability.md): a read of another unit's element of a parameter, a barrier under a
condition that differs between warps, units per block through nesting or a variable,
uninitialised elements and fields, constant out-of-bounds subscripts through loops and
views."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from tests.fuzz.checking import check_text as _check

IN_PLACE = ("perfect void k(int n, main float[n] a, main float[n] b) {{\n"
            "  foreach (int i in n threads) {{\n    {body}\n  }}\n}}\n")


@pytest.mark.parametrize(("body", "said"), [
    ("a[i] = a[(i + 1) % n];", "'a[i]' writes an element of array 'a' that another unit may "
                               "read at line 3, column 12 ('a[(i + 1) % n]')"),
    ("if (i > 0) { a[i] = a[i - 1]; }", "another unit may read at line 3, column 25"),
    ("b[i] = a[i + 1]; a[i] = b[i];", "another unit may read at line 3, column 12"),
])
def test_a_read_of_an_element_another_unit_writes_is_a_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, said: str) -> None:
    out = _check(tmp_path, IN_PLACE.format(body=body), capsys)
    assert "[mcpl-read-write-race]" in out and said in out, out
    assert out.count("[mcpl-read-write-race]") == 1


@pytest.mark.parametrize("body", [
    "a[i] = a[i] * 2.0;",
    "b[i] = a[(i + 1) % n];",
    "float x = a[i]; a[i] = x + 1.0; b[i] = a[i];",
    "for (int k = 0; k < 4; k++) { a[i] = a[i] + b[k]; }",
    "if (i == 0) { a[0] = a[n - 1]; }",
])
def test_a_unit_reading_its_own_element_or_an_unwritten_array_is_no_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    out = _check(tmp_path, IN_PLACE.format(body=body), capsys)
    assert "0 errors, 0 warnings" in out, out


def test_a_unit_reversing_its_own_chunk_in_place_is_no_race(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 4 (i" - i) = k + k' - 3 lies in -3 .. 3: only i" = i, the unit itself
    source = ("perfect void k(int n, main float[n * 4] a) {\n  foreach (int i in n threads) {\n"
              "    for (int k = 0; k < 2; k++) {\n      float x = a[i * 4 + k];\n"
              "      a[i * 4 + k] = a[i * 4 + 3 - k];\n      a[i * 4 + 3 - k] = x;\n    }\n"
              "  }\n}\n")
    assert "0 errors, 0 warnings" in _check(tmp_path, source, capsys)
    # one unit further, the chunks overlap: a race
    out = _check(tmp_path, source.replace("3 - k", "4 - k").replace("n * 4]", "n * 4 + 1]"),
                 capsys)
    assert "[mcpl-read-write-race]" in out, out


def test_kernels_one_after_the_other_are_ordered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two top-level foreach statements are two kernels: the second reads what the first
    # wrote, after every unit of the first has ended
    source = ("perfect void k(int n, main float[n] a, main float[n] b) {\n"
              "  foreach (int i in n threads) { b[i] = a[i]; }\n"
              "  foreach (int i in n threads) { a[i] = b[(i + 1) % n]; }\n}\n")
    assert "0 errors, 0 warnings" in _check(tmp_path, source, capsys)


WARPS = ("fermi void k(int n, float[n * 64] a) {{\n  foreach (int b in n blocks) {{\n"
         "    shared float[64] s;\n    foreach (int w in 2 warps) {{\n"
         "      foreach (int t in 32 threads) {{\n        s[w * 32 + t] = a[b * 64 + w * 32 + t];\n"
         "        if ({cond}) {{\n          barrier(shared);\n        }}\n"
         "        a[b * 64 + w * 32 + t] = s[w * 32 + t];\n      }}\n    }}\n  }}\n}}\n")


@pytest.mark.parametrize(("cond", "said"), [
    ("w == 0", "error: barrier(shared) is not reached by every unit of its foreach: it "
               "stands inside 'if (w == 0)', which not every unit takes"),
    ("w < n", "warning: barrier(shared) may not be reached by every unit of its foreach: "
              "it stands inside 'if (w < n)', which every unit takes only if n >= 2"),
])
def test_a_barrier_under_a_condition_on_the_warp_is_divergent(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cond: str, said: str) -> None:
    # barrier(shared) at fermi waits for every thread of every warp of the block
    out = _check(tmp_path, WARPS.format(cond=cond), capsys)
    assert said in out and "[mcpl-barrier-divergence]" in out, out


@pytest.mark.parametrize("cond", ["w < 2", "b == 0", "n > 3"])
def test_a_barrier_every_unit_of_the_block_reaches_is_no_divergence(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], cond: str) -> None:
    # every warp passes `w < 2`; a block index is one value in a block (a barrier never
    # joins blocks)
    out = _check(tmp_path, WARPS.format(cond=cond), capsys)
    assert "mcpl-barrier-divergence" not in out, out


NESTED = ("gpu void k(int n, float[n * {outer} * {inner}] a) {{\n"
          "  foreach (int b in n blocks) {{\n    foreach (int u in {outer} threads) {{\n"
          "      foreach (int t in {inner} threads) {{\n"
          "        a[(b * {outer} + u) * {inner} + t] = 1.0;\n      }}\n    }}\n  }}\n}}\n")


def test_nested_foreach_statements_of_one_group_are_held_to_its_limit_together(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _check(tmp_path, NESTED.format(outer=64, inner=32), capsys)
    assert ("4:25: error: the nested foreach statements of threads here run 64 * 32 = 2048 "
            "threads together, but 'gpu' allows at most 1024 in one group "
            "[mcpl-foreach-limit]") in out, out


def test_nested_foreach_statements_within_the_limit_are_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "0 errors, 0 warnings" in _check(tmp_path, NESTED.format(outer=32, inner=32), capsys)


LOCAL = ("perfect void k(int n, main float[n] a) {{\n  foreach (int i in n threads) {{\n"
         "    float[4] t;\n    {body}\n    a[i] = t[3];\n  }}\n}}\n")


@pytest.mark.parametrize(("body", "said"), [
    ("for (int q = 0; q <= 4; q++) { t[q] = a[i]; }",
     "4:38: error: 'q' reaches 4, outside 't' (4 elements in this dimension, 0 .. 3), "
     "whatever the parameters are [mcpl-index-range]"),
    ("for (int q = 0; q < 4; q++) { t[q + 1] = a[i]; }",
     "'q + 1' reaches 4 (with q = 3), outside 't'"),
])
def test_a_loop_that_runs_past_a_constant_extent_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, said: str) -> None:
    out = _check(tmp_path, LOCAL.format(body=body), capsys)
    assert said in out, out
    assert out.count("[mcpl-index-range]") == 1


@pytest.mark.parametrize("body", [
    "for (int q = 0; q < 4; q++) { t[q] = a[i]; }",
    "for (int q = 0; q < 4; q++) { if (q < 3) { t[q + 1] = a[i]; } }",
    "for (int q = 0; q < n; q++) { t[q] = a[i]; }",  # n is not known: left to -D and run
    "t[0] = 1.0; t[3] = 2.0;",
])
def test_loops_within_a_constant_extent_are_accepted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str) -> None:
    assert "0 errors, 0 warnings" in _check(tmp_path, LOCAL.format(body=body), capsys)


def test_a_constant_index_is_reported_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the checker's own rule for a constant index; the loop search leaves it alone
    out = _check(tmp_path, LOCAL.format(body="int k = 4; t[k] = a[i];"), capsys)
    assert out.count("[mcpl-index-range]") == 1 and "index 4 is out of range" in out


@pytest.mark.parametrize(("source", "said"), [
    ("perfect void k(int n, main float[n] a as float[n / 4][4] v) {\n"
     "  foreach (int i in n / 4 threads) {\n    v[i][4] = 1.0;\n  }\n}\n",
     "3:10: error: index 4 is out of range: v[i] has 4 elements in this dimension (0 .. 3)"),
    ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
     "    float[2][4] t;\n    t[1][4] = a[i];\n    a[i] = t[1][0];\n  }\n}\n",
     "4:10: error: index 4 is out of range: t[1] has 4 elements in this dimension (0 .. 3)"),
])
def test_a_constant_index_in_a_later_bracket_group_is_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, said: str) -> None:
    out = _check(tmp_path, source, capsys)
    assert said in out and "[mcpl-index-range]" in out, out


def test_values_do_not_report_a_constant_extent_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text(LOCAL.format(body="for (int q = 0; q <= 4; q++) { t[q] = a[i]; }"),
                    encoding="utf-8")
    main(["check", "--feedback", "-D", "n=8", str(path)])
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert out.count("'q' reaches 4") == 1, out
    assert "values-index-range" not in out


UNSET = ("{types}perfect void k(int n, main float[n] a) {{\n  foreach (int i in n threads) {{\n"
         "    {decl}\n    {body}\n  }}\n}}\n")


@pytest.mark.parametrize(("decl", "body", "said"), [
    ("float[4] t;", "t[0] = 1.0; a[i] = t[2];",
     "'t[2]' is read, but no statement sets element [2] of 't' (only element [0])"),
    ("float[4] t;", "for (int q = 0; q < 2; q++) { t[q] = 1.0; } a[i] = t[0] + t[3];",
     "'t[3]' is read, but no statement sets element [3] of 't' (only elements [0], [1])"),
    ("float[4] t;", "a[i] = t[i % 4];",
     "'t[i % 4]' is read, but no statement sets any element of 't'"),
    ("Pair p;", "p.x = 1.0; a[i] = p.y;",
     "'p.y' is read, but no statement sets field 'y' of 'p'"),
    ("Pair[4] ps;", "ps[0].x = 1.0; a[i] = ps[1].x;",
     "'ps[1].x' is read, but no statement sets element [1] of 'ps'"),
])
def test_an_element_or_field_no_statement_sets_is_uninitialised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decl: str, body: str,
        said: str) -> None:
    source = UNSET.format(types="type Pair { float x; float y; };\n", decl=decl, body=body)
    out = _check(tmp_path, source, capsys)
    assert said in out and "[mcpl-uninitialised]" in out, out
    assert out.count("[mcpl-uninitialised]") == 1


def test_a_local_tile_no_unit_fills_is_uninitialised(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = ("gpu void k(int n, float[n * 32] a) {\n  foreach (int b in n blocks) {\n"
              "    local float[32] s;\n    foreach (int t in 32 threads) {\n"
              "      a[b * 32 + t] = s[t];\n    }\n  }\n}\n")
    out = _check(tmp_path, source, capsys)
    assert "5:23: error: 's[t]' is read, but no statement sets any element of 's'" in out


@pytest.mark.parametrize(("decl", "body"), [
    ("float[4] t;", "for (int q = 0; q < 4; q++) { t[q] = 1.0; } a[i] = t[3];"),
    ("float[4] t;", "for (int q = 0; q < n; q++) { t[q] = 1.0; } a[i] = t[3];"),  # n unknown
    ("float[4] t;", "for (int q = 0; q < 2; q++) { t[q] = 1.0; } a[i] = t[i % 4];"),
    ("float[4] t;", "for (int q = 0; q < 4; q++) { if (q < 2) { a[i] = t[q]; } t[q] = 1.0; }"),
    ("float[4] t;", "t[0] = 1.0; setAll(t); a[i] = t[3];"),  # set by the function
    ("Pair p;", "Pair q; q.x = 1.0; q.y = 1.0; p = q; a[i] = p.y;"),
    ("Pair p;", "p.x = 1.0; p.y = 2.0; a[i] = p.x + p.y;"),
])
def test_elements_some_statement_sets_are_left_alone(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decl: str, body: str) -> None:
    helper = ("perfect void setAll(main float[4] t) {\n  for (int q = 0; q < 4; q++) "
              "{ t[q] = 0.0; }\n}\n")
    types = "type Pair { float x; float y; };\n"
    source = UNSET.format(types=types, decl=decl, body=body) + helper
    out = _check(tmp_path, source, capsys)
    assert "0 errors, 0 warnings" in out, out


def test_the_race_walk_of_a_deep_loop_nest_stays_within_its_budget(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The walk goes around each loop twice: 2 to the 300th passes without its budget (the
    # fuzzer's deep for nests with a read of another unit's element inside).
    import time

    body = "s += a[(i + 1) % n];"
    for level in range(300):
        body = f"for (int f{level} = 0; f{level} < 1; f{level}++) {{ {body} }}"
    source = ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
              f"    float s = 0.0;\n    {body}\n    a[i] = s;\n  }}\n}}\n")
    start = time.process_time()
    out = _check(tmp_path, source, capsys)
    assert "0 errors" in out
    assert time.process_time() - start < 20
