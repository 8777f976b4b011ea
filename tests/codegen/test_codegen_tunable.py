"""Code that does not depend on the OpenCL compiler's mood (issue 15): `#pragma unroll`
on loops of a small constant trip count, named constants as overridable macros, and
constant overrides at generation time (what `mcl tune` and `.tuned.toml` files use)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcl import pipeline
from mcl.backends.opencl.runner import OpenCLSession
from mcl.diagnostics import MclError
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir

from .support import generate, library, load

TILED = """
const int TILE = 4;
const int STEPS = TILE * 2;

fermi void scale(int n, global float[n] out, global float[n] x) {
  int nb = (n + TILE - 1) / TILE;
  foreach (int b in nb blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in TILE threads) {
        int i = b * TILE + t;
        float s = 0.0;
        for (int k = 0; k < STEPS; k++) {
          s += 0.5;
        }
        if (i < n) {
          out[i] = x[i] * s;
        }
      }
    }
  }
}
"""


def test_small_constant_loops_get_unroll_pragma(tmp_path: Path) -> None:
    g = generate(load(tmp_path, TILED), "fermi")
    lines = g.source.splitlines()
    k = next(i for i, line in enumerate(lines) if "for (int k = 0; k < STEPS; k++)" in line)
    assert lines[k - 1].strip() == "#pragma unroll  // 8 steps"


def test_unroll_limit_comes_from_the_mapping(tmp_path: Path) -> None:
    mapping = (Path(__file__).parents[2] / "hwdescs" / "fermi.opencl.toml").read_text()
    small = generate(load(tmp_path, TILED), "fermi", mapping + "\n[codegen]\nunroll = 4\n")
    assert "#pragma unroll" not in small.source  # 8 steps > 4
    with pytest.raises(MclError, match="codegen.unroll"):
        generate(load(tmp_path, TILED), "fermi", mapping + "\n[codegen]\nunroll = -1\n")


# A constant loop around a barrier (as several-elements makes of a foreach whose units
# meet at one) beside one without.
PHASED = """
const int TILE = 4;

