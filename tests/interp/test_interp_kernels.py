"""Every shipped kernel, run by the interpreter, equals its numpy reference — on the
reference's default sizes and on prime sizes that divide nothing."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from interp_helpers import library

from mcl import pipeline
from mcl.interp import run_function
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

KERNELS = sorted(kernels_dir().glob("*/*.mcpl"))

# Sizes with primes such as 13 and 37 (kept small where the work grows fast).
PRIME_SIZES: dict[str, list[dict[str, int]]] = {
    "matmul": [{"n": 13, "m": 37, "p": 5}, {"n": 1, "m": 1, "p": 1}],
    "convolution": [{"h": 13, "w": 7, "fh": 3, "fw": 3}, {"h": 5, "w": 13, "fh": 1, "fw": 7}],
    "histogram": [{"h": 13, "w": 37}],
    "gesummv": [{"n": 13}, {"n": 37}],
    "blackscholes": [{"n": 37}],
    "spmv": [{"nrows": 37, "ncols": 13, "nnz": 101}, {"nrows": 13, "ncols": 5, "nnz": 0}],
    "vectoradd": [{"n": 13}, {"n": 37}],
    "reduction": [{"n": 13 * 37, "chunk": 13}, {"n": 100, "chunk": 37}],
    "transpose": [{"n": 13, "m": 37}],
}


def _cases() -> list[tuple[Path, dict[str, int]]]:
    cases = []
    for path in KERNELS:
        cases.append((path, {}))
        cases += [(path, sizes) for sizes in PRIME_SIZES[path.parent.name]]
    return cases


def test_every_application_has_prime_sizes() -> None:
    assert {p.parent.name for p in KERNELS} <= set(PRIME_SIZES)


@pytest.mark.parametrize(
    ("path", "sizes"),
    _cases(),
    ids=lambda v: (
        f"{v.parent.name}/{v.stem}"
        if isinstance(v, Path)
        else ",".join(f"{k}={x}" for k, x in v.items()) or "defaults"
    ),
)
def test_kernel_matches_reference(path: Path, sizes: dict[str, int]) -> None:
    ref = load_reference(path.parent / "reference.py")
    program = load_program(path, (), library())
    _, args = make_inputs(ref, sizes, seed=11)
    expected = expected_outputs(ref, args)
    results = run_function(pipeline.check(program, library()), ref.function, args, library())
    checks = verify(ref, expected, results, args)
    assert all(c.ok for c in checks), checks


def test_a_wrong_kernel_fails_verification(tmp_path: Path) -> None:
    """The comparison can fail: an off-by-one matmul does not match."""
    source = (kernels_dir() / "matmul" / "perfect.mcpl").read_text()
    wrong = tmp_path / "perfect.mcpl"
    wrong.write_text(source.replace("k < p", "k < p - 1"))
    ref = load_reference(kernels_dir() / "matmul" / "reference.py")
    _, args = make_inputs(ref, {}, seed=0)
    expected = expected_outputs(ref, args)
    results = run_function(pipeline.check(load_program(wrong, (), library()), library()),
                           "matmul", args, library())
    (check,) = verify(ref, expected, results, args)
    assert not check.ok and check.mismatches > 0 and check.max_abs > 1e-3


def test_matmul_16_cubed_is_fast() -> None:
    """The interpreter compiles to closures; matmul n=m=p=16 at perfect takes a few ms
    (measured ~5-10 ms); the bound leaves room for a slow, shared machine."""
    program = load_program(kernels_dir() / "matmul" / "perfect.mcpl", (), library())
    rng = np.random.default_rng(0)
    args = {
        "n": 16,
        "m": 16,
        "p": 16,
        "c": np.zeros((16, 16), dtype=np.float32),
        "a": rng.random((16, 16), dtype=np.float32),
        "b": rng.random((16, 16), dtype=np.float32),
    }
    start = time.perf_counter()
    run_function(pipeline.check(program, library()), "matmul", args, library())
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(args["c"], args["a"] @ args["b"], rtol=1e-5)
    assert elapsed < 0.5
