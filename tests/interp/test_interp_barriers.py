"""Barriers: units of a group advance together from barrier to barrier (mcpl.md §4), the
set of units is the one that shares the barrier's memory space, and a barrier not reached
by all of them is an error at the barrier's position."""

from __future__ import annotations

import numpy as np
import pytest
from interp_helpers import FILE, library, position, run, run_error

from mcl import pipeline
from mcl.interp import run_function
from mcl.mcpl.parse import parse_file
from mcl.resources import kernels_dir
from mcl.translate import translate_module

SHIFT = """
gpu void shift(int nb, int n, dev float[nb, n] out, dev float[nb, n] x) {
  foreach (int b in nb blocks) {
    local float[n] t;
    foreach (int i in n threads) {
      t[i] = x[b, i];
      barrier(local);
      out[b, i] = t[(i + 1) % n];
    }
  }
}
"""


def test_threads_of_a_block_see_each_others_writes_after_a_barrier() -> None:
    x = np.arange(3 * 7, dtype=np.float32).reshape(3, 7)
    out = np.zeros_like(x)
    run(SHIFT, "shift", {"nb": 3, "n": 7, "out": out, "x": x})
    # Without lock-step phases, thread i would read t[i + 1] before it is written (NaN).
    assert np.array_equal(out, np.roll(x, -1, axis=1))


def test_without_a_library_barriers_synchronise_the_innermost_units() -> None:
    x = np.arange(2 * 5, dtype=np.float32).reshape(2, 5)
    out = np.zeros_like(x)
    run(SHIFT, "shift", {"nb": 2, "n": 5, "out": out, "x": x}, library=None)
    assert np.array_equal(out, np.roll(x, -1, axis=1))


def test_barrier_on_a_space_shared_by_blocks_synchronises_all_blocks() -> None:
    src = """
    gpu void rotate(int nb, int n, dev float[nb, n] out, dev float[nb, n] t, dev float[nb, n] x) {
      foreach (int b in nb blocks) {
        foreach (int i in n threads) {
          t[b, i] = x[b, i] * 2.0;
          barrier(dev);
          out[b, i] = t[(b + 1) % nb, i];
        }
      }
    }
    """
    x = np.arange(4 * 3, dtype=np.float32).reshape(4, 3)
    out, t = np.zeros_like(x), np.zeros_like(x)
    run(src, "rotate", {"nb": 4, "n": 3, "out": out, "t": t, "x": x})
    assert np.array_equal(out, np.roll(2 * x, -1, axis=0))


def test_directly_nested_foreach_over_one_group_is_one_set_of_units() -> None:
    src = """
    perfect void flip(int n, int m, main float[n, m] out, main float[n, m] t, main float[n, m] x) {
      foreach (int i in n threads) {
        foreach (int j in m threads) {
          t[i, j] = x[i, j] + 1.0;
          barrier(main);
          out[i, j] = t[n - 1 - i, m - 1 - j];
        }
      }
    }
    """
    x = np.arange(5 * 4, dtype=np.float32).reshape(5, 4)
    out, t = np.zeros_like(x), np.zeros_like(x)
    run(src, "flip", {"n": 5, "m": 4, "out": out, "t": t, "x": x})
    assert np.array_equal(out, (x + 1)[::-1, ::-1])


def test_barrier_in_a_loop_runs_phase_by_phase() -> None:
    src = """
    gpu void prefix(int n, dev int[n] out) {
      foreach (int b in 1 blocks) {
        local int[n] a;
        local int[n] c;
        foreach (int i in n threads) {
          a[i] = 1;
          barrier(local);
          for (int s = 1; s < n; s *= 2) {
            if (i >= s) { c[i] = a[i] + a[i - s]; } else { c[i] = a[i]; }
            barrier(local);
            a[i] = c[i];
            barrier(local);
          }
          out[i] = a[i];
        }
      }
    }
    """
    out = np.zeros(11, dtype=np.int32)
    run(src, "prefix", {"n": 11, "out": out})
    assert out.tolist() == list(range(1, 12))  # inclusive prefix sum of ones


