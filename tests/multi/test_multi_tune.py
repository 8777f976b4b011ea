"""`mcl tune --parallel` on a real Dask cluster of two PoCL workers sharing the CPU: the
workers take batches of the planted space of tests/tune and together find what the
one-device search finds, with the same counts and one .tuned.toml entry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir
from mcl.tune.tuned_file import read_tuned
from tests.tune.test_tune import PLANTED, SIZES

from .test_multi_run import default_twice

pytest.importorskip("kernel_tuner")


def test_parallel_tune_finds_the_planted_best(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    planted = tmp_path / "planted.mcpl"
    planted.write_text(PLANTED, encoding="utf-8")
    argv = ["tune", str(planted), "--target", "hopper", *SIZES, "--iterations", "3",
            "--parallel", "--devices", default_twice(), "--no-cache"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "8 configurations, 5 ruled out, 3 run, 1 with wrong outputs" in captured.out
    done = [line for line in captured.err.splitlines() if "batch done" in line]
    assert len(done) == 3  # brute force: a batch of one per allowed configuration here
    assert len({line.split("[", 1)[1].split("]", 1)[0] for line in done}) == 2  # both ran
    # Each phase is timed, so a user sees what more workers cannot shorten.
    assert "3 configurations generated, 5 ruled out, at" in captured.err
    assert "2 worker(s) ready at" in captured.err
    assert all(" s; " in line and "run in " in line for line in done)
    assert "search done at" in captured.err
    (entry,) = read_tuned(planted)
    assert entry.constants == {"PASSES": 1, "NR_WARPS": 1, "STRIDE": 1}
