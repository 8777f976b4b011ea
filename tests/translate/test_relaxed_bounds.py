"""Dimension statements read the most specific bound on the path (hdl.md §3.4 relaxation):
when a later step of the same translation maps a par_group one-to-one to one with a larger
upper bound, the constants this translation generates for it read the larger bound
(perfect -> cpu -> x86_avx512: x86_avx512's 16 vector lanes, not cpu's 4). User-written
constants stay as they are."""

from __future__ import annotations

import numpy as np
import pytest

from mcl import pipeline
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import Program
from mcl.mcpl.parse import parse_file, parse_source
from mcl.resources import kernels_dir
from mcl.translate import translate_module

from .hierarchies import HandLibrary, gpu_like, perfect_like, warps_like

CPU_LANES = ("cpu", "hierarchy", "threads", "thread", "vectors", "max_nr_units")
AVX_LANES = ("x86_avx512", "hierarchy", "threads", "thread", "vectors", "max_nr_units")


def hwd_consts(f: ast.Function) -> list[tuple[str, ...]]:
    return [n.path for n in ast.walk(f) if isinstance(n, ast.HwdConst)]


def translated(app: str, level: str) -> ast.Function:
    module = parse_file(kernels_dir() / app / "perfect.mcpl",
                        hwd_names=set(default_library().names()))
    return translate_module(module, level, default_library()).module.functions[0]


@pytest.mark.parametrize("app", ["vectoradd", "matmul"])
def test_perfect_to_x86_avx512_reads_the_leafs_vector_lanes(app: str):
    assert hwd_consts(translated(app, "x86_avx512")) == [AVX_LANES]
    # Translating only to cpu keeps cpu's own bound: there is no later step.
    assert hwd_consts(translated(app, "cpu")) == [CPU_LANES]


def test_a_bound_that_is_equal_further_down_keeps_the_constant_it_came_from():
    # gpu's 1024 threads are nvidia's 1024 threads (a relaxation with equal bounds), then
    # split into fermi's warps: the gpu constant still says where the value came from.
    paths = hwd_consts(translated("matmul", "fermi"))
    assert ("gpu", "hierarchy", "blocks", "block", "threads", "max_nr_units") in paths
    assert not any(p[0] == "nvidia" for p in paths)


def test_user_written_constants_are_not_raised():
    src = """
    cpu void scale(int n, main float[n] a) {
      int lanes = cpu.hierarchy.threads.thread.vectors.max_nr_units;
      foreach (int t in (n + lanes - 1) / lanes threads) {
        foreach (int v in lanes vectors) {
          int i = t * lanes + v;
          if (i < n) { a[i] = 2.0 * a[i]; }
        }
      }
    }
    """
    library = default_library()
    module = parse_source(src, hwd_names=set(library.names()))
    f = translate_module(module, "x86_avx512", library).module.functions[0]
    assert f.hwd == "x86_avx512" and hwd_consts(f) == [CPU_LANES]


COUNT_8 = """
perfect void eight(main float[8] a) {
  foreach (int i in 8 threads) { a[i] = a[i] + 1.0; }
}
"""


def test_exact_division_and_guards_are_decided_with_the_bound_finally_used():
    # 8 = 2 x 4 divides cpu's 4 lanes exactly, but not x86_avx512's 16: the count must be
    # rounded up and the body guarded, or 8 / 16 = 0 threads would run.
    library = default_library()
    module = parse_source(COUNT_8, hwd_names=set(library.names()))
    at_cpu = translate_module(module, "cpu", library).module
    at_avx = translate_module(module, "x86_avx512", library).module
    assert not any(isinstance(n, ast.If) for n in ast.walk(at_cpu))
    guards = [n for n in ast.walk(at_avx) if isinstance(n, ast.If)]
    assert len(guards) == 1
    for m in (module, at_cpu, at_avx):
        program = Program(main=m, modules={"main": m})
        assert check_program(program, library) == []
        a = np.arange(8, dtype=np.float32)
        run_function(pipeline.check(program, library), "eight", {"a": a}, library)
        assert np.array_equal(a, np.arange(8, dtype=np.float32) + 1), m.functions[0].hwd


def _chain() -> HandLibrary:
    """flat -> narrow (256 threads) -> same (256, one-to-one) -> wide (1024, one-to-one)
    -> warpy-like split: the most specific bound on flat -> ... -> wide is wide's."""
    return HandLibrary(
        perfect_like("flat"),
        gpu_like("narrow", "flat", threads=256),
        gpu_like("same", "narrow", threads=256),
        gpu_like("wide", "same", threads=1024),
        warps_like("warped", "wide"),
    )


VECTOR = "flat void f(int n, main float[n] x) { foreach (int i in n threads) { x[i] = 1.0; } }"


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("narrow", "narrow"),
        ("same", "narrow"),  # equal bounds: the constant it came from stays
        ("wide", "wide"),  # through the equal step to the larger bound
        ("warped", "wide"),  # wide's threads are split into warps: the chain ends there
    ],
)
def test_the_chain_of_one_to_one_steps_is_followed_to_the_largest_bound(target, expected):
    lib = _chain()
    module = parse_source(VECTOR, hwd_names=set(lib.names()))
    f = translate_module(module, target, lib).module.functions[0]
    consts = hwd_consts(f)
    assert consts[0] == (expected, "hierarchy", "blocks", "block", "threads", "max_nr_units")
