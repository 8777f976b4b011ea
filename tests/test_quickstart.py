"""The README's quickstart (issue 19): exactly two commands, one running the demo and one
running the whole suite through `scripts/test`, the same command CI runs. Running them on
a fresh clone is done by hand (the issue's closing note); these tests keep the texts from
drifting apart."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the quickstart has a ```sh block"
    return [line.split("#", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_quickstart_is_two_commands_demo_and_test_script() -> None:
    commands = quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith("mcl demo")
    assert commands[1] == "./scripts/test"


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^exec \./scripts/test\b", ci, re.M)
    assert os.access(ROOT / "scripts" / "test", os.X_OK)
    assert os.access(ROOT / ".ci" / "run", os.X_OK)


def test_test_script_names_missing_system_packages(tmp_path: Path) -> None:
    # A copy that also needs a package no machine has: it must name it and stop.
    script = (ROOT / "scripts" / "test").read_text(encoding="utf-8")
    script = script.replace("SYSTEM_PACKAGES=(", "SYSTEM_PACKAGES=(no-such-package-mcl ", 1)
    (tmp_path / "scripts").mkdir()
    copy = tmp_path / "scripts" / "test"
    copy.write_text(script)
    env = {**os.environ, "MCL_NO_APT": "1"}  # as root it would install instead of naming
    out = subprocess.run(
        ["bash", str(copy)], capture_output=True, text=True, env=env, check=False
    )
    assert out.returncode == 1
    assert "missing system packages: no-such-package-mcl" in out.stderr