@pytest.mark.parametrize(("n", "chunk"), [(1000, 64), (37, 13), (13, 37), (200, 1), (101, 101)])
def test_shipped_gpu_reduction(n: int, chunk: int) -> None:
    module = parse_file(kernels_dir() / "reduction" / "gpu_v1.mcpl")
    x = np.random.default_rng(n).uniform(-1, 1, n).astype(np.float32)
    partial = np.zeros(-(-n // chunk), dtype=np.float32)
    run_function(
        pipeline.check(module, library()), "reduction",
        {"n": n, "chunk": chunk, "partial": partial, "x": x}, library()
    )
    padded = np.zeros(len(partial) * chunk)
    padded[:n] = x
    np.testing.assert_allclose(partial, padded.reshape(-1, chunk).sum(axis=1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [37, 64])
def test_gpu_reduction_translated_to_fermi_still_computes_the_sum(n: int) -> None:
    """warps split the threads of a block: barrier(shared) must gather all warps."""
    module = parse_file(kernels_dir() / "reduction" / "gpu_v1.mcpl")
    fermi = translate_module(module, "fermi", library()).module
    x = np.random.default_rng(7).uniform(-1, 1, 300).astype(np.float32)
    partial = np.zeros(-(-300 // n), dtype=np.float32)
    run_function(pipeline.check(fermi, library()), "reduction",
                 {"n": 300, "chunk": n, "partial": partial, "x": x}, library())
    padded = np.zeros(len(partial) * n)
    padded[:300] = x
    np.testing.assert_allclose(partial, padded.reshape(-1, n).sum(axis=1), rtol=1e-5, atol=1e-5)


DIVERGENT = """
gpu void divergent(int n, dev float[n] out) {
  foreach (int b in 2 blocks) {
    local float[n] t;
    foreach (int i in n threads) {
      t[i] = 1.0;
      if (i < 3) {
        barrier(local);
      }
      out[i] = t[i];
    }
  }
}
"""


def test_barrier_reached_by_some_units_only_is_an_error() -> None:
    d = run_error(DIVERGENT, "divergent", {"n": 8, "out": np.zeros(8, dtype=np.float32)})
    assert d.code == "interp-barrier-divergence"
    assert "3 of 8 units" in d.message
    assert d.span is not None and d.span.file == FILE
    assert (d.span.line, d.span.column) == position(DIVERGENT, "barrier(local)")


def test_units_at_different_barriers_is_an_error() -> None:
    src = """
    gpu void split(int n, dev float[n] out) {
      foreach (int b in 1 blocks) {
        foreach (int i in n threads) {
          if (i % 2 == 0) { barrier(local); } else { barrier(local); }
          out[i] = 1.0;
        }
      }
    }
    """
    d = run_error(src, "split", {"n": 4, "out": np.zeros(4, dtype=np.float32)})
    assert d.code == "interp-barrier-divergence" and "different barriers" in d.message
    assert (d.span.line, d.span.column) == position(src, "barrier(local)", 1)
    assert f"{position(src, 'barrier(local)', 2)[0]}:" in d.message


def test_loop_with_unit_dependent_trip_count_around_a_barrier_is_an_error() -> None:
    src = """
    gpu void loop(int n, dev float[n] out) {
      foreach (int b in 1 blocks) {
        foreach (int i in n threads) {
          for (int k = 0; k < i; k++) { barrier(local); }
          out[i] = 1.0;
        }
      }
    }
    """
    d = run_error(src, "loop", {"n": 4, "out": np.zeros(4, dtype=np.float32)})
    assert d.code == "interp-barrier-divergence"
    assert (d.span.line, d.span.column) == position(src, "barrier(local)")


def test_barrier_on_a_space_no_units_share_is_an_error() -> None:
    src = """
    gpu void private(int n, dev float[n] out) {
      foreach (int b in 1 blocks) {
        foreach (int i in n threads) {
          barrier(reg);
          out[i] = 1.0;
        }
      }
    }
    """
    d = run_error(src, "private", {"n": 2, "out": np.zeros(2, dtype=np.float32)})
    assert d.code == "interp-barrier-space"
    assert (d.span.line, d.span.column) == position(src, "barrier(reg)")


def test_barrier_in_a_called_function_is_reported() -> None:
    src = """
    gpu void sync() { barrier(local); }
    gpu void caller(int n, dev float[n] out) {
      foreach (int b in 1 blocks) {
        foreach (int i in n threads) {
          sync();
          out[i] = 1.0;
        }
      }
    }
    """
    d = run_error(src, "caller", {"n": 2, "out": np.zeros(2, dtype=np.float32)})
    assert d.code == "interp-unsupported"
    assert (d.span.line, d.span.column) == position(src, "barrier(local)")


def test_barrier_outside_foreach_is_a_no_op() -> None:
    src = """
    gpu void host(int n, dev float[n] out) {
      barrier(dev);
      foreach (int b in 1 blocks) { foreach (int i in n threads) { out[i] = 2.0; } }
    }
    """
    out = np.zeros(3, dtype=np.float32)
    run(src, "host", {"n": 3, "out": out})
    assert out.tolist() == [2.0, 2.0, 2.0]
