"""`mcl run` at scale (issue 12): memory estimated before anything is allocated, the steps
apart from the kernel timed and reported, a spinner only for steps past a second."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from mcl.cli import main
from mcl.diagnostics import MclError
from mcl.footprint import HOST_FACTOR, array_bytes, check_footprint
from mcl.mcpl.loader import load_program
from mcl.progress import Timings
from mcl.resources import kernels_dir


def _function(app: str):
    return load_program(kernels_dir() / app / "perfect.mcpl").main.functions[0]


def test_array_bytes_follow_the_declared_shapes() -> None:
    assert array_bytes(_function("reduction"), {"n": 1000, "chunk": 37}) == \
        {"partial": 4 * 28, "x": 4 * 1000}
    spmv = array_bytes(_function("spmv"), {"nrows": 10, "ncols": 7, "nnz": 30})
    assert spmv == {"y": 40, "rowptr": 44, "cols": 120, "vals": 120, "x": 28}


def test_a_run_too_large_for_the_host_or_device_is_an_error_with_figures() -> None:
    gesummv = _function("gesummv")
    arrays = 2 * 4 * 1000**2 + 2 * 4 * 1000
    assert sum(check_footprint(gesummv, {"n": 1000}, available=HOST_FACTOR * arrays)
               .values()) == arrays
    with pytest.raises(MclError) as exc:
        check_footprint(gesummv, {"n": 1000}, available=HOST_FACTOR * arrays - 1)
    d = exc.value.diagnostics[0]
    assert d.code == "run-memory" and "a 3.8 MiB" in d.message and "-D" in (d.hint or "")
    small = SimpleNamespace(global_mem_size=arrays - 1, max_mem_alloc_size=arrays,
                            name="tiny", platform=SimpleNamespace(name="test"))
    with pytest.raises(MclError, match="needs 7.6 MiB of device buffers"):
        check_footprint(gesummv, {"n": 1000}, small, available=10 * arrays)
    narrow = SimpleNamespace(global_mem_size=arrays, max_mem_alloc_size=4 * 1000**2 - 1,
                             name="tiny", platform=SimpleNamespace(name="test"))
    with pytest.raises(MclError, match="array 'a' .* allocates at most"):
        check_footprint(gesummv, {"n": 1000}, narrow, available=10 * arrays)


def test_the_device_check_names_the_device_as_its_backend_describes_it() -> None:
    """The run's backend describes its device in the message: the OpenMP backend's host
    CPU has none of the OpenCL device's `name` and `platform`."""
    from mcl.backends import get_backend

    openmp = get_backend("openmp")
    host = openmp.select_device(None)
    gesummv = _function("gesummv")
    with pytest.raises(MclError) as caught:
        check_footprint(gesummv, {"n": 10**6}, host, available=2**80, backend="openmp")
    assert f"; {openmp.describe(host)} has " in caught.value.diagnostics[0].message


def test_mcl_run_refuses_a_size_the_host_cannot_hold(capsys: pytest.CaptureFixture) -> None:
    path = str(kernels_dir() / "gesummv" / "perfect.mcpl")
    assert main(["run", path, "--target", "fermi", "-D", "n=1000000", "--verify"]) == 1
    err = capsys.readouterr().err
    assert "[run-memory]" in err and "GiB" in err and "Traceback" not in err


def test_mcl_run_reports_the_steps_apart_from_the_kernel(capsys: pytest.CaptureFixture) -> None:
    path = str(kernels_dir() / "vectoradd" / "perfect.mcpl")
    assert main(["run", path, "--target", "fermi", "-D", "n=100000", "--verify"]) == 0
    words = " ".join(capsys.readouterr().out.split())  # the line wraps at the terminal width
    line = words[words.index("apart from the kernel:"):]
    for step in ("inputs", "reference", "build", "device compile", "to device", "from device"):
        assert step in line
    assert main(["run", path, "--target", "fermi", "-D", "n=1000", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["timings"]) == {"inputs", "build", "device compile", "to device",
                                   "from device"}  # no reference
    assert all(v >= 0 for v in doc["timings"].values())


def test_the_spinner_shows_only_for_slow_steps() -> None:
    console = Console(force_terminal=True, width=80, record=True)
    timings = Timings()
    with timings.step("quick", "quick step", console, delay=0.5):
        pass
    assert "quick step" not in console.export_text()
    with timings.step("slow", "slow step", console, delay=0.05):
        time.sleep(0.4)
    assert "slow step" in console.export_text()
    assert list(timings) == ["quick", "slow"] and timings["slow"] >= 0.4
    assert "slow" in timings.text() and "ms" in timings.text()


def test_the_device_compile_is_its_own_step_and_cached_the_second_time(
    capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PoCL compiles a kernel at its first launch: a step of its own, not hidden in the
    kernel's run; the second run of the same kernel finds it in PoCL's cache."""
    path = str(kernels_dir() / "vectoradd" / "perfect.mcpl")
    for _ in range(2):
        assert main(["run", path, "--target", "fermi", "-D", "n=1000"]) == 0
        words = " ".join(capsys.readouterr().out.split())
    assert "· device compile (cached) " in words


def test_pocl_cache_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcl.backends.opencl.pocl_cache import compiled_kernels

    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "none"))
    assert compiled_kernels() is None
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    assert compiled_kernels() == frozenset()
    so = tmp_path / "AC" / "HASH" / "k" / "4-1-1-goffs0-smallgrid" / "k.so"
    so.parent.mkdir(parents=True)
    so.write_bytes(b"")
    assert compiled_kernels() == {str(so)}


def test_timings_notes_show_in_the_text_not_the_names() -> None:
    timings = Timings()
    timings["device compile"] = 0.028
    timings.notes["device compile"] = "cached"
    assert timings.text() == "device compile (cached) 28 ms" and list(timings) == [
        "device compile"]
