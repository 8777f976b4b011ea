"""Reliability, round 6: the wrong acceptances that remained after round 5
(docs/reliability.md): a read of another unit's element of a parameter, a barrier under a
condition that differs between warps, units per block through nesting or a variable,
uninitialised elements and fields, constant out-of-bounds subscripts through loops and
views."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main


def _check(tmp_path: Path, source: str, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "k.mcpl"
    path.write_text(source, encoding="utf-8")
    main(["check", str(path)])
    captured = capsys.readouterr()
    return captured.out + captured.err


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
    assert "race" not in out, out


def test_kernels_one_after_the_other_are_ordered(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two top-level foreach statements are two kernels: the second reads what the first
    # wrote, after every unit of the first has ended
    source = ("perfect void k(int n, main float[n] a, main float[n] b) {\n"
              "  foreach (int i in n threads) { b[i] = a[i]; }\n"
              "  foreach (int i in n threads) { a[i] = b[(i + 1) % n]; }\n}\n")
    assert "race" not in _check(tmp_path, source, capsys)


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
    assert "mcpl-foreach-limit" not in _check(
        tmp_path, NESTED.format(outer=32, inner=32), capsys)
