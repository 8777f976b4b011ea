"""`mcl tune --parallel` on a real Dask cluster of two PoCL workers sharing the CPU: the
workers pull the configurations of the planted space of tests/tune and together find
what the one-device search finds, with the same counts and one .tuned.toml entry; no
worker process outlives the command."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

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
    done = [line for line in captured.err.splitlines() if "configurations run in" in line
            or "configuration run in" in line]
    # Brute force: each worker makes one Kernel Tuner call and pulls configurations from
    # one queue, so each reports once and together they ran every allowed one once.
    assert len({line.split("[", 1)[1].split("]", 1)[0] for line in done}) == len(done) == 2
    assert sum(int(line.split("done, ", 1)[1].split()[0]) for line in done) == 3
    # Each phase is timed, so a user sees what more workers cannot shorten.
    assert "3 configurations generated, 5 ruled out, at" in captured.err
    assert "2 worker(s) ready at" in captured.err
    assert "search done at" in captured.err
    # The result is printed before the cluster closes, and the workers are gone after.
    assert captured.err.index("search done at") < captured.err.index("cluster closed at")
    assert "best: PASSES = 1, NR_WARPS = 1, STRIDE = 1" in captured.out
    assert not _workers_alive()
    (entry,) = read_tuned(planted)
    assert entry.constants == {"PASSES": 1, "NR_WARPS": 1, "STRIDE": 1}


def _workers_alive() -> list[Any]:
    """This process's worker processes (`python -m mcl.multi.worker`) still running."""
    import psutil

    return [p for p in psutil.Process().children(recursive=True)
            if "mcl.multi.worker" in " ".join(p.cmdline())]


def test_a_worker_that_cannot_start_is_one_error_line_and_leaves_nothing() -> None:
    from mcl.diagnostics import MclError
    from mcl.multi.cluster import DeviceSlot, connect

    with pytest.raises(MclError) as raised, connect([DeviceSlot("none", {"MCL_DEVICE": "97:97"})],
                                                    None):
        pass
    message = raised.value.diagnostics[0].message
    assert "the Dask worker of none ended before it joined" in message
    assert "no OpenCL device matches '97:97'" in message and "\n" not in message
    assert not _workers_alive()


def test_a_kernel_error_while_the_workers_start_leaves_no_worker(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The workers start before the kernel is checked; an error in the kernel is the
    same one line as without --parallel, and the starting workers are ended."""
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    plain = tmp_path / "plain.mcpl"
    plain.write_text(PLANTED.replace("// tune:", "// values:"), encoding="utf-8")
    argv = ["tune", str(plain), "--target", "hopper", *SIZES, "--parallel", "--devices",
            default_twice(), "--no-cache"]
    assert main(argv) == 1
    assert "plain.mcpl:1:1: error: plain.mcpl names no values to try" in capsys.readouterr().err
    assert not _workers_alive()
