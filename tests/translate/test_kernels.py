"""Every shipped kernel, translated to every level below it: the result checks clean,
round-trips through the printer and parser, and — in the reference interpreter — computes
exactly what the untranslated kernel computes, which matches the numpy reference. Sizes
include primes (13, 37) that divide none of the split counts, and sizes that do."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcl import pipeline
from mcl.diagnostics import Severity
from mcl.hdl.library import HwdLibrary, default_library
from mcl.interp import run_function
from mcl.mcpl import ast
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import Program, load_program
from mcl.mcpl.parse import parse_file, parse_source
from mcl.mcpl.printer import print_module
from mcl.resources import kernels_dir
from mcl.translate import TranslationResult, lineage, translate_module, translate_program
from mcl.verify import expected_outputs, load_reference, make_inputs, verify


@cache
def library() -> HwdLibrary:
    return default_library()


def levels_below(level: str) -> list[str]:
    lib = library()
    return [n for n in lib.names() if n != level and level in lineage(lib, n)]


PERFECT_KERNELS = sorted(p.parent.name for p in kernels_dir().glob("*/perfect.mcpl"))
LEVELS = levels_below("perfect")
REDUCTION_GPU = kernels_dir() / "reduction" / "gpu_v1.mcpl"


def refined_versions() -> list[tuple[Path, str]]:
    """(file, level below it) for every hand-refined kernel version (gpu_v1.mcpl, ...)."""
    pairs = []
    for path in sorted(kernels_dir().glob("*/*.mcpl")):
        if path.name != "perfect.mcpl":
            level = parse_file(path).functions[-1].hwd
            pairs += [(path, below) for below in levels_below(level)]
    return pairs

# Sizes where the innermost (split) count is a multiple of every split size (gpu's 1024
# threads per block, 32 threads per warp, 16 or 4 vector lanes), with more than one block.
DIVIDING = {
    "matmul": {"n": 2, "m": 2048, "p": 3},
    "convolution": {"h": 2, "w": 2048, "fh": 3, "fw": 2},
    "histogram": {"h": 2, "w": 2048},
    "gesummv": {"n": 64},  # n is also its loop length: 1024 would be slow in the interpreter
    "blackscholes": {"n": 2048},
    "spmv": {"nrows": 2048, "ncols": 16, "nnz": 4096},
    "vectoradd": {"n": 2048},
    "transpose": {"n": 2, "m": 2048},
    "reduction": {"n": 4096, "chunk": 2},
}
# Sizes that should not be the prime: more than one chunk; small filters (the interpreter
# runs fh * fw loop iterations per element).
PRIME_OVERRIDES = {"reduction": {"chunk": 5}, "convolution": {"fh": 3, "fw": 2}}


def size_cases(app: str) -> dict[str, dict[str, int]]:
    names = load_reference(kernels_dir() / app / "reference.py").sizes
    cases = {
        f"all{p}": {**{n: p for n in names}, **PRIME_OVERRIDES.get(app, {})} for p in (13, 37)
    }
    # A new kernel without an entry still gets a size that divides warps and vectors.
    cases["dividing"] = DIVIDING.get(app, {n: 64 for n in names})
    return cases


@cache
def loaded(path: Path) -> Program:
    return load_program(path, library=library())


@cache
def translated(path: Path, level: str) -> TranslationResult:
    return translate_program(loaded(path), level, library())


@cache
def run(path: Path, level: str | None, case: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """Outputs of the kernel in `path` (translated to `level` unless None) on inputs made by
    its folder's reference for the sizes `case`."""
    ref = load_reference(path.parent / "reference.py")
    _, args = make_inputs(ref, dict(case), seed=1)
    program = loaded(path) if level is None else translated(path, level).program
    results = run_function(pipeline.check(program, library()), ref.function, args, library())
    return {name: np.array(results[name]) for name in ref.outputs}


def errors_and_warnings(program: Program) -> tuple[list[str], list[str]]:
    diags = check_program(program, library())
    errors = [str(d) for d in diags if d.severity == Severity.ERROR]
    warnings = [d.message for d in diags if d.severity == Severity.WARNING]
    return errors, warnings


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("app", PERFECT_KERNELS)
def test_perfect_kernel_translates_to_a_clean_program(app: str, level: str):
    path = kernels_dir() / app / "perfect.mcpl"
    result = translated(path, level)
    module = result.module
    assert all(f.hwd == level for f in module.functions)
    assert result.notes == ()
    errors, warnings = errors_and_warnings(result.program)
    assert errors == []
    assert warnings == errors_and_warnings(loaded(path))[1]
    # Valid MCPL text: printing and parsing again gives the same tree.
    assert parse_source(print_module(module), file=str(path)) == module


def test_all_nine_levels_below_perfect_are_covered():
    assert sorted(LEVELS) == sorted(
        ["accelerator", "gpu", "nvidia", "fermi", "hopper", "mic", "xeon_phi", "cpu", "x86_avx512"]
    )


