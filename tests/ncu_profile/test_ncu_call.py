"""How `mcl profile` starts Nsight Compute: the environment the profiled run gets."""

from __future__ import annotations

import stat
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
