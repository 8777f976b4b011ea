"""Shared helpers of the series tests: the matmul series, its versions and their tiles, and
the benchmark scripts as modules."""

from __future__ import annotations

import importlib.util
import sys
import types
from functools import cache
from pathlib import Path
from typing import Any

from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.report.series import Series, load_series
from mcl.resources import kernels_dir

MATMUL = kernels_dir() / "matmul"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# The tiles of each hand-written version along n, m and p: a size that is a multiple of
# all of them takes no remainder path; the tests also use sizes that divide none.
TILES: dict[str, tuple[int, int, int]] = {
    "perfect": (1, 1, 1),
    "gpu_v1": (1, 256, 256),
    "gpu_v2": (4, 256, 256),
    "gpu_v3": (4, 256, 256),
    "nvidia_v1": (4, 256, 256),
    "fermi_v1": (8, 256, 256),
    "hopper_v1": (128, 128, 8),
    "hopper_v2": (128, 128, 8),
    "hopper_v3": (128, 64, 16),
    "hopper_v4": (128, 128, 8),
    "mic_v1": (4, 64, 1),
    "mic_v2": (4, 64, 1),
    "xeon_phi_v1": (4, 64, 1),
    "xeon_phi_v2": (4, 64, 1),
    "xeon_phi_v3": (4, 64, 16),
    "x86_avx512_v1": (6, 64, 1),
    "x86_avx512_v2": (96, 64, 64),
    "x86_avx512_v3": (96, 128, 128),
    "x86_avx512_v4": (96, 64, 128),
    "x86_avx512_v5": (192, 512, 256),
}


def library() -> Any:
    return default_library()


@cache
def series() -> Series:
    return load_series(MATMUL, library())


def hand_written() -> list[str]:
    return [v.name for v in series().versions if not v.translated]


def path_of(name: str) -> Path:
    spec = series().version(name)
    assert spec is not None and spec.path is not None, name
    return spec.path


@cache
def program(name: str) -> Any:
    return load_program(path_of(name), (), library())


def level_of(name: str) -> str:
    return program(name).main.function("matmul").hwd


def divisible_sizes(name: str, tiles: int = 1) -> dict[str, int]:
    """Sizes of `tiles` whole tiles of the version in every dimension: no remainder path."""
    tn, tm, tp = TILES[name]
    return {"n": tiles * tn, "m": tiles * tm, "p": tiles * tp}


# Primes that divide no tile: every guard of a version takes its other side. Small, for
# the interpreter (smaller than the big tiles: one partial tile in those dimensions).
SMALL_REMAINDER = {"n": 13, "m": 37, "p": 11}


def remainder_sizes(name: str) -> dict[str, int]:
    """For the OpenCL runs: two whole tiles and a partial one in every tiled dimension."""
    out = {}
    for (size, prime), tile in zip(SMALL_REMAINDER.items(), TILES[name], strict=True):
        out[size] = prime if tile == 1 else 2 * tile + (prime % tile or 1)
    return out


def benchmark_script(name: str) -> types.ModuleType:
    """benchmarks/NAME.py as a module, loaded once (registered in sys.modules: dataclasses
    look their module up there)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
