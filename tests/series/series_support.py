"""Shared helpers of the series tests: the matmul series, its versions and their tiles."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program
from mcl.report.series import Series, load_series
from mcl.resources import kernels_dir

MATMUL = kernels_dir() / "matmul"

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
    "mic_v1": (4, 64, 1),
    "mic_v2": (4, 64, 1),
    "xeon_phi_v1": (4, 64, 1),
    "xeon_phi_v2": (4, 64, 1),
    "xeon_phi_v3": (4, 64, 16),
    "x86_avx512_v1": (6, 64, 1),
    "x86_avx512_v2": (96, 64, 64),
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


def divisible_sizes(name: str) -> dict[str, int]:
    """The smallest sizes that are multiples of every tile of the version."""
    tn, tm, tp = TILES[name]
    return {"n": tn, "m": tm, "p": tp}


def remainder_sizes(name: str) -> dict[str, int]:
    """Sizes one more than a multiple of every tile (every guard takes its other side),
    kept small for the interpreter."""
    tn, tm, tp = TILES[name]
    return {"n": tn + 1 if tn > 1 else 5, "m": tm + 1 if tm > 1 else 7,
            "p": tp + 1 if tp > 1 else 3}
