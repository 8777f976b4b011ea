"""`--format json` documents of `mcl hwd list` / `mcl hwd show` (issue 19): valid against
the schemas shipped inside the package, with `schema_version`."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main
from mcl.hdl.library import load_library
from mcl.schemas import SCHEMA_VERSION, load_schema
from tests.hdl.broken import MINI, write


def document(argv: list[str], capsys: pytest.CaptureFixture[str], rc: int = 0) -> dict:
    assert main(argv) == rc
    out = capsys.readouterr()
    assert out.err == ""  # diagnostics go into the document, not beside it
    return json.loads(out.out)


def test_the_schemas_are_valid_and_shipped() -> None:
    for name in ("diagnostic", "hwd-list", "hwd-show", "translate", "report", "run",
                 "refine"):
        jsonschema.Draft202012Validator.check_schema(load_schema(name))


def test_hwd_list(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(["hwd", "list", "--format", "json"], capsys)
    jsonschema.validate(doc, load_schema("hwd-list"))
    assert doc["schema_version"] == SCHEMA_VERSION
    lib = load_library(use_env=False)
    assert [d["name"] for d in doc["descriptions"]] == lib.names()
    leaves = {d["name"] for d in doc["descriptions"] if d["leaf"]}
    assert leaves == set(lib.leaves())


def test_hwd_list_reports_what_did_not_load(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, MINI.replace("48 kB", "48 KB"))
    doc = document(["hwd", "list", "--format", "json", "--hwd-path", str(tmp_path)], capsys,
                   rc=1)
    jsonschema.validate(doc, load_schema("hwd-list"))
    [failed] = doc["failed"]
    assert failed["name"] == "mini"
    assert failed["diagnostics"][0]["code"] == "hdl-unknown-unit"
    assert failed["diagnostics"][0]["file"] == str(tmp_path / "mini.hdl")


@pytest.mark.parametrize("name", ["perfect", "gpu", "fermi", "hopper", "xeon_phi",
                                  "x86_avx512"])
def test_hwd_show(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(["hwd", "show", name, "--format", "json"], capsys)
    jsonschema.validate(doc, load_schema("hwd-show"))
    hwd = load_library(use_env=False).get(name)
    assert doc["name"] == name and doc["parent"] == hwd.parent
    assert [g["name"] for g in doc["par_groups"]] == [g.name for g in hwd.par_groups()]


def test_hwd_show_numbers(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(["hwd", "show", "fermi", "--format", "json"], capsys)
    groups = {g["name"]: g for g in doc["par_groups"]}
    assert groups["blocks"]["count"] == 65535 and not groups["blocks"]["exact"]
    caches = [m for m in doc["memories"] if m["kind"] == "cache"]
    assert caches and all(m["line_size"] for m in caches)
    perfect = document(["hwd", "show", "perfect", "--format", "json"], capsys)
    assert perfect["par_groups"][0]["count"] is None  # unlimited


def test_translate(capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.resources import kernels_dir

    kernel = str(kernels_dir() / "matmul" / "perfect.mcpl")
    doc = document(["translate", kernel, "--to", "gpu", "--format", "json"], capsys)
    jsonschema.validate(doc, load_schema("translate"))
    assert doc["level"] == "gpu" and doc["mcpl"].startswith("gpu void matmul(")
    assert main(["translate", kernel, "--to", "gpu"]) == 0
    assert capsys.readouterr().out == doc["mcpl"]


def test_report(capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.resources import kernels_dir

    # 256 x 256 threads: more than the 16,384 gpu keeps resident, so the several-elements
    # advice is among the codes
    doc = document(["report", str(kernels_dir() / "matmul"), "--versions", "gpu_v1,gpu_v2",
                    "-D", "n=256", "-D", "m=256", "-D", "p=256", "--format", "json"], capsys)
    jsonschema.validate(doc, load_schema("report"))
    assert doc["values"] == {"n": 256, "m": 256, "p": 256}
    row, after = doc["rows"]
    assert row["name"] == "gpu_v1" and row["level"] == "gpu" and not row["translated"]
    assert "elements-several-per-unit" in row["codes"] and row["performance"] is None
    assert row["unchanged"] == []  # the first row shown has nothing to compare with
    # gpu_v2 leaves the operation counts as they were: named on the "(unchanged)" line
    assert after["feedback"][-1].startswith("(unchanged) #computational instructions")
    assert after["unchanged"][0].startswith("#computational instructions: 2*m*n*p (= 33,554,432)")


def test_report_with_a_run(capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.resources import kernels_dir

    doc = document(["report", str(kernels_dir() / "matmul"), "--versions", "perfect", "--run",
                    "--repeat", "1", "-D", "n=33", "-D", "m=33", "-D", "p=33",
                    "--format", "json", "--quiet"], capsys)  # no progress on stderr
    jsonschema.validate(doc, load_schema("report"))
    measured = [r["performance"] for r in doc["rows"] if r["performance"]]
    assert [m["leaf"] for m in measured] == ["x86_avx512"]  # the PoCL CPU device
    assert measured[0]["verified"] is True and measured[0]["seconds"] > 0
    reached = measured[0]["roofline"]  # issue 17: from the run's own time
    assert reached["level"] == "x86_avx512"
    assert reached["fraction"] == pytest.approx(reached["least_seconds"] / measured[0]["seconds"])


def test_report_run_shows_a_bar_on_a_terminal_and_lines_elsewhere(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress on stderr (mcl.progress): plain lines when piped, beside a JSON document
    that stays whole on stdout; a bar on a terminal; none with --quiet."""
    import io

    from rich.console import Console

    from mcl import progress
    from mcl.resources import kernels_dir

    argv = ["report", str(kernels_dir() / "matmul"), "--versions", "perfect", "--run",
            "--repeat", "1", "-D", "n=17", "-D", "m=17", "-D", "p=17", "--format", "json"]
    assert main(argv) == 0
    piped = capsys.readouterr()
    assert json.loads(piped.out)
    assert piped.err.startswith("mcl report: running perfect (")
    document([*argv, "--quiet"], capsys)  # nothing on stderr (checked by `document`)
    terminal = io.StringIO()
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    monkeypatch.setattr(progress, "Console", lambda **_: Console(
        file=terminal, force_terminal=True, width=80))
    assert main(argv) == 0
    assert "running perfect" in terminal.getvalue()
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("how", [["--interp"], ["--target", "x86_avx512", "--verify"],
                                 ["--target", "x86_avx512"]])
