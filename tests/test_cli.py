"""The `mcl` entry point: version, help, and no tracebacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcl import __version__
from mcl.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "usage: mcl" in capsys.readouterr().out


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcl", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0
    assert "stepwise" in out.stdout or "hardware descriptions" in out.stdout
