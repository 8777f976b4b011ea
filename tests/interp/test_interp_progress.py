"""A long interpreter run says so before it is done: the outermost foreach reports its
units (mcl.interp.progress), and `mcl run --interp` turns the rate so far into an estimate
with a hint to use smaller sizes."""

from __future__ import annotations

import pytest

import mcl.commands.run as run_command
from mcl import pipeline
from mcl.cli import main
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.interp.progress import listening
from mcl.mcpl.loader import load_program
from mcl.resources import kernels_dir

PERFECT = str(kernels_dir() / "matmul" / "perfect.mcpl")


def test_the_outermost_foreach_reports_every_unit() -> None:
    import numpy as np

    seen: list[tuple[int, int]] = []
    n, m, p = 5, 3, 2
    args = {"n": n, "m": m, "p": p, "c": np.zeros((n, m), np.float32),
            "a": np.ones((n, p), np.float32), "b": np.ones((p, m), np.float32)}
    with listening(lambda done, total: seen.append((done, total))):
        run_function(pipeline.check(load_program(PERFECT), default_library()), "matmul", args)
    assert seen == [(i, n) for i in range(1, n + 1)]  # one call per unit of foreach i
    assert (args["c"] == p).all()


def test_run_announces_a_long_run_with_an_estimate_and_a_hint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every run counts as long here: the estimate is taken after the first unit.
    monkeypatch.setattr(run_command, "ESTIMATE_AFTER_S", 0.0)
    monkeypatch.setattr(run_command, "LONG_RUN_S", 0.0)
    assert main(["run", PERFECT, "--interp", "-D", "n=6", "-D", "m=5", "-D", "p=4"]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "at n=6 m=5 p=4 this run will take about" in err
    assert "(1 of 6 units in" in err and "e.g. -D n=64" in err


def test_a_short_run_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", PERFECT, "--interp", "-D", "n=6", "-D", "m=5", "-D", "p=4"]) == 0
    assert capsys.readouterr().err == ""