fermi void phases(int n, global float[n] out) {
  foreach (int b in 1 blocks) {
    shared float[TILE] part;
    foreach (int w in 1 warps) {
      foreach (int t in TILE threads) {
        for (int e = 0; e < 8; e++) {
          float s = 0.0;
          for (int k = 0; k < TILE; k++) {
            s += 0.5;
          }
          part[t] = s;
          barrier(shared);
          if (t == 0 && e < n) {
            out[e] = part[TILE - 1];
          }
          barrier(shared);
        }
      }
    }
  }
}
"""


def test_a_loop_around_a_barrier_loses_its_pragma_only_where_the_mapping_says(
        tmp_path: Path) -> None:
    """The device check's builds (mcl.refine.device_check) turn the pragma off on loops
    that hold a barrier, which PoCL takes minutes to build unrolled; every other loop
    keeps it, and the mapping as read keeps both."""
    from mcl.backends import load_mapping

    program = load(tmp_path, PHASED)
    as_read = load_mapping(library().get("fermi"))
    assert as_read.unroll_barrier_loops
    both = pipeline.generate(program, "fermi", library(), as_read).source
    assert both.count("#pragma unroll") == 2
    checked = pipeline.generate(program, "fermi", library(), dataclasses.replace(
        as_read, unroll_barrier_loops=False)).source
    lines = checked.splitlines()
    outer = next(i for i, line in enumerate(lines) if "for (int e = 0; e < 8; e++)" in line)
    inner = next(i for i, line in enumerate(lines) if "for (int k = 0; k < TILE; k++)" in line)
    assert "#pragma unroll" not in lines[outer - 1]
    assert lines[inner - 1].strip() == "#pragma unroll  // 4 steps"
    assert checked.replace("#pragma unroll  // 8 steps\n", "").replace(" ", "") == \
        both.replace("#pragma unroll  // 8 steps\n", "").replace(" ", "")


def test_loops_with_runtime_bounds_are_not_unrolled(tmp_path: Path) -> None:
    source = TILED.replace("k < STEPS", "k < n")
    assert "#pragma unroll" not in generate(load(tmp_path, source), "fermi").source


def test_constants_are_overridable_macros(tmp_path: Path) -> None:
    g = generate(load(tmp_path, TILED), "fermi")
    assert "#ifndef TILE\n#define TILE (4)" in g.source
    assert "#define STEPS (TILE * 2)" in g.source  # derived constants follow an override
    # The work-group size is stated in the constants, so it follows an override too.
    assert "reqd_work_group_size(TILE, 1, 1)" in g.source


@pytest.mark.parametrize("n", [16, 37])  # a multiple of the tile and not
def test_macro_override_matches_the_value_written_in_mcpl(tmp_path: Path, n: int) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    four = generate(load(tmp_path / "a", TILED), "fermi")
    eight = generate(load(tmp_path / "b", TILED.replace("TILE = 4", "TILE = 8")), "fermi")
    x = np.random.default_rng(1).uniform(-1, 1, n).astype(np.float32)
    args = {"n": n, "out": np.zeros(n, np.float32), "x": x}
    written = OpenCLSession(eight).run("scale", args).outputs["out"]
    # The source generated with TILE = 4, built with -D TILE=8 (host sizes for 8).
    overridden_module = dataclasses.replace(eight, source=four.source)
    overridden = OpenCLSession(overridden_module, options=("-DTILE=8",)).run("scale", args)
    np.testing.assert_array_equal(overridden.outputs["out"], written)
    np.testing.assert_allclose(written, x * 8.0, rtol=1e-6)  # STEPS = 16 halves


def test_generation_time_override_equals_the_written_value(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    program = load(tmp_path / "a", TILED)
    overridden = pipeline.generate(program, "fermi", library(), overrides={"TILE": 8})
    written = generate(load(tmp_path / "b", TILED.replace("TILE = 4", "TILE = 8")), "fermi")
    assert overridden.source.replace(str(tmp_path / "a"), "") == written.source.replace(
        str(tmp_path / "b"), ""
    )
    with pytest.raises(MclError, match="no top-level constant 'TILES'"):
        pipeline.generate(program, "fermi", library(), overrides={"TILES": 8})


@pytest.mark.parametrize(
    ("version", "leaf", "overrides"),
    [
        ("hopper_v2", "hopper", {}),
        ("hopper_v2", "hopper", {"NR_WARPS": 4, "TILE_K": 16}),
        ("x86_avx512_v3", "x86_avx512", {"BLOCK_K": 32}),
    ],
)
@pytest.mark.parametrize("size", [64, 45])  # divisible by the tiles and not
def test_unrolled_series_kernels_verify_on_pocl(
    version: str, leaf: str, overrides: dict[str, int], size: int
) -> None:
    program = load_program(kernels_dir() / "matmul" / f"{version}.mcpl", library=library())
    checked = pipeline.checked(program, library())
    g = pipeline.generate(checked, leaf, library(), overrides=overrides)
    assert "#pragma unroll" in g.source
    rng = np.random.default_rng(size)
    n, m, p = size, size + 3, size - 5
    a = rng.uniform(-1, 1, (n, p)).astype(np.float32)
    b = rng.uniform(-1, 1, (p, m)).astype(np.float32)
    args = {"n": n, "m": m, "p": p, "c": np.zeros((n, m), np.float32), "a": a, "b": b}
    c = OpenCLSession(g).run("matmul", args).outputs["c"]
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


COPY4 = """
const int VEC = 4;