def test_run(how: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.resources import kernels_dir

    kernel = str(kernels_dir() / "matmul" / "perfect.mcpl")
    assert main(["run", kernel, *how, "-D", "n=9", "-D", "m=7", "-D", "p=5",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(doc, load_schema("run"))
    assert doc["sizes"] == {"n": 9, "m": 7, "p": 5} and doc["function"] == "matmul"
    if "--verify" in how or "--interp" in how:
        assert doc["verified"] is True and [o["name"] for o in doc["outputs"]] == ["c"]
        assert doc["outputs"][0]["shape"] == [9, 7]
    else:
        assert doc["verified"] is None and doc["outputs"] == []
    assert (doc["executor"] == "opencl") == ("--target" in how)
    assert (doc["roofline"] is not None) == ("--target" in how)


def test_run_reports_the_fraction_of_the_roof(capsys: pytest.CaptureFixture[str]) -> None:
    """issue 17: vectoradd moves 12 bytes per element at x86_avx512's 33 GB/s; the fraction
    is that least time over the run's own median kernel time."""
    from mcl.resources import kernels_dir

    n = 100_000
    kernel = str(kernels_dir() / "vectoradd" / "perfect.mcpl")
    assert main(["run", kernel, "--target", "x86_avx512", "--repeat", "3", "-D", f"n={n}",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    reached = doc["roofline"]
    assert reached["bound"] == "main"
    assert reached["least_seconds"] == pytest.approx(12 * n / 33e9)
    assert reached["fraction"] == pytest.approx(12 * n / 33e9 / doc["seconds"])
    assert main(["run", kernel, "--target", "x86_avx512", "-D", f"n={n}"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # rich wraps at the terminal width
    assert "reached " in text and "of the attainable 2.75 GFLOP/s" in text
    assert "bound by main memory bandwidth" in text


def test_run_json_reports_a_wrong_result(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from mcl.resources import kernels_dir

    source = (kernels_dir() / "matmul" / "perfect.mcpl").read_text()
    kernel = tmp_path / "perfect.mcpl"
    kernel.write_text(source.replace("c[i, j] = sum;", "c[i, j] = sum + 1.0;"))
    ref = str(kernels_dir() / "matmul" / "reference.py")
    assert main(["run", str(kernel), "--interp", "--reference", ref, "-D", "n=4", "-D", "m=4",
                 "-D", "p=4", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verified"] is False and doc["outputs"][0]["mismatches"] == 16
