"""The shipped kernels written at CPU leaves, generated as C with OpenMP and run against
their numpy references (as `mcl run --backend openmp --verify`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from openmp_support import cpu_versions, verify_kernel

# Sizes that divide no tile of the kernels, a size below one tile, and larger ones.
UNEVEN = {"matmul": {"n": 100, "m": 77, "p": 130}, "gesummv": {"n": 100},
          "convolution": {"h": 37, "w": 101}, "histogram": {"h": 37, "w": 101},
          "blackscholes": {"n": 1001}, "spmv": {"nrows": 301, "ncols": 77, "nnz": 1003}}
LARGER = {"matmul": {"n": 300, "m": 260, "p": 270}, "gesummv": {"n": 1000},
          "convolution": {"h": 300, "w": 500}, "histogram": {"h": 300, "w": 500},
          "blackscholes": {"n": 100_003},
          "spmv": {"nrows": 5003, "ncols": 4001, "nnz": 60_001}}


def _id(case: tuple[Path, str]) -> str:
    return f"{case[0].parent.name}/{case[0].stem}"


@pytest.mark.parametrize("case", cpu_versions(), ids=_id)
def test_every_cpu_version_matches_its_reference(case: tuple[Path, str]) -> None:
    path, leaf = case
    checks = verify_kernel(path, leaf)
    assert checks and all(c.ok for c in checks), [str(c) for c in checks]


@pytest.mark.slow
@pytest.mark.parametrize("sizes", [UNEVEN, LARGER], ids=["uneven", "larger"])
@pytest.mark.parametrize("case", cpu_versions(), ids=_id)
def test_every_cpu_version_at_other_sizes(case: tuple[Path, str],
                                          sizes: dict[str, dict[str, int]]) -> None:
    path, leaf = case
    checks = verify_kernel(path, leaf, sizes[path.parent.name])
    assert checks and all(c.ok for c in checks), [str(c) for c in checks]
