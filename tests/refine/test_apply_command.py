"""`mcl apply`: the list with estimated gains, applying one refinement (the diff, the
next version written, never over a file without --force), JSON that follows its schema,
and errors as one `file:line:col: error:` line."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main
from mcl.commands.apply import next_name
from mcl.resources import kernels_dir
from mcl.schemas import load_schema

SIZES = ["-D", "n=8192", "-D", "m=8192"]


@pytest.fixture
def transpose(tmp_path: Path) -> Path:
    """gpu_v1 of the transpose with its reference, in a folder of its own."""
    for name in ("gpu_v1.mcpl", "reference.py"):
        shutil.copy(kernels_dir() / "transpose" / name, tmp_path / name)
    return tmp_path / "gpu_v1.mcpl"


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_the_list_names_the_refinement_its_gain_and_both_times(
        transpose: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(transpose), "--level", "hopper", *SIZES]) == 0
    out = capsys.readouterr().out
    assert "gpu_v1.mcpl, transpose at hopper: 1 refinement apply" in out
    assert re.search(r"pad-shared:array=tile,pad=1,banks=32  \(line 29\)  estimated gain "
                     r"1\.8\dx: 3\d\d µs \(gpu_v1\.mcpl\) -> 2\d\d µs \(next version\)", out), out
    assert "answers bank-conflict: load of tile[jj][ii]" in out
    assert "verified against reference.py (the numpy reference) at n=19 m=31;" in out
    # unroll is applied by name only: the model has no term for a loop's overhead
    assert "unroll" not in out


def test_applying_writes_the_next_version_and_prints_the_diff(
        transpose: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(transpose), "--level", "hopper", "bank-conflict@53", *SIZES]) == 0
    out = capsys.readouterr().out
    assert "-      local float[TILE][TILE] tile;\n+      local float[TILE][TILE + 1] tile;" in out
    written = transpose.with_name("gpu_v2.mcpl")
    assert f"wrote {written}" in out
    assert written.read_text() == transpose.read_text().replace(
        "local float[TILE][TILE] tile;", "local float[TILE][TILE + 1] tile;")
    # never over an existing file without --force
    assert main(["apply", str(transpose), "--level", "hopper", "pad-shared:tile"]) == 1
    assert f"{written}:1:1: error: {written} exists" in capsys.readouterr().err
    other = transpose.with_name("other.mcpl")
    other.write_text("keep")
    assert main(["apply", str(transpose), "--level", "hopper", "pad-shared:tile", "-o",
                 str(other), "--force"]) == 0
    assert "TILE + 1" in other.read_text()


def test_a_refused_refinement_is_one_error_line_at_its_place(
        transpose: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(transpose), "--level", "hopper", "hoist-load:line=53"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{transpose}:53:1: error: hoist-load:line=53: tile[jj][ii] reads "
                          "ii, jj, which for-loop r changes [apply-refused]\n")
    assert not transpose.with_name("gpu_v2.mcpl").exists()


def test_the_json_follows_its_schema(transpose: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(transpose), "--level", "hopper", "--format", "json",
                 *SIZES]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("apply"))
    (offer,) = document["offers"]
    assert offer["refinement"] == "pad-shared" and offer["answers"] == "bank-conflict"
    assert offer["estimated_gain"] == pytest.approx(1.80, abs=0.01)
    assert main(["apply", str(transpose), "--level", "hopper", "--format", "json",
                 "pad-shared:tile", "-o", str(transpose.with_name("next.mcpl"))]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("apply"))
    assert document["written"].endswith("next.mcpl")


def test_the_help_names_the_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["apply", "--help"])
    out = capsys.readouterr().out
    assert "CODE@LINE|NAME[:ARGS]" in out and "--force" in out and "--list" in out


def test_a_level_above_the_kernel_is_refused(transpose: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["apply", str(transpose), "--level", "perfect"]) == 1
    assert "[apply-level]" in capsys.readouterr().err


def test_the_next_name_raises_the_version() -> None:
    assert next_name(Path("k/hopper_v1.mcpl")) == Path("k/hopper_v2.mcpl")
    assert next_name(Path("k/perfect.mcpl")) == Path("k/perfect_v1.mcpl")
