"""Foreach counts are checked against the par_group's `nr_units` / `max_nr_units`: the
units of a par_group inside one enclosing unit (the product of the counts of directly
nested foreach statements over that group) may not exceed what the description allows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from interp_helpers import FILE, position, run, run_error

from mcl.cli import main
from mcl.resources import kernels_dir

REDUCTION = kernels_dir() / "reduction" / "gpu_v1.mcpl"

THREADS = """
gpu void fill(int nb, int nt, dev int[nb, nt] out) {
  foreach (int b in nb blocks) {
    foreach (int t in nt threads) {
      out[b, t] = b * nt + t;
    }
  }
}
"""


def _fill(nb: int, nt: int) -> dict:
    return {"nb": nb, "nt": nt, "out": np.zeros((nb, nt), dtype=np.int32)}


def test_more_threads_per_block_than_gpu_allows_is_an_error_at_the_count() -> None:
    d = run_error(THREADS, "fill", _fill(1, 1025))
    assert d.code == "interp-foreach-count"
    assert "1025 units of 'threads'" in d.message
    assert "at most 1024 per 'block'" in d.message
    assert "gpu.hierarchy.blocks.block.threads.max_nr_units" in d.message
    assert d.span.file == FILE
    assert (d.span.line, d.span.column) == position(THREADS, "nt threads")


def test_the_limit_is_per_enclosing_unit() -> None:
    # 2 blocks of 1024 threads: 2048 threads in all, 1024 per block.
    out = run(THREADS, "fill", _fill(2, 1024))["out"]
    assert np.array_equal(out.reshape(-1), np.arange(2048))


BLOCKS_2D = """
gpu void grid(int n, int m, dev int[n, m] out) {
  foreach (int i in n blocks) {
    foreach (int j in m blocks) {
      foreach (int t in 1 threads) {
        out[i, j] = i + j;
      }
    }
  }
}
"""


def _grid(n: int, m: int) -> dict:
    return {"n": n, "m": m, "out": np.zeros((n, m), dtype=np.int32)}


def test_nested_foreach_statements_over_the_grid_count_per_dimension() -> None:
    # The grid's bound holds per dimension (UnitLimit.per_dimension): 3 x 30000 blocks
    # run, each count within gpu's 65535; one count beyond it does not.
    out = run(BLOCKS_2D, "grid", _grid(3, 30000))["out"]
    assert out[2, 29999] == 2 + 29999
    d = run_error(BLOCKS_2D, "grid", _grid(1, 70000))
    assert d.code == "interp-foreach-count"
    assert "this foreach runs 70000 units of 'blocks'" in d.message
    assert ("at most 65535 in each grid dimension (gpu.hierarchy.blocks.max_nr_units)"
            in d.message)
    assert (d.span.line, d.span.column) == position(BLOCKS_2D, "m blocks")


def test_nested_counts_within_the_limit_run() -> None:
    out = run(BLOCKS_2D, "grid", _grid(2, 3))["out"]
    assert np.array_equal(out, np.add.outer(np.arange(2), np.arange(3)))


FERMI = """
fermi void warp(int nt, global int[nt] out) {
  foreach (int b in 1 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in nt threads) {
        out[t] = t;
      }
    }
  }
}
"""


@pytest.mark.parametrize(("nt", "ok"), [(32, True), (31, True), (33, False)])
def test_an_exact_count_is_also_an_upper_limit(nt: int, ok: bool) -> None:
    args = {"nt": nt, "out": np.zeros(nt, dtype=np.int32)}
    if ok:
        assert np.array_equal(run(FERMI, "warp", args)["out"], np.arange(nt))
    else:
        d = run_error(FERMI, "warp", args)
        assert d.code == "interp-foreach-count"
        assert "exactly 32 per 'warp'" in d.message
        assert "fermi.hierarchy.blocks.block.warps.warp.threads.nr_units" in d.message


def test_unlimited_par_groups_have_no_limit() -> None:
    src = """
    perfect void k(int n, main int[n] out) {
      foreach (int i in n threads) { out[i] = i; }
    }
    """
    n = 70000  # more than any bounded par_group of the bundled descriptions
    out = run(src, "k", {"n": n, "out": np.zeros(n, dtype=np.int32)})["out"]
    assert out[-1] == n - 1


def test_mcl_run_reports_the_reduction_with_too_large_a_block(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The block size is the constant BLOCK, not the chunk: any chunk runs; a BLOCK past
    gpu's 1024 threads per block is reported at its foreach."""
    args = ["run", str(REDUCTION), "--interp", "-D", "n=3000"]
    assert main([*args, "-D", "chunk=1025"]) == 0
    big = tmp_path / "gpu_v1.mcpl"
    big.write_text(REDUCTION.read_text().replace("BLOCK = 256;", "BLOCK = 1025;"))
    reference = str(REDUCTION.parent / "reference.py")
    assert main(["run", str(big), "--interp", "--reference", reference, "-D", "n=3000"]) == 1
    err = capsys.readouterr().err
    # `mcl check` (run first) now reports it, before the interpreter would
    assert "mcpl-foreach-limit" in err and "1024" in err and "gpu_v1.mcpl:19:" in err
