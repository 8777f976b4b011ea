"""Oclgrind on every shipped kernel and every version of every series, from every leaf,
at the reference sizes and at tile-multiple sizes, with its out-of-bounds and data-race
checks (issue 20; docs/reliability.md). Any report fails the case.

Oclgrind's uninitialised-value check (`--uninitialized`) is not used: with Debian's LLVM
it aborts on most kernels with "Unsupported instruction: freeze" (an Oclgrind limitation).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from oclgrind_cases import OCLGRIND_OPTIONS, cases

pytestmark = pytest.mark.oclgrind
HERE = Path(__file__).resolve().parent
CASES = cases()


def _batch(selected: list[dict], options: list[str], folder: Path, tag: str) -> subprocess.Popen:
    wanted, results = folder / f"{tag}-cases.json", folder / f"{tag}-results.json"
    wanted.write_text(json.dumps(selected))
    return subprocess.Popen(
        ["oclgrind", *options, sys.executable, str(HERE / "oclgrind_cases.py"), str(wanted),
         str(results)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def results() -> dict[str, dict]:
    if shutil.which("oclgrind") is None:
        pytest.fail("oclgrind is not installed: `apt-get install oclgrind` (.ci/run does)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # The two batches run side by side (two processes; Oclgrind also uses threads).
        running = {verify: _batch([c for c in CASES if c["verify"] == verify], options,
                                  folder, str(verify))
                   for verify, options in OCLGRIND_OPTIONS.items()}
        found: dict[str, dict] = {}
        for verify, process in running.items():
            output, _ = process.communicate(timeout=3600)
            path = folder / f"{verify}-results.json"
            assert process.returncode == 0 and path.exists(), output[-3000:]
            found.update({r["id"]: r for r in json.loads(path.read_text())})
    return found


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_oclgrind_reports_nothing(results: dict[str, dict], case: dict) -> None:
    r = results[case["id"]]
    assert r["oclgrind"].strip() == "", f"{r['command']}\n{r['oclgrind'][:4000]}"
    assert r["status"] == 0, f"{r['command']}\n{r['output']}"


def test_every_kernel_version_is_covered() -> None:
    """New kernel folders and series versions are picked up by the glob."""
    from oclgrind_cases import KERNELS

    files = {str(p) for p in KERNELS.glob("*/*.mcpl")}
    assert files == {c["file"] for c in CASES}
