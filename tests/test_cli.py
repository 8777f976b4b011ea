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


def test_no_command_prints_usage_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("usage: mcl") and "a command is required" in out.err


def test_packaging_metadata_has_one_version() -> None:
    from importlib.metadata import metadata

    meta = metadata("mcl")
    assert meta["Version"] == __version__
    assert any(c.startswith("Topic ::") for c in meta.get_all("Classifier") or [])


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcl", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0
    assert "stepwise" in out.stdout or "hardware descriptions" in out.stdout