fermi void copy4(int n, global float[n] out, global float[n + 1] x) {
  int nb = (n + VEC - 1) / VEC;
  foreach (int b in nb blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 1 threads) {
        reg float[VEC] r;
        if ((b + 1) * VEC <= n) {
          for (int v = 0; v < VEC; v++) {
            r[v] = x[b * VEC + v + SHIFT];
          }
          for (int v = 0; v < VEC; v++) {
            r[v] = r[v] * 2.0;
          }
          for (int v = 0; v < VEC; v++) {
            out[b * VEC + v] = r[v];
          }
        } else {
          for (int v = 0; v < VEC; v++) {
            if (b * VEC + v < n) {
              out[b * VEC + v] = x[b * VEC + v + SHIFT] * 2.0;
            }
          }
        }
      }
    }
  }
}
"""

VECTOR_MAPPING = "\n[codegen]\nvector_width = 4\n"


def _fermi_mapping() -> str:
    return (Path(__file__).parents[2] / "hwdescs" / "fermi.opencl.toml").read_text()


@pytest.mark.parametrize("n", [16, 18])  # whole vectors, and a scalar tail
@pytest.mark.parametrize("shift", [0, 1])  # aligned, and contiguous but unaligned
def test_vector_copies_verify_on_pocl(tmp_path: Path, n: int, shift: int) -> None:
    source = COPY4.replace("SHIFT", str(shift))
    g = generate(load(tmp_path, source), "fermi", _fermi_mapping() + VECTOR_MAPPING)
    if shift == 0:  # both sides provably 16-byte aligned: a float4 access
        assert "*(__global float4*)&out[b * VEC] = *(const float4*)&r[0];" in g.source
        assert "*(float4*)&r[0] = *(__global const float4*)&x[b * VEC];" in g.source
    else:  # contiguous only: vload4/vstore4
        assert "vstore4(vload4(0, &x[b * VEC + 1]), 0, &r[0]);" in g.source
    assert "float r[VEC] __attribute__((aligned(16)));" in g.source
    assert g.source.count("vector copy of the loop over v") == 2  # not the scaling loop
    x = np.random.default_rng(n).uniform(-1, 1, n + 1).astype(np.float32)
    out = run_module(g, n, x)
    np.testing.assert_array_equal(out, x[shift : shift + n] * 2)
    # Without the mapping option the same kernel is scalar and gives the same result.
    scalar = generate(load(tmp_path, source), "fermi")
    assert "float4" not in scalar.source and "vload4" not in scalar.source
    np.testing.assert_array_equal(run_module(scalar, n, x), out)


COPY_INT4 = """
const int VEC = 4;
fermi void copyi(int n, global int[n] out, global float[n] scaled, global int[n] x) {
  x as int[n / VEC][VEC] x4;
  out as int[n / VEC][VEC] out4;
  foreach (int b in n / VEC blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 1 threads) {
        reg int[VEC] r;
        reg float[VEC] f;
        for (int v = 0; v < VEC; v++) {
          r[v] = x4[b][v];
        }
        for (int v = 0; v < VEC; v++) {
          out4[b][v] = r[v];
        }
        for (int v = 0; v < VEC; v++) {
          f[v] = r[v];
        }
        for (int v = 0; v < VEC; v++) {
          scaled[b * VEC + v] = f[v] * 0.5;
        }
      }
    }
  }
}
"""


def test_vector_copies_of_ints_verify_on_pocl(tmp_path: Path) -> None:
    """An int copy is one int4 access as a float copy is one float4 access (spmv
    hopper_v17 loads cols so); a copy from ints into floats converts each element and
    stays a scalar loop."""
    g = generate(load(tmp_path, COPY_INT4), "fermi", _fermi_mapping() + VECTOR_MAPPING)
    assert "*(int4*)&r[0] = *(__global const int4*)&x4[b * VEC + 0];" in g.source
    assert "*(__global int4*)&out4[b * VEC + 0] = *(const int4*)&r[0];" in g.source
    assert g.source.count("vector copy of the loop over v") == 2
    n = 12
    x = np.arange(-5, n - 5, dtype=np.int32) * 3
    args = {"n": n, "out": np.zeros(n, np.int32), "scaled": np.zeros(n, np.float32), "x": x}
    outputs = OpenCLSession(g).run("copyi", args).outputs
    np.testing.assert_array_equal(outputs["out"], x)
    np.testing.assert_array_equal(outputs["scaled"], x.astype(np.float32) * 0.5)


def run_module(g: Any, n: int, x: np.ndarray) -> np.ndarray:
    args = {"n": n, "out": np.zeros(n, np.float32), "x": x}
    return OpenCLSession(g).run("copy4", args).outputs["out"]


def test_vector_width_is_checked(tmp_path: Path) -> None:
    with pytest.raises(MclError, match="codegen.vector_width"):
        generate(
            load(tmp_path, TILED), "fermi", _fermi_mapping() + "\n[codegen]\nvector_width = 3\n"
        )


def test_vector_copy_refuses_overrides_that_break_its_proof(tmp_path: Path) -> None:
    g = generate(
        load(tmp_path, COPY4.replace("SHIFT", "0")), "fermi", _fermi_mapping() + VECTOR_MAPPING
    )
    assert '#if (VEC) != 4\n#error "vector copy proven for VEC = 4' in g.source
    n = 8
    x = np.zeros(n + 1, np.float32)
    args = {"n": n, "out": np.zeros(n, np.float32), "x": x}
    with pytest.raises(MclError, match="vector copy proven for VEC = 4"):
        OpenCLSession(g, options=("-DVEC=2",)).run("copy4", args)
