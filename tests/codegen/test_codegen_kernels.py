"""Acceptance (issue 7): every shipped kernel, from its perfect version, runs on the PoCL
device from every leaf target and verifies against its numpy reference, on the
reference's default sizes (deliberately not multiples of the split sizes) and on sizes
where every split divides. Hand-refined versions run from the leaves below their level."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends.opencl.runner import OpenCLSession
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .support import LEAVES, kernel_folders, library

# Sizes at which every split of the translated foreach statements divides: the counts
# split into blocks of gpu's 1024 threads (then warps of 32) and into vectors of 16 or 4
# lanes are multiples of 1024. Small otherwise (CI has two cores).
DIVISIBLE = {
    "matmul": {"n": 2, "m": 1024, "p": 3},
    "convolution": {"h": 2, "w": 1024, "fh": 3, "fw": 2},
    "histogram": {"h": 2, "w": 1024},
    "transpose": {"n": 2, "m": 1024},
    "gesummv": {"n": 1024},
    "blackscholes": {"n": 1024},
    "vectoradd": {"n": 2048},
    "spmv": {"nrows": 1024, "ncols": 8, "nnz": 2048},
    "reduction": {"n": 32 * 1024, "chunk": 32},
}


def _divisible(folder: Path, defaults: dict[str, int]) -> dict[str, int]:
    # A kernel added later without an entry: every size above 8 becomes 1024.
    return DIVISIBLE.get(folder.name, {k: 1024 if v > 8 else v for k, v in defaults.items()})


def _check(session: OpenCLSession, ref, sizes: dict[str, int]) -> None:
    sizes, args = make_inputs(ref, sizes, seed=7)
    expected = expected_outputs(ref, args)
    result = session.run(ref.function, args)
    checks = verify(ref, expected, result.outputs, args)
    assert checks and all(c.ok for c in checks), [(c.name, c.note) for c in checks if not c.ok]


@pytest.mark.parametrize("leaf", LEAVES)
@pytest.mark.parametrize("folder", kernel_folders(), ids=lambda p: p.name)
def test_perfect_kernel_runs_and_verifies_from_every_leaf(folder: Path, leaf: str) -> None:
    ref = load_reference(folder / "reference.py")
    program = load_program(folder / "perfect.mcpl", library=library())
    session = OpenCLSession(pipeline.generate(pipeline.checked(program, library()), leaf,
                                              library()))
    _check(session, ref, {})  # the reference's own, non-divisible sizes
    _check(session, ref, _divisible(folder, ref.sizes))


def _refined_versions() -> list[tuple[Path, str]]:
    cases = []
    for folder in kernel_folders():
        for path in sorted(folder.glob("*.mcpl")):
            if path.name == "perfect.mcpl":
                continue
            level = load_program(path, library=library()).main.functions[0].hwd
            cases += [
                (path, leaf)
                for leaf in LEAVES
                if leaf == level or level in library().ancestors(leaf)
            ]
    return cases


@pytest.mark.parametrize(
    ("path", "leaf"),
    _refined_versions(),
    ids=lambda x: x if isinstance(x, str) else f"{x.parent.name}/{x.stem}",
)
def test_refined_versions_run_from_the_leaves_below_them(path: Path, leaf: str) -> None:
    ref = load_reference(path.parent / "reference.py")
    program = load_program(path, library=library())
    checked = pipeline.checked(program, library())
    _check(OpenCLSession(pipeline.generate(checked, leaf, library())), ref, {})


def test_divisible_sizes_name_shipped_kernels() -> None:
    names = {p.name for p in kernel_folders()}
    assert set(DIVISIBLE) <= names, set(DIVISIBLE) - names
    for name, sizes in DIVISIBLE.items():
        assert set(sizes) == set(load_reference(kernels_dir() / name / "reference.py").sizes)
