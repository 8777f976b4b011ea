"""`mcl profile` end to end without a GPU: a recorded counter file (--counters), and a
stand-in `ncu` (--ncu) that records how it was called and answers as ncu does, for the
way ncu is driven and for its failures (absent, counters not permitted, a failed run)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main
from mcl.schemas import SCHEMA_VERSION, load_schema
from tests.ncu_profile.test_counters import raw_page

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
VECTORADD = str(KERNELS / "vectoradd" / "perfect.mcpl")
N = 1000
COUNTERS = {  # a vector add of 1000 floats: 8000 B read, 4000 B written
    "gpu__time_duration.sum": "3,072", "dram__bytes_read.sum": "8,192",
    "dram__bytes_write.sum": "4,096", "sm__maximum_warps_per_active_cycle_pct": "100",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "n/a",
    "launch__registers_per_thread": "16",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "250",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "64",
    "smsp__sass_inst_executed_op_local_ld.sum": "0",
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "vectoradd.csv"
    path.write_text(raw_page([("vectoradd_k0", COUNTERS)]))
    return path


def test_json_document_from_recorded_counters(recorded: Path, capsys) -> None:
    rc, out, err = run(["profile", VECTORADD, "--target", "hopper", "-D", f"n={N}",
                        "--counters", str(recorded), "--format", "json"], capsys)
    assert rc == 0, err
    document = json.loads(out)
    jsonschema.validate(document, load_schema("profile"))
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["sizes"] == {"n": N}
    figures = {f["kind"]: f for f in document["figures"]}
    assert figures["dram-read"]["predicted"] == 8 * N
    assert figures["dram-read"]["measured"] == 8192
    assert figures["dram-read"]["ok"] is True
    assert figures["dram-write"]["predicted"] == 4 * N
    assert figures["time-bound"]["measured"] == pytest.approx(3.072e-6)
    assert figures["occupancy-achieved"]["measured"] is None  # n/a in the report
    assert document["flags"] == sum(f["ok"] is False for f in figures.values())


def test_text_table(recorded: Path, capsys) -> None:
    rc, out, _ = run(["profile", VECTORADD, "--target", "hopper", "-D", f"n={N}",
                      "--counters", str(recorded)], capsys)
    assert rc == 0
    assert "vectoradd at hopper (n=1000)" in out
    assert "DRAM bytes read" in out and "8.19 kB" in out
    assert "kernels measured: vectoradd_k0" in out
    assert max(len(line) for line in out.splitlines()) <= 80  # readable at 80 columns


SOURCE_PAGE = """"File Path","/home/u/kernels/vectoradd/perfect.mcpl"
"Function Name","vectoradd"
"Line No","Source","Instructions Executed","L1 Tag Requests Global","L2 Theoretical \
Sectors Global","L2 Theoretical Sectors Global Ideal"
"4","<Unable to open source file>","96","10","40","40"
"","      LDG.E R2, desc[UR4][R2.64]","32","10","40","40"
"""


def fake_ncu(tmp_path: Path, answer: str, status: int = 0, report: bool = True) -> Path:
    """An executable that logs its arguments; collecting, it prints `answer` and writes
    the report; importing, it prints the recorded raw page."""
    log = tmp_path / "calls.jsonl"
    page = tmp_path / "page.csv"
    page.write_text(raw_page([("vectoradd_k0", COUNTERS)]))
    source = tmp_path / "source.csv"
    source.write_text(SOURCE_PAGE)
    script = tmp_path / "ncu"
    script.write_text(f"""#!{sys.executable}
import json, sys
argv = sys.argv[1:]
open({str(log)!r}, "a").write(json.dumps(argv) + "\\n")
if "--import" in argv:
    print(open({str(source)!r} if "source" in argv else {str(page)!r}).read())
    sys.exit(0)
print({answer!r})
if {report!r}:
    open(argv[argv.index("--export") + 1], "w").write("report")
sys.exit({status})
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_ncu_wraps_mcl_run_and_its_report_is_read_back(tmp_path: Path, capsys) -> None:
    ncu = fake_ncu(tmp_path, "==PROF== Disconnected")
    saved = tmp_path / "saved.csv"
    rc, out, err = run(["profile", VECTORADD, "--target", "hopper", "-D", f"n={N}",
                        "--ncu", str(ncu), "--format", "json",
                        "--save-counters", str(saved)], capsys)
    assert rc == 0, err
    collect, imported, source = [json.loads(line) for line in (tmp_path / "calls.jsonl")
                                 .read_text().splitlines()]
    run_argv = collect[collect.index(sys.executable):]
    assert run_argv[1:5] == ["-m", "mcl", "run", VECTORADD]
    assert ["--target", "hopper", "--backend", "cuda"] == run_argv[5:9]
    assert "--no-tuned" in run_argv and f"n={N}" in run_argv
    metrics = collect[collect.index("--metrics") + 1].split(",")
    assert "dram__bytes_read.sum" in metrics
    assert imported[:2] == ["--import", collect[collect.index("--export") + 1]]
    assert ["--csv", "--page", "raw", "--print-units", "base"] == imported[2:]
    assert ["--csv", "--page", "source", "--print-source", "cuda,sass"] == source[2:]
    document = json.loads(out)
    assert document["kernels"][0]["name"] == "vectoradd_k0"
    assert "vectoradd_k0" in saved.read_text()
    assert (tmp_path / "saved.source.csv").read_text().strip() == SOURCE_PAGE.strip()
    # the source page's line 4 of perfect.mcpl: 40 sectors where 40 are ideal:
    # coalesced, as the feedback says nothing against it
    [row] = [r for r in document["per_line"] if r["line"] == 4]
    assert (row["kind"], row["measured"], row["ok"]) == ("coalescing", 1.0, True)


