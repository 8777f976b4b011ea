"""A problem size beyond a par_group's `max_nr_units` (issue 19: 70,001 blocks at fermi,
which allows 65,535) is a warning of the feedback, never silence."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main

FERMI = """\
fermi void scale(int n, global float[n, 32] a) {
  foreach (int b in n blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        a[b, t] = a[b, t] * 2.0;
      }
    }
  }
}
"""
PERFECT = """\
perfect void scale(int n, main float[n] a) {
  foreach (int i in n threads) {
    a[i] = a[i] * 2.0;
  }
}
"""


def check(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    path = tmp_path / "k.mcpl"
    path.write_text(text)
    assert main(["check", str(path), "--severity", "warning", *argv]) == 0
    return capsys.readouterr().out


def test_blocks_beyond_fermis_grid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = check(tmp_path, FERMI, capsys, "-D", "n=70001")
    assert (f"{tmp_path / 'k.mcpl'}:2:3: warning: foreach b runs n (= 70,001) units of "
            "'blocks', but fermi allows at most 65,535 in each grid dimension "
            "(fermi.hierarchy.blocks.max_nr_units)") in out
    assert "[units-over-limit]" in out


def test_at_the_limit_and_without_values_nothing_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "units-over-limit" not in check(tmp_path, FERMI, capsys, "-D", "n=65535")
    assert "units-over-limit" not in check(tmp_path, FERMI, capsys)


def test_a_translation_for_a_huge_size_is_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ceiling(n / 1024) blocks: 68,361 for n = 70,001,000.
    out = check(tmp_path, PERFECT, capsys, "--level", "fermi", "-D", "n=70001000")
    assert "runs ceiling(n/1024) (= 68,361) units of 'blocks'" in out
    out = check(tmp_path, PERFECT, capsys, "--level", "fermi", "-D", "n=67107840")
    assert "units-over-limit" not in out  # 65,535 blocks of 1,024 threads exactly


def test_nested_foreach_over_one_group_counts_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # gpu allows 1024 threads per block; 40 x 40 nested threads are 1,600 of them. With
    # a count from a size, the feedback says so for the values given; with constants
    # only, the checker refuses the kernel (mcpl-foreach-limit).
    text = """\
gpu void k(int n, int m, dev float[n, m, 40] a) {
  foreach (int b in n blocks) {
    foreach (int i in m threads) {
      foreach (int j in 40 threads) {
        a[b, i, j] = 1.0;
      }
    }
  }
}
"""
    out = check(tmp_path, text, capsys, "-D", "n=4", "-D", "m=40")
    assert "foreach i and j runs 40*m (= 1,600) units of 'threads', but gpu allows at most " \
        "1,024" in out
    path = tmp_path / "k.mcpl"
    path.write_text(text.replace("m threads", "40 threads"))
    assert main(["check", str(path)]) == 1
    captured = capsys.readouterr()
    assert "run 40 * 40 = 1600 threads together, but 'gpu' allows at most 1024" in \
        captured.out + captured.err
