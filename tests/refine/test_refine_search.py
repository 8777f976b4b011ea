"""`mcl refine`: the search finds a verified faster version, starts from the kernel's
translation to the leaf (the constants' tune comments kept), expands no version twice,
writes a series that `mcl report` reads back as Table II, follows its JSON schema, times
versions on the PoCL CPU device with --measure, and refuses a bad target or folder with
one `error:` line."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import mcl.refine.search as search_module
from mcl.cli import main
from mcl.commands.refine_series import series_rows, with_change_line
from mcl.feedback.analyses.timemodel import MIN_GAIN
from mcl.hdl.library import default_library
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.search import Measured, SearchLimits, SearchResult, Version, search
from mcl.refine.search_start import carry_constant_comments, search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.report import load_series
from mcl.resources import kernels_dir
from mcl.schemas import load_schema

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SIZES = ["-D", "n=8192", "-D", "m=8192"]


def _copy(app: str, *names: str, to: Path) -> Path:
    for name in (*names, "reference.py"):
        shutil.copy(kernels_dir() / app / name, to / name)
    return to / names[0]


@pytest.fixture
def transpose(tmp_path: Path) -> Path:
    """gpu_v1 of the transpose (a tile in `local` memory at the generic gpu) with its
    reference, in a folder of its own."""
    return _copy("transpose", "gpu_v1.mcpl", to=tmp_path)


def test_the_search_finds_a_verified_faster_version_and_writes_the_series(
        transpose: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "refined"
    assert main(["refine", str(transpose), "--target", "hopper", *SIZES, "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "gpu_v1.mcpl, transpose refined for hopper (translated from gpu)" in captured.out
    assert "hopper_v2: pad-shared:array=tile,pad=1,banks=32:" in captured.out
    assert "verified against reference.py (the numpy reference) at n=19 m=31;" in captured.out
    assert "1 refinement, estimated 1.8" in captured.out
    assert "mcl refine: step 1:" in captured.err  # progress as it searches

    # The series read back: rows in order, the first version said to be the translation,
    # each refined row with its invocation, gain and verification.
    series = load_series(out)
    assert series.names() == ["gpu_v1", "hopper_v1", "hopper_v2"]
    assert series.versions[1].change.startswith("(auto-translate from gpu")
    assert series.versions[2].change.startswith("pad-shared:array=tile,pad=1,banks=32:")
    toml = tomllib.loads((out / "series.toml").read_text())
    refined = toml["version"][2]
    assert refined["refinement"] == "pad-shared:array=tile,pad=1,banks=32"
    assert refined["estimated_gain"] == pytest.approx(1.80, abs=0.01)
    assert refined["estimated_seconds"] < toml["version"][1]["estimated_seconds"]
    assert refined["verified"].startswith("against reference.py")
    # pad-shared, and name-counts (neutral) of the first and of the second version, past
    # which the look ahead finds nothing faster
    assert toml["search"]["target"] == "hopper" and toml["search"]["candidates"] == 3
    assert len(toml["search"]["step_s"]) == 2  # the step that found pad-shared, the last
    assert "TILE + 1" in (out / "hopper_v2.mcpl").read_text()
    assert (out / "hopper_v1.mcpl").read_text().startswith("// change: (auto-translate")
    assert (out / "reference.py").is_file()

    # ... and `mcl report` shows it as Table II.
    assert main(["report", str(out), "--format", "markdown", *SIZES]) == 0
    table = capsys.readouterr().out
    assert "| hopper_v2 | hopper | pad-shared:array=tile,pad=1,banks=32:" in table


def test_the_json_follows_its_schema(transpose: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["refine", str(transpose), "--target", "hopper", *SIZES,
                 "--format", "json", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # --quiet: no progress beside the document
    document = json.loads(captured.out)
    jsonschema.validate(document, load_schema("refine"))
    assert document["translated_from"] == "gpu" and document["written"] == []
    assert len(document["step_seconds"]) == 2
    first, refined = document["series"][1:]
    assert refined["refinement"] == "pad-shared:array=tile,pad=1,banks=32"
    assert refined["estimated_seconds"] < first["estimated_seconds"]
    assert refined["measured_seconds"] is None


@pytest.mark.slow  # about 20 s alone: two steps of four constants, each verified
def test_a_named_constant_is_searched_step_by_step_and_no_version_twice() -> None:
    library = default_library()
    start = search_start(kernels_dir() / "matmul" / "hopper_v1.mcpl", "hopper", library)
    assert start.translated_from is None
    result = search(start.kernel, SearchLimits(steps=2, beam=2))
    texts = [v.text for v in result.reached]
    assert len(texts) == len(set(texts))
    chain = result.series
    assert [v.step for v in chain] == list(range(len(chain))) and len(chain) == 3
    assert all(v.invocation.startswith("set-constant:") for v in chain[1:])
    assert all(v.verification is not None and v.verification.ok for v in chain[1:])
    assert chain[-1].seconds is not None and start.kernel.model_seconds is not None
    assert chain[-1].seconds < start.kernel.model_seconds / 1.03 ** 2
    assert result.steps_run == 2 and result.stopped == "2 steps done"


def test_the_translation_keeps_the_constants_tune_comments() -> None:
    start = search_start(kernels_dir() / "reduction" / "gpu_v1.mcpl", "hopper",
                         default_library())
    assert start.translated_from == "gpu"
    assert "// tune: 64, 128, 256, 512, 1024\nconst int BLOCK = 256;" in start.kernel.text
    assert start.kernel.text.split("hopper void reduction", 1)[0].count("const int") == 1
    assert carry_constant_comments("// a\nconst int N = 1;\n", "const int M = 2;\n") == \
        "const int M = 2;\n"


def test_a_change_line_replaces_the_one_there() -> None:
    assert with_change_line("// change: old\nx\n", "new") == "// change: new\nx\n"
    assert with_change_line("// a comment\nx\n", "new") == "// change: new\n// a comment\nx\n"


@pytest.mark.parametrize("pad_speed, kept", [(0.5, 2), (1.0, 1)])
def test_measured_times_rank_and_decide_the_steps(transpose: Path, pad_speed: float,
                                                  kept: int) -> None:
    """A (fake) device that times the padded tile twice as fast keeps it, with its
    measured gain; one that times it as fast as the start stops the search, whatever
    the model estimates."""
    start = search_start(transpose, "hopper", default_library(), values={"n": 8192,
                                                                           "m": 8192})

    def timer(kernel: KernelAtLevel) -> Measured:
        return Measured(1e-3 * (pad_speed if "TILE + 1" in kernel.text else 1.0), "fake")

    result = search(start.kernel, SearchLimits(steps=2, beam=1), timer)
    assert len(result.series) == kept
    if kept == 2:
        assert result.series[1].measured_gain == pytest.approx(2.0)
        assert result.series[1].estimated_gain == pytest.approx(1.80, abs=0.01)
    else:
        assert result.stopped == "no candidate is faster than the best version by 3%"
        assert result.reached[1].measured_seconds == pytest.approx(1e-3)


def test_a_version_an_offer_made_is_not_loaded_again(transpose: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The offer carries its next version checked at the level; ranking, timing and
    expanding it use that one, so the search loads and analyses no text twice."""
    start = search_start(transpose, "hopper", default_library(), values={"n": 8192,
                                                                           "m": 8192})
    loads: list[str | None] = []
    real = search_module.load_kernel

    def counted(*args: Any, **kwargs: Any) -> KernelAtLevel:
        loads.append(kwargs.get("text"))
        return real(*args, **kwargs)

    monkeypatch.setattr(search_module, "load_kernel", counted)
    result = search(start.kernel, SearchLimits(steps=2, beam=1),
                    lambda kernel: Measured(1e-3 * (0.5 if "TILE + 1" in kernel.text
                                                    else 1.0), "fake"))
    padded = result.series[1]
    assert padded.offer is not None and padded.kernel is padded.offer.kernel
    assert padded.measured_gain == pytest.approx(2.0)
    assert loads == []


