"""The C the OpenMP backend generates: its shape (a parallel loop over the work-groups,
a SIMD loop over the work-items or vector code for the lanes), the kernels the lane
translation covers run against numpy, and what the backend refuses, at the MCPL line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from codegen.support import load
from codegen.test_codegen_lanes import CONTIGUOUS, FALLBACKS, KINDS
from openmp_support import LIBRARY, generate, run

from mcl import pipeline
from mcl.diagnostics import MclError
from mcl.resources import kernels_dir

# Two phases of the 16 lanes of a thread, a barrier between them: each lane reads what
# its neighbour wrote.
BARRIER = """
x86_avx512 void shift(int n, main float[n] a, main float[n] b, main float[n] c) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      b[t * 16 + v] = a[t * 16 + v] * 2.0;
      barrier(main);
      c[t * 16 + v] = b[t * 16 + (v + 1) % 16];
    }
  }
}
"""


def _kernel(text: str) -> str:
    return text[text.index("\nvoid "):]


def test_matmul_v4_is_a_parallel_loop_over_threads_of_vector_code() -> None:
    checked = pipeline.checked_at(kernels_dir() / "matmul" / "x86_avx512_v4.mcpl", [], LIBRARY)
    g = generate(checked)
    assert g.language == "openmp"
    text = _kernel(g.source)
    assert "#pragma omp parallel for schedule(dynamic, 1)" in text
    assert "float16 bPack[BLOCK_K * NR_VECS];" in text  # the packed block: vectors
    assert "mcl_vload_float16(&b[" in text  # a contiguous strip of b: one vector load
    assert "mcl_vstore_float16(&c[i * m + j_lane0], " in text
    assert "#pragma GCC unroll 4" in text and "#pragma unroll" not in text
    for opencl in ("__kernel", "get_group_id", "vload8", "__global", ".s0"):
        assert opencl not in text


def test_lanes_that_stay_work_items_are_a_simd_loop(tmp_path: Path) -> None:
    g = generate(load(tmp_path, FALLBACKS["min of floats"]))
    text = _kernel(g.source)
    assert "#pragma omp simd\n" in text
    assert "for (int mcl_item0 = 0; mcl_item0 < 16; mcl_item0++) {" in text
    assert "const int v = mcl_item0;" in text


def test_every_kind_of_lane_access_matches_numpy(tmp_path: Path) -> None:
    g = generate(load(tmp_path, KINDS))
    text = _kernel(g.source)
    assert "float16 acc[3];" in text and "mcl_item0 <" not in text
    assert "if (mcl_mask[15]) twice[mcl_i[15]] = mcl_v[15];" in text
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


def test_contiguous_lanes_are_vector_loads_and_stores(tmp_path: Path) -> None:
    g = generate(load(tmp_path, CONTIGUOUS))
    text = _kernel(g.source)
    assert "mcl_vstore_float16(&b[t * LANES + 0], " in text and "mcl_i =" not in text
    a = np.random.default_rng(0).random(48, dtype=np.float32)
    np.testing.assert_allclose(run(g, "scale", {"n": 48, "a": a, "b": 0 * a})["b"],
                               a * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("reason", ["a loop whose trip count depends on the lane",
                                    "a division in a varying if"])
def test_work_items_in_a_simd_loop_match_numpy(tmp_path: Path, reason: str) -> None:
    g = generate(load(tmp_path, FALLBACKS[reason]))
    a = np.random.default_rng(1).random(32, dtype=np.float32)
    b = run(g, "f", {"n": 32, "a": a, "b": 0 * a})["b"]
    rows = a.reshape(2, 16)
    expected = {
        "a loop whose trip count depends on the lane":
            np.concatenate([np.cumsum(r) - r for r in rows]),
        "a division in a varying if": np.array(
            [0.0 if k % 16 == 8 else float(int(8 / (k % 16 - 8))) for k in range(32)]),
    }[reason]
    np.testing.assert_allclose(b, expected, rtol=1e-5)


def test_a_barrier_ends_one_loop_of_the_work_items_and_starts_the_next(tmp_path: Path) -> None:
    g = generate(load(tmp_path, BARRIER))
    text = _kernel(g.source)
    assert text.count("for (int mcl_item0 = 0; mcl_item0 < 16; mcl_item0++) {") == 2
    a = np.random.default_rng(2).random(48, dtype=np.float32)
    z = np.zeros(48, dtype=np.float32)
    out = run(g, "shift", {"n": 48, "a": a, "b": z, "c": z})
    expected = np.roll((a * 2).reshape(3, 16), -1, axis=1).reshape(-1)
    np.testing.assert_allclose(out["c"], expected, rtol=1e-6)


@pytest.mark.parametrize(("change", "message", "line"), [
    (("      barrier(main);\n", "      for (int k = 0; k < 1; k++) { barrier(main); }\n"),
     "this barrier stands inside a for statement", 6),
    (("      b[t * 16 + v] = a[t * 16 + v] * 2.0;\n",
      "      float x = a[t * 16 + v] * 2.0;\n      b[t * 16 + v] = x;\n"),
     "'x' is declared before the barrier at line 7 and used after it", 8),
])
def test_what_the_work_item_loops_cannot_run_is_an_error_at_its_line(
        tmp_path: Path, change: tuple[str, str], message: str, line: int) -> None:
    source = BARRIER.replace(*change)
    if "'x'" in message:
        source = source.replace("c[t * 16 + v] = b[t * 16 + (v + 1) % 16];",
                                "c[t * 16 + v] = b[t * 16 + (v + 1) % 16] + x;")
    with pytest.raises(MclError) as caught:
        generate(load(tmp_path, source))
    (d,) = caught.value.diagnostics
    assert d.code == "codegen-openmp-barrier" and message in d.message
    assert str(d).startswith(f"{tmp_path / 'kernel.mcpl'}:{line}:")
    assert ": error: " in str(d)


def test_a_gpu_leaf_is_refused() -> None:
    checked = pipeline.checked_at(kernels_dir() / "matmul" / "hopper_v1.mcpl", [], LIBRARY)
    with pytest.raises(MclError) as caught:
        generate(checked, "hopper")
    assert caught.value.diagnostics[0].code == "codegen-openmp-leaf"
    assert "CPU leaves" in caught.value.diagnostics[0].message


RETURN = """
x86_avx512 void f(int n, main float[n] a, main float[n] b) {
  foreach (int t in n / 16 threads) {
    foreach (int v in 16 vectors) {
      float s = 0.0;
      for (int k = 0; k < v; k++) {
        if (k > 5) {
          return;
        }
        s += a[t * 16 + k];
      }
      b[t * 16 + v] = s;
    }
  }
}
"""


def test_a_return_ends_only_its_work_item(tmp_path: Path) -> None:
    g = generate(load(tmp_path, RETURN))
    text = _kernel(g.source)
    assert "goto mcl_next0;" in text and "mcl_next0: ;" in text and "return;" not in text
    a = np.arange(32, dtype=np.float32)
    b = run(g, "f", {"n": 32, "a": a, "b": np.full(32, -1, np.float32)})["b"]
    lane = np.arange(32) % 16
    sums = np.concatenate([np.cumsum(r) - r for r in a.reshape(2, 16)])
    np.testing.assert_array_equal(b, np.where(lane <= 6, sums, -1))


# threads as work-items spread over work-groups of 8 (role `global`): counts that are not
# a multiple of 8 are guarded.
GLOBAL_MAPPING = """
device_type = "cpu"
[par_groups]
threads = { role = "global", dim = 0, group_size = 8 }
vectors = { role = "loop" }
[spaces]
main = { address_space = "global", barrier = "global" }
reg  = { address_space = "private" }
"""

DOUBLE = """
x86_avx512 void twice(int n, main float[n] a, main float[n] b) {
  foreach (int i in n threads) {
    foreach (int v in 1 vectors) {
      b[i] = a[i] * 2.0;
    }
  }
}
"""


def test_role_global_is_guarded(tmp_path: Path) -> None:
    from mcl.backends import parse_mapping
    from mcl.codegen.mapping import toml_module

    tomllib = toml_module()

    hwd = LIBRARY.get("x86_avx512")
    mapping = parse_mapping(tomllib.loads(GLOBAL_MAPPING), "x86_avx512.openmp.toml", hwd,
                            "openmp")
    g = pipeline.generate(load(tmp_path, DOUBLE), "x86_avx512", LIBRARY, mapping)
    text = _kernel(g.source)
    assert "if ((mcl_group0 * mcl_local0 + mcl_item0) < n) {" in text
    assert "mcl_item0 < 8;" in text
    a = np.random.default_rng(5).random(37, dtype=np.float32)
    np.testing.assert_allclose(run(g, "twice", {"n": 37, "a": a, "b": 0 * a})["b"], 2 * a)