def one_line_error(rc: int, err: str, code_words: str) -> None:
    assert rc == 1
    assert "Traceback" not in err
    assert code_words in err


def test_counters_not_permitted(tmp_path: Path, capsys) -> None:
    ncu = fake_ncu(tmp_path, "==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                   "permission to access NVIDIA GPU Performance Counters", status=1,
                   report=False)
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--ncu", str(ncu)],
                     capsys)
    one_line_error(rc, err, "may not read the GPU's performance counters")


@pytest.mark.usefixtures("whole_lines")  # reads the message from one line
def test_a_failed_run_names_its_last_words(tmp_path: Path, capsys) -> None:
    ncu = fake_ncu(tmp_path, "error: the CUDA backend needs a driver", status=1,
                   report=False)
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--ncu", str(ncu)],
                     capsys)
    one_line_error(rc, err, "the profiled run failed (ncu exit status 1): error: the CUDA "
                   "backend needs a driver")


@pytest.mark.usefixtures("whole_lines")  # reads the message from one line
def test_ncu_absent(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--ncu",
                      str(tmp_path / "nothing")], capsys)
    one_line_error(rc, err, "no executable file there")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("mcl.profile.ncu.TOOLKIT_PLACES", ())
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper"], capsys)
    one_line_error(rc, err, "Nsight Compute (`ncu`) was not found on PATH")


def test_unknown_leaf_and_bad_counter_file(tmp_path: Path, capsys) -> None:
    rc, _, err = run(["profile", VECTORADD, "--target", "nowhere", "--counters", "x"],
                     capsys)
    assert rc == 1 and "Traceback" not in err
    empty = tmp_path / "empty.csv"
    empty.write_text("==PROF== No kernels were profiled.\n")
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--counters", str(empty)],
                     capsys)
    one_line_error(rc, err, "no table of metrics")
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--counters",
                      str(tmp_path / "missing.csv")], capsys)
    one_line_error(rc, err, "--counters")


def test_checked_before_anything_runs(tmp_path: Path, capsys) -> None:
    ncu = fake_ncu(tmp_path, "==PROF== Disconnected")
    rc, _, err = run(["profile", VECTORADD, "--target", "x86_avx512", "--ncu", str(ncu)],
                     capsys)
    one_line_error(rc, err, "has no CUDA mapping")
    rc, _, err = run(["profile", VECTORADD, "--target", "hopper", "--ncu", str(ncu),
                      "--save-counters", str(tmp_path / "missing" / "x.csv")], capsys)
    one_line_error(rc, err, "its folder does not exist")
    assert not (tmp_path / "calls.jsonl").exists()  # ncu never ran


def test_a_series_folder(tmp_path: Path, capsys) -> None:
    """gesummv's hopper versions against one recorded report each (the same report for
    every version here: a gain of exactly 1)."""
    recorded = tmp_path / "counters"
    recorded.mkdir()
    data = Path(__file__).parent / "data"
    versions = sorted((KERNELS / "gesummv").glob("hopper_v*.mcpl"))
    assert len(versions) >= 4
    for version in range(1, len(versions) + 1):
        for suffix in (".csv", ".source.csv"):
            (recorded / f"gesummv-hopper_v{version}{suffix}").write_text(
                (data / f"gesummv-hopper_v1{suffix}").read_text())
    rc, out, err = run(["profile", str(KERNELS / "gesummv"), "--target", "hopper",
                        "--counters", str(recorded), "--format", "json"], capsys)
    assert rc == 0, err
    document = json.loads(out)
    jsonschema.validate(document, load_schema("profile-series"))
    names = [f"hopper_v{v}" for v in range(1, len(versions) + 1)]
    assert [Path(v["file"]).name for v in document["versions"]] == [
        f"{name}.mcpl" for name in names]
    for version in document["versions"]:
        jsonschema.validate(version, load_schema("profile"))
    assert [s["step"] for s in document["steps"]] == [
        f"{old} -> {new}" for old, new in zip(names, names[1:], strict=False)]
    assert all(s["measured_gain"] == 1.0 for s in document["steps"])
    assert all(s["suggestions"] is not None for s in document["steps"])
    rc, _, err = run(["profile", str(KERNELS / "vectoradd"), "--target", "hopper",
                      "--counters", str(recorded)], capsys)
    one_line_error(rc, err, "a series needs two or more versions")