def test_a_version_verified_against_the_reference_is_not_run_on_its_cases_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Expanding a version whose offer passed the reference's cases verifies its own
    offers on those cases without preparing them again (the original's runs at three
    sizes), and still at three sizes, in the interpreter and on the device: spmv's
    name-counts version, expanded in the same step for the row-per-warp it enables."""
    start = search_start(kernels_dir() / "spmv" / "perfect.mcpl", "hopper",
                         default_library(),
                         values={"nrows": 20000, "ncols": 20000, "nnz": 400000})
    prepared: list[str] = []
    real = Verifier._prepare

    def counted(self: Verifier) -> None:
        prepared.append(self.kernel.text)
        real(self)

    monkeypatch.setattr(Verifier, "_prepare", counted)
    result = search(start.kernel, SearchLimits(steps=1, beam=1),
                    lambda kernel: Measured(1e-3, "fake"))
    named = next(v for v in result.reached if v.invocation == "name-counts")
    later = [v for v in result.reached if v.parent is named]
    assert any(v.invocation.startswith("row-per-warp") for v in later)
    assert prepared == [start.kernel.text]
    for version in later:
        assert version.verification is not None and version.verification.ok
        assert len(version.verification.checks) == SIZES_WANTED
        assert version.verification.runs_on.startswith("the interpreter and OpenCL on")


def test_the_input_row_never_takes_a_version_name() -> None:
    start = Version(0, "hopper void f() {}\n", 0, None, None, 1e-6)
    result = SearchResult(start, start, [start], 0, "no refinement applies", 0.1)
    rows = series_rows(result, Path("k/hopper_v1.mcpl"), "perfect void f() {}\n", "perfect",
                       "hopper")
    assert [r.name for r in rows] == ["input", "hopper_v1"]
    rows = series_rows(result, Path("k/perfect.mcpl"), "", "perfect", "hopper")
    assert [r.name for r in rows] == ["perfect", "hopper_v1"]


def test_the_time_budget_stops_the_search(transpose: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["refine", str(transpose), "--target", "hopper", "--budget", "1e-9"]) == 0
    out = capsys.readouterr().out
    assert "0 refinements" in out and "stopped: the time budget is spent" in out


@pytest.mark.parametrize("argv, code", [
    (["--target", "hoper"], "translate-unknown-level"),
    (["--target", "gpu"], "refine-not-leaf"),
    (["--target", "x86_avx512"], "apply-level"),
    (["--target", "hopper", "--steps", "0"], "refine-usage"),
    (["--target", "hopper", "--backend", "cuda"], "refine-usage"),
])
def test_a_refused_target_or_option_is_one_error_line(
        transpose: Path, argv: list[str], code: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["refine", str(transpose), *argv]) == 1
    err = capsys.readouterr().err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1
    assert f"[{code}]" in err


def test_the_series_is_not_written_into_a_folder_with_files(
        transpose: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["refine", str(transpose), "--target", "hopper", "-o",
                 str(transpose.parent)]) == 1
    assert "[refine-exists]" in capsys.readouterr().err


def test_measure_times_the_versions_on_the_pocl_cpu_device(
        transpose: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyopencl")
    assert main(["refine", str(transpose), "--target", "hopper", "--measure",
                 "--repeat", "2", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, load_schema("refine"))
    assert "Portable Computing Language" in document["measured_on"]
    first = document["series"][1]
    assert first["measured_seconds"] > 0
    # Whether pad-shared pays on a CPU is the device's to say: a search that kept
    # refinements ends measured faster than its start by MIN_GAIN (a step the model calls
    # neutral may be slower on its own, when the step after it gains), and a search that
    # kept none stopped because none was faster.
    if len(document["series"]) > 2:
        last = document["series"][-1]["measured_seconds"]
        assert first["measured_seconds"] / last >= MIN_GAIN
    else:
        assert document["stopped"].startswith("no candidate is faster")
