"""Reliability, round 8: the original programs' scalar between foreach levels used as a
count (docs/reliability.md, "Round 8")."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from tests.fuzz.checking import check_text, write_source

# The original MCL programs declare a scalar in a block and run that many threads; the
# split of `threads` into warps and threads at fermi and hopper put the warp count,
# computed from `k`, in host code, where `k` is not declared.
BETWEEN = """\
gpu void kern(int n, dev float[n] a) {
  foreach (int b in n / 4 blocks) {
    DECLS
    foreach (int t in k threads) {
      a[b * 4 + t] = 1.0;
    }
  }
}
"""


@pytest.mark.parametrize("decls", ["const int k = 4;", "int m = 2; int k = m * 2;",
                                   "const int k = n / 8;"])
@pytest.mark.parametrize("leaf", ["fermi", "hopper"])
def test_a_count_declared_between_foreach_levels_translates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decls: str, leaf: str) -> None:
    source = BETWEEN.replace("DECLS", decls)
    assert "0 errors, 0 warnings" in check_text(tmp_path, source, capsys)
    code = main(["translate", "--to", leaf, str(write_source(tmp_path, source))])
    out, err = capsys.readouterr()
    assert code == 0, err
    # The warp count is computed on the host from the scalar's value, before the blocks.
    host = out.split("foreach (int b")[0]
    assert "nrWarpsT = (" in host and "k" not in host.split("nrWarpsT =")[1], out
    assert "if (t < k)" in out


def test_a_count_declared_between_foreach_levels_generates_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_source(tmp_path, BETWEEN.replace("DECLS", "const int k = 4;"))
    assert main(["codegen", "--target", "fermi", str(path), "-o", str(tmp_path / "out")]) == 0
    kernel = (tmp_path / "out" / "kern.cl").read_text(encoding="utf-8")
    assert "const int k = 4;" in kernel and "if (t < k)" in kernel
