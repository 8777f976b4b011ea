"""Explicit vector code for the lanes of x86_avx512 (mcl/codegen/lanes.py): the shape of
the code (vectors, vector loads and stores, per-lane stores where the lanes may not all
store) and the fallbacks to work-items, each kernel run on PoCL against numpy at sizes
that are not a multiple of the 16 lanes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mcl.backends import load_mapping
from mcl.resources import kernels_dir

from .support import generate, library, load, run

# Every kind of access the translation knows: a contiguous load and store (vector), a
# clamped index (vector while inside the array, else lane by lane), a gather and a
# scatter (stride 2), private arrays of the lanes with uniform indices, a uniform loop,
# and a store that only some lanes make.
KINDS = """
const int LANES = 16;
x86_avx512 void kinds(int n, main float[n] a, main float[n] twice, main float[n] clamped,
                      main float[2 * n] spread, main float[n] gathered, main int[n] ids) {
  int nrThreads = (n + LANES - 1) / LANES;
  foreach (int t in nrThreads threads) {
    foreach (int v in LANES vectors) {
      reg float[3] acc;
      for (int r = 0; r < 3; r++) {
        acc[r] = 0.0;
      }
      int i = min(t * LANES + v, n - 1);
      float x = a[i];
      for (int r = 0; r < 3; r++) {
        acc[r] += x * (r + 1);
      }
      clamped[i] = acc[1];
      int g = t * LANES + v;
      float y = a[(g * 7) % n];
      if (g < n) {
        twice[g] = acc[1];
        spread[2 * g + 1] = acc[2];
        gathered[g] = y;
        ids[g] = g * 2 - 1;
      }
    }
  }
}
"""

CONTIGUOUS = """
const int LANES = 16;
x86_avx512 void scale(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / LANES threads) {
    foreach (int v in LANES vectors) {
      b[t * LANES + v] = a[t * LANES + v] * 3.0 + 1.0;
    }
  }
}
"""

# Each breaks one rule of the translation: the kernel keeps its work-items and says why.
FALLBACKS = {
    "a loop whose trip count depends on the lane": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      float s = 0.0;
      for (int k = 0; k < v; k++) {
        s += a[t * 16 + k];
      }
      b[t * 16 + v] = s;
    }
  }
}
""",
    "min of floats": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      b[t * 16 + v] = min(a[t * 16 + v], 0.5);
    }
  }
}
""",
    "indexed by the lane": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      reg float[16] p;
      p[v] = a[t * 16 + v];
      b[t * 16 + v] = p[v];
    }
  }
}
""",
    "a read of a shared array in a varying if": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      if (v < 8) {
        b[t * 16 + v] = a[t * 16 + v];
      } else {
        b[t * 16 + v] = 0.0;
      }
    }
  }
}
""",
    "a read of a shared array in the right side of a varying &&": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      int i = t * 16 + v;
      b[i] = 0.0;
      if (i < n - 3 && a[i + 3] > 0.5) {
        b[i] = 1.0;
      }
    }
  }
}
""",
    "a division in a varying if": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      int d = v - 8;
      if (d != 0) {
        b[t * 16 + v] = 8 / d + 0.0;
      }
    }
  }
}
""",
    "other than a store under a varying if": """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      float s = a[t * 16 + v];
      if (s > 0.5) {
        s = 0.5;
      }
      b[t * 16 + v] = s;
    }
  }
}
""",
}


def _kernel_text(g) -> str:
    return g.source[g.source.index("__kernel"):]


def test_the_x86_avx512_mapping_names_its_lanes() -> None:
    assert load_mapping(library().get("x86_avx512")).lanes == "vectors"


def test_every_kind_of_access_matches_numpy_at_uneven_sizes(tmp_path: Path) -> None:
    g = generate(load(tmp_path, KINDS), "x86_avx512")
    text = _kernel_text(g)
    assert "get_local_id" not in text and "reqd_work_group_size(1, 1, 1)" in text
    assert "float16 acc[3];" in text  # a private array of the lanes: one vector each
    assert "float16 x = " in text
    # the clamped index: one vector while the 16 lanes lie inside the array
    assert "i_lane0 + 15 <= i_limit ? (float16)(vload8(0, &a[i_lane0])" in text
    assert "if (mcl_mask.sf) twice[mcl_i.sf] = mcl_v.sf;" in text  # lanes past n store nothing
    for n in (1, 17, 45):
        a = np.random.default_rng(n).random(n, dtype=np.float32)
        zeros = np.zeros(n, dtype=np.float32)
        out = run(g, "kinds", {"n": n, "a": a, "twice": zeros, "clamped": zeros,
                               "spread": np.zeros(2 * n, dtype=np.float32),
                               "gathered": zeros, "ids": np.zeros(n, dtype=np.int32)})
        g_idx = np.arange(n)
        np.testing.assert_allclose(out["twice"], a * 2, rtol=1e-6)
        np.testing.assert_allclose(out["clamped"], a * 2, rtol=1e-6)
        np.testing.assert_allclose(out["spread"][1::2], a * 3, rtol=1e-6)
        np.testing.assert_array_equal(out["gathered"], a[(g_idx * 7) % n])
        np.testing.assert_array_equal(out["ids"], g_idx * 2 - 1)


def test_contiguous_accesses_are_one_vector_load_and_store(tmp_path: Path) -> None:
    g = generate(load(tmp_path, CONTIGUOUS), "x86_avx512")
    text = _kernel_text(g)
    assert "(float16)(vload8(0, &a[t * LANES + 0]), vload8(1, &a[t * LANES + 0]))" in text
    assert "vstore8(mcl_v.lo, 0, &b[t * LANES + 0]);" in text
    assert "mcl_i" not in text  # no lane-by-lane access
    # a build that changes the lane count stops instead of running 16-lane code
    assert "#if (LANES) != 16\n#error" in g.source
    a = np.random.default_rng(0).random(48, dtype=np.float32)
    np.testing.assert_allclose(run(g, "scale", {"n": 48, "a": a, "b": 0 * a})["b"], a * 3 + 1,
                               rtol=1e-6)


@pytest.mark.parametrize("reason", sorted(FALLBACKS))
def test_what_is_not_proven_keeps_the_work_items(tmp_path: Path, reason: str) -> None:
    g = generate(load(tmp_path, FALLBACKS[reason]), "x86_avx512")
    text = g.source
    assert "the lanes of 'vectors' are work-items, not vectors" in text and reason in text
    assert "mcl_lane" not in text and "get_local_id(0)" in text
    a = np.random.default_rng(1).random(32, dtype=np.float32)
    b = run(g, "f", {"n": 32, "a": a, "b": 0 * a})["b"]
    rows = a.reshape(2, 16)
    expected = {
        "a loop whose trip count depends on the lane":
            np.concatenate([np.cumsum(r) - r for r in rows]),
        "min of floats": np.minimum(a, 0.5),
        "indexed by the lane": a,
        "a read of a shared array in the right side of a varying &&": np.append(
            (a[3:] > 0.5).astype(np.float32), [0.0, 0.0, 0.0]),
        "a read of a shared array in a varying if": np.where(np.arange(32) % 16 < 8, a, 0),
        "a division in a varying if": np.array(
            [0.0 if k % 16 == 8 else float(int(8 / (k % 16 - 8))) for k in range(32)]),
        "other than a store under a varying if": np.minimum(a, 0.5),
    }[reason]
    np.testing.assert_allclose(b, expected, rtol=1e-5)


def test_a_lane_count_that_is_no_vector_width_keeps_the_work_items(tmp_path: Path) -> None:
    source = CONTIGUOUS.replace("const int LANES = 16;", "const int LANES = 12;")
    g = generate(load(tmp_path, source), "x86_avx512")
    assert "mcl_lane" not in g.source and "get_local_id(0)" in g.source
    a = np.random.default_rng(2).random(36, dtype=np.float32)
    np.testing.assert_allclose(run(g, "scale", {"n": 36, "a": a, "b": 0 * a})["b"], a * 3 + 1,
                               rtol=1e-6)


def test_matmul_x86_avx512_v1_runs_its_register_tile_as_vectors() -> None:
    from mcl.mcpl.loader import load_program

    program = load_program(kernels_dir() / "matmul" / "x86_avx512_v1.mcpl", library=library())
    text = _kernel_text(generate(program, "x86_avx512"))
    assert "float16 sums[ELEMS_I * ELEMS_J];" in text
    assert "sums[ei * ELEMS_J + ej] += aik * bk[ej];" in text  # 16 lanes per multiply-add
    assert "j_lane0 + 15 <= j_limit ? (float16)(vload8(0, &b[k * m + j_lane0])" in text


def test_matmul_x86_avx512_v4_packs_b_as_vectors_and_stores_whole_vectors() -> None:
    """v4's packed block of b and its register tile are private arrays of float16; the
    micro-kernel multiplies a broadcast of a by a vector of bPack; rows of c whose 16
    columns are all inside c are stored as two vstore8 halves, the others lane by lane."""
    from mcl.mcpl.loader import load_program

    program = load_program(kernels_dir() / "matmul" / "x86_avx512_v4.mcpl", library=library())
    text = _kernel_text(generate(program, "x86_avx512"))
    assert "get_local_id" not in text
    for array in ("bPack[BLOCK_K * NR_VECS]", "cTemp[ROWS * NR_VECS]",
                  "sums[ELEMS_I * NR_VECS]"):
        assert f"float16 {array};" in text
    assert "sums[ei * NR_VECS + v] += aik * bPack[kk * NR_VECS + v];" in text
    assert "vstore8(mcl_v.hi, 1, &c[i * m + j_lane0]);" in text
    assert "if (mcl_mask.sf) c[mcl_i.sf] = mcl_v.sf;" in text


SHADOW = """
x86_avx512 void shadow(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      int j = t * 16 + v;
      float x = a[j];
      if (n > 0) {
        int j = t * 16 + v * 0 + 3;
        x += a[j];
      }
      b[t * 16 + v] = x;
    }
  }
}
"""


def test_an_inner_declaration_hides_a_lane_affine_index(tmp_path: Path) -> None:
    """The inner j is the same in every lane: its access gathers, it is not read as the
    outer j's vector."""
    g = generate(load(tmp_path, SHADOW), "x86_avx512")
    assert "a[(j).s0]" in g.source
    a = np.random.default_rng(3).random(32, dtype=np.float32)
    b = run(g, "shadow", {"n": 32, "a": a, "b": 0 * a})["b"]
    np.testing.assert_allclose(b, a + np.repeat(a.reshape(2, 16)[:, 3], 16), rtol=1e-6)
