"""How `mcl profile` starts Nsight Compute: the environment the profiled run gets."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from mcl.diagnostics import MclError
from mcl.profile import ncu


def test_the_profiled_run_has_no_launch_gate(tmp_path: Path) -> None:
    # ncu serialises launches; a stream held until cuLaunchKernel returns never ran, and
    # every kernel hung until the timeout (found on an H100)
    seen = tmp_path / "env.txt"
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\nenv > {seen}\nexit 3\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(MclError):
        ncu.profile(str(fake), ["python", "-m", "mcl", "run"], tmp_path / "r.ncu-rep", 30)
    assert "MCL_CUDA_LAUNCH_GATE=0" in seen.read_text().splitlines()


def test_a_timeout_kills_the_profiled_run_too(tmp_path: Path) -> None:
    # ncu's child, the profiled `mcl run`, outlived a killed ncu and held the GPU for
    # every later case
    pid_file = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {pid_file}; wait"
    with pytest.raises(subprocess.TimeoutExpired):
        ncu.run_group(["sh", "-c", script], timeout=1.0)
    child = int(pid_file.read_text())
    for _ in range(50):  # the kernel reaps it shortly after the kill
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().split()[2] != "Z"


@pytest.mark.parametrize("control", ["base", "none"])
def test_the_clock_control_is_passed_to_ncu(tmp_path: Path, control: str) -> None:
    # base (ncu's default) locks the SM clock for every replay; none lets it boost
    seen = tmp_path / "argv.txt"
    fake = tmp_path / "ncu"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do echo "$a"; done > {seen}\nexit 3\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(MclError):
        ncu.profile(str(fake), ["python", "-m", "mcl", "run"], tmp_path / "r.ncu-rep", 30,
                    clock_control=control)
    argv = seen.read_text().splitlines()
    assert argv[argv.index("--clock-control") + 1] == control
    assert argv.index("--clock-control") < argv.index("python")  # an option of ncu's
