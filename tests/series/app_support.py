"""Shared helpers of the tests of the application series of issue 13 (gesummv and
Black-Scholes; paper section 7, Table III): their versions, tiles and feedback."""

from __future__ import annotations

from functools import cache
from typing import Any

from mcl import pipeline
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.feedback.registry import analyse
from mcl.mcpl.loader import load_program
from mcl.report.headline import array_of
from mcl.report.series import Series, load_series
from mcl.resources import kernels_dir
from mcl.translate import translate_program

from .series_support import library

APPS = ("gesummv", "blackscholes")

# The tile of each hand-written version along its one size n (rows of y for gesummv,
# options for Black-Scholes): a multiple of it takes no remainder path.
TILES: dict[str, dict[str, int]] = {
    "gesummv": {
        "perfect": 1, "gpu_v1": 512, "nvidia_v1": 256, "fermi_v1": 256, "hopper_v1": 256,
        "hopper_v2": 256, "hopper_v3": 1024, "hopper_v4": 1024, "hopper_v5": 1024,
        "mic_v1": 64, "xeon_phi_v1": 32, "x86_avx512_v1": 32,
    },
    "blackscholes": {
        "perfect": 1, "gpu_v1": 1024, "hopper_v1": 1024, "hopper_v2": 2048, "mic_v1": 256,
        "xeon_phi_v1": 256, "x86_avx512_v1": 256, "x86_avx512_v2": 16,
    },
}

# The sizes at which the feedback is asserted: the paper's (gesummv 4096, Black-Scholes
# 4 * 10^6 options).
FEEDBACK_SIZES = {"gesummv": {"n": 4096}, "blackscholes": {"n": 4_000_000}}

# A prime that divides no tile, small enough for the interpreter.
SMALL_PRIME = 37


@cache
def series(app: str) -> Series:
    return load_series(kernels_dir() / app, library())


def hand_written(app: str) -> list[str]:
    return [v.name for v in series(app).versions if not v.translated]


@cache
def program(app: str, name: str) -> Any:
    spec = series(app).version(name)
    assert spec is not None and spec.path is not None, (app, name)
    return load_program(spec.path, (), library())


@cache
def at_level(app: str, name: str, level: str | None = None) -> Any:
    prog = program(app, name)
    return prog if level is None else translate_program(prog, level, library()).program


@cache
def feedback(app: str, name: str, level: str | None = None) -> tuple[Message, ...]:
    """The feedback on version `name` at its own level, or translated to `level` (the
    paper's "(auto-translate)" rows)."""
    prog = at_level(app, name, level)
    function = prog.main.function(app)
    checked = pipeline.check(prog, library())
    return tuple(analyse(function, checked, library().get(function.hwd), FEEDBACK_SIZES[app]))


def codes(messages: tuple[Message, ...], severity: FeedbackSeverity | None = None) -> set[str]:
    return {m.code for m in messages if severity is None or m.severity == severity}


def about(app: str, messages: tuple[Message, ...], code: str, array: str, prog: Any
          ) -> list[Message]:
    return [m for m in messages if m.code == code and array_of(m, prog) == array]


def remainder_size(app: str, name: str) -> int:
    """Two whole tiles and a partial one (for the OpenCL runs)."""
    tile = TILES[app][name]
    return SMALL_PRIME if tile == 1 else 2 * tile + SMALL_PRIME % tile