@pytest.mark.parametrize("app", PERFECT_KERNELS)
def test_translations_compute_what_the_perfect_kernel_computes(app: str):
    path = kernels_dir() / app / "perfect.mcpl"
    ref = load_reference(path.parent / "reference.py")
    for case_name, sizes in size_cases(app).items():
        case = tuple(sorted(sizes.items()))
        original = run(path, None, case)
        _, args = make_inputs(ref, sizes, seed=1)
        expected = expected_outputs(ref, args)
        for check in verify(ref, expected, original, args):
            assert check.ok, f"{app} {case_name}: perfect differs from numpy: {check.note}"
        for level in LEVELS:
            got = run(path, level, case)
            for name in ref.outputs:
                # Same operations in the same order per element: bit-for-bit equal.
                assert np.array_equal(got[name], original[name]), (
                    f"{app} at {level}, sizes {sizes}: output {name} differs from perfect"
                )


def _id(value: object) -> str:
    return f"{value.parent.name}/{value.name}" if isinstance(value, Path) else str(value)


# reduction's gpu_v1 runs blocks of 256 threads in lock-step in the interpreter, at every
# size case: 8-22 s per level, so it runs in the slow tier.
SLOW_REFINED = {"reduction/gpu_v1.mcpl"}


def _refined_cases() -> list:
    return [pytest.param(path, level, marks=pytest.mark.slow) if _id(path) in SLOW_REFINED
            else (path, level) for path, level in refined_versions()]


@pytest.mark.parametrize(("path", "level"), _refined_cases(), ids=_id)
def test_refined_versions_translate_and_compute_what_they_computed(path: Path, level: str):
    result = translated(path, level)
    errors, warnings = errors_and_warnings(result.program)
    assert errors == [] and warnings == errors_and_warnings(loaded(path))[1]
    assert parse_source(print_module(result.module), file=str(path)) == result.module
    ref = load_reference(path.parent / "reference.py")
    for sizes in size_cases(path.parent.name).values():
        case = tuple(sorted(sizes.items()))
        original, got = run(path, None, case), run(path, level, case)
        for name in ref.outputs:
            assert np.array_equal(got[name], original[name]), f"{level} {sizes}: {name} differs"


REDUCTION_CASES = [  # blocks of BLOCK = 256 threads, whatever the chunk
    {"n": 100, "chunk": 37},  # chunks shorter than a block: most threads add nothing
    {"n": 13, "chunk": 13},
    {"n": 1000, "chunk": 300},  # a chunk longer than a block: some threads add two
    {"n": 3000, "chunk": 1500},  # chunks past gpu's 1024 threads per block
]


@pytest.mark.parametrize("level", ["nvidia", "fermi", "hopper"])
def test_gpu_block_reduction_with_barriers_still_computes_the_sums(level: str):
    result = translated(REDUCTION_GPU, level)
    assert check_program(result.program, library()) == []
    ref = load_reference(REDUCTION_GPU.parent / "reference.py")
    for sizes in REDUCTION_CASES:
        case = tuple(sorted(sizes.items()))
        got = run(REDUCTION_GPU, level, case)["partial"]
        _, args = make_inputs(ref, sizes, seed=1)
        (check,) = verify(ref, expected_outputs(ref, args), {"partial": got}, args)
        assert check.ok, f"{level} {sizes}: {check.note}"
        # The tree of additions is unchanged by the translation.
        assert np.array_equal(got, run(REDUCTION_GPU, None, case)["partial"])


def test_the_reduction_keeps_its_barriers_outside_the_guards_at_fermi(tmp_path: Path):
    """A block of 100 threads is 4 warps, the last one partly guarded (the shipped BLOCK,
    256, is a whole number of warps and needs no guards)."""
    folder = tmp_path / "reduction"
    folder.mkdir()
    (folder / "reference.py").write_text((REDUCTION_GPU.parent / "reference.py").read_text())
    block100 = folder / "gpu_v1.mcpl"
    block100.write_text(REDUCTION_GPU.read_text().replace("BLOCK = 256;", "BLOCK = 100;"))
    f = translated(block100, "fermi").module.functions[0]
    guards = [n for n in ast.walk(f) if isinstance(n, ast.If) and n.cond == _guard("t", "BLOCK")]
    assert len(guards) == 3  # before the first barrier, inside the loop, after the loop
    assert not any(isinstance(n, ast.Barrier) for g in guards for n in ast.walk(g))
    assert [n.space for n in ast.walk(f) if isinstance(n, ast.Barrier)] == ["shared", "shared"]
    ref = load_reference(folder / "reference.py")
    for sizes in ({"n": 450, "chunk": 150}, {"n": 20, "chunk": 7}):
        got = run(block100, "fermi", tuple(sorted(sizes.items())))
        _, args = make_inputs(ref, sizes, seed=1)
        assert all(c.ok for c in verify(ref, expected_outputs(ref, args), got, args))


def _guard(index: str, count: str) -> ast.Expr:
    return ast.Binary("<", ast.Name(index), ast.Name(count))


@pytest.mark.parametrize(("middle", "target"), [("gpu", "fermi"), ("mic", "xeon_phi")])
@pytest.mark.parametrize("app", PERFECT_KERNELS)
def test_translating_the_printed_intermediate_gives_the_same_program(app, middle, target):
    """Stepwise refinement: `mcl translate --to gpu`, save, `mcl translate --to fermi` of
    that file equals translating straight to fermi."""
    path = kernels_dir() / app / "perfect.mcpl"
    printed = print_module(translated(path, middle).module)
    reparsed = parse_source(printed, file=str(path))
    again = translate_module(reparsed, target, library()).module
    assert again == translated(path, target).module
