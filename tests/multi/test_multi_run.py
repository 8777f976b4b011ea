"""`mcl run --devices` / `--scheduler` on a real Dask cluster: two worker processes, each
on a share of the CPU through PoCL, run matmul, convolution, histogram and Black-Scholes
split between them and verify the assembled outputs; an unsplittable kernel gets its one
line; a worker killed mid-run ends the run with one error and no output; with more ranges
than devices a slowed worker leaves ranges to the other; rounds keep the inputs on the
workers and their devices."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from mcl.backends import generate_module
from mcl.backends.opencl.runner import describe, list_devices, select_device
from mcl.cli import main
from mcl.diagnostics import MclError
from mcl.multi.cluster import connect, device_slots
from mcl.multi.run import SplitRun, run_split, workers
from mcl.multi.split import split_program
from mcl.multi.worker import forget_kept
from mcl.resources import kernels_dir
from mcl.schemas import load_schema
from mcl.tune.tuned_file import TunedConfig, write_tuned

from .support import CASES, case, library, slow_down


def default_twice() -> str:
    """The default device named twice: two workers sharing the CPU."""
    default = select_device(None)
    index = next(i for i, (_, d) in enumerate(list_devices()) if d.int_ptr == default.int_ptr)
    return f"{index},{index}"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with connect(device_slots(default_twice(), "cpu"), None) as client:
        yield client


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_run_verifies(name: str, cluster: Any, capsys: pytest.CaptureFixture[str]) -> None:
    relative, sizes = CASES[name]
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    argv = ["run", str(kernels_dir() / relative), "--target", "hopper", *defines, "--verify",
            "--scheduler", cluster.scheduler.address, "--format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    jsonschema.validate(document, load_schema("run"))
    assert document["verified"] is True
    devices = document["multi"]["devices"]
    assert len(devices) == 2 and all(d["count"] > 0 for d in devices)
    assert sum(d["count"] for d in devices) == document["multi"]["blocks"]
    assert document["seconds"] == max(d["kernel_s"] for d in devices)
    assert captured.err.count(" done, kernel ") == 2  # progress per device


@pytest.mark.usefixtures("whole_lines")  # reads the error from one line
def test_unsplittable_kernel_gets_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    transpose = kernels_dir() / "transpose" / "perfect.mcpl"
    argv = ["run", str(transpose), "--target", "hopper", "-D", "n=300", "--verify",
            "--devices", default_twice()]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "error: cannot split 'transpose' across devices: 'b[j, i]' of array 'b'" in err
    assert "Traceback" not in err


def test_killed_worker_gives_an_error_and_no_output() -> None:
    program, reference, _, inputs, _, _ = case("blackscholes")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    generated = generate_module(split.program, "hopper", library())
    with connect(device_slots(default_twice(), "cpu"), None) as client:
        pids = client.run(os.getpid)
        killed: list[str] = []

        def tell(line: str) -> None:
            """Kill the first worker as soon as its range is sent, and wait until the
            scheduler knows."""
            if " sent" in line and not killed:
                address = line.split("[", 1)[1].split("]", 1)[0]
                os.kill(pids[address], signal.SIGKILL)
                killed.append(address)
                deadline = time.monotonic() + 30
                while address in workers(client):
                    assert time.monotonic() < deadline
                    time.sleep(0.05)

        with pytest.raises(MclError) as caught:
            run_split(client, SplitRun(split, generated, reference.function, inputs),
                      tell)
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.code == "run-worker-lost"
    assert killed and killed[0] in diagnostic.message, diagnostic.message
    assert "no output was assembled" in diagnostic.message


def test_unlike_devices_are_calibrated(capsys: pytest.CaptureFixture[str]) -> None:
    """The system's PoCL beside the bundled one (scripts/test installs pocl-opencl-icd):
    two device names, so a calibration run sizes the ranges."""
    named: dict[str, int] = {}
    for info, _ in list_devices():
        named.setdefault(info.name, info.index)
    if len(named) < 2:
        pytest.skip("needs two OpenCL devices of different names (pocl-opencl-icd beside "
                    "the bundled PoCL, as scripts/test installs)")
    first, second = list(named.values())[:2]
    relative, sizes = CASES["blackscholes"]
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    argv = ["run", str(kernels_dir() / relative), "--target", "hopper", *defines, "--verify",
            "--devices", f"{first},{second}", "--format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["verified"] is True and document["multi"]["calibrated"] is True
    assert "calibrating:" in captured.err
    speeds = [d["blocks_per_s"] for d in document["multi"]["devices"]]
    assert speeds and all(s is not None and s > 0 for s in speeds)


def test_split_run_uses_the_tuned_constants(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A .tuned.toml entry for the devices' one name changes the tiles; the ranges follow
    (64-row tiles: twice as many blocks) and the output still verifies."""
    kernel = kernels_dir() / "matmul" / "hopper_v1.mcpl"
    shutil.copy(kernel, tmp_path / kernel.name)
    shutil.copy(kernel.with_name("reference.py"), tmp_path / "reference.py")
    copy = tmp_path / kernel.name
    write_tuned(copy, TunedConfig("hopper", describe(select_device(None)), "matmul",
                                  {"n": 300, "m": 70, "p": 21},
                                  {"NR_WARPS": 4, "TILE_I": 64, "TILE_J": 128, "TILE_K": 8},
                                  1.0, {}))
    argv = ["run", str(copy), "--target", "hopper", "-D", "n=300", "-D", "m=70", "-D", "p=21",
            "--verify", "--devices", default_twice(), "--format", "json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "using the tuned constants of hopper_v1.tuned.toml" in captured.err
    document = json.loads(captured.out)
    assert document["verified"] is True
    assert document["multi"]["blocks"] == (300 + 63) // 64


def test_a_slowed_worker_leaves_its_ranges_to_the_other(cluster: Any) -> None:
    """Eight ranges, four first placed on each worker; one worker sleeps before every
    range, so the other runs out first and takes the slowed one's last ranges. The
    assembled outputs still verify. The sleep is long beside a range's own time even on
    a loaded machine (a range took about 1 s there, and 0.3 s of sleep let the slowed
    worker keep up)."""
    from mcl.verify import verify

    program, reference, sizes, inputs, expected, _ = case("blackscholes")
    split = split_program(program, reference.function, "hopper", library(), inputs)
    generated = generate_module(split.program, "hopper", library())
    slow = sorted(workers(cluster))[0]
    cluster.run(slow_down, 1.5, workers=[slow])
    lines: list[str] = []
    try:
        result = run_split(cluster, SplitRun(split, generated, reference.function, inputs,
                                             chunks=4), lines.append)
    finally:
        cluster.run(slow_down, 0, workers=[slow])
    assert all(c.ok for c in verify(reference, expected, result.outputs, sizes))
    ran = {d.worker: d for d in result.devices}
    fast = next(a for a in ran if a != slow)
    assert ran[fast].ranges > ran[slow].ranges, ran
    assert ran[fast].stolen > 0 and ran[slow].stolen == 0
    assert sum(d.ranges for d in result.devices) == 8
    assert sum(d.count for d in result.devices) == split.blocks
    assert sum(" done, kernel " in line for line in lines) == 8  # progress per range


def test_rounds_keep_the_inputs_on_the_workers(cluster: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    relative, sizes = CASES["blackscholes"]
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    argv = ["run", str(kernels_dir() / relative), "--target", "hopper", *defines, "--verify",
            "--scheduler", cluster.scheduler.address, "--rounds", "3", "--chunks", "2",
            "--format", "json"]
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("run"))
    assert document["verified"] is True  # the last round's outputs, from the kept inputs
    multi = document["multi"]
    assert len(multi["rounds"]) == 3 and multi["chunks"] == 2
    assert multi["end_to_end_s"] == multi["rounds"][-1]["end_to_end_s"]
    assert sum(d["ranges"] for d in multi["devices"]) == 4
    # Each worker released what it kept for the rounds at the end of the run.
    assert sum(cluster.run(forget_kept).values()) == 0


def test_a_kept_input_is_copied_to_the_device_once() -> None:
    """OpenCLSession.run with `kept`: the arrays the kernel only reads are copied by the first
    run and not by the next; the written ones by both; the outputs stay right."""
    from mcl import pipeline
    from mcl.backends.opencl.runner import OpenCLSession
    from mcl.verify import verify

    program, reference, sizes, inputs, expected, _ = case("blackscholes")
    checked = pipeline.checked(program, library())
    session = OpenCLSession(generate_module(checked, "hopper", library()))
    copied: list[int] = []
    upload = session._upload

    def counting(buffer: Any, a: Any) -> Any:
        copied.append(a.nbytes)
        return upload(buffer, a)

    session._upload = counting  # type: ignore[method-assign]
    kept: dict[str, Any] = {}
    counts = []
    for _ in range(2):
        copied.clear()
        result = session.run(reference.function, dict(inputs), 1, kept)
        assert all(c.ok for c in verify(reference, expected, result.outputs, sizes))
        counts.append(len(copied))
    plan = session.generated.function(reference.function)
    written = sum(1 for p in plan.params if p.is_array and p.written)
    read_only = sum(1 for p in plan.params if p.is_array and not p.written)
    assert read_only > 0 and sorted(kept) and len(kept) == read_only
    assert counts == [written + read_only, written]


@pytest.mark.parametrize("flag", ["--chunks", "--rounds"])
def test_a_count_below_one_gets_one_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    relative, sizes = CASES["blackscholes"]
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    argv = ["run", str(kernels_dir() / relative), "--target", "hopper", *defines,
            "--devices", default_twice(), flag, "0"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"error: {flag} 0: needs a positive count" in err and "[run-devices-count]" in err
    assert "Traceback" not in err
