"""`mcl check`: rendering, summary, exit status, JSON, -I, --hwd-path and --level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from check_support import BROKEN, REPO, TEST_HWDS

from mcl.cli import main
from mcl.commands import check as check_command
from mcl.feedback import stage as feedback_stage
from mcl.feedback.stage import FeedbackOptions, FileFeedback

# These tests read messages and rows whole, one to a line.
pytestmark = pytest.mark.usefixtures("whole_lines")

MATMUL = REPO / "kernels" / "matmul" / "perfect.mcpl"


real_feedback_options = check_command.feedback_options


@pytest.fixture(autouse=True)
def only_checking(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about checking: performance feedback is off."""
    monkeypatch.setattr(check_command, "feedback_options", lambda args: None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_kernel_exits_0_with_a_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, str(MATMUL))
    assert code == 0
    assert out.strip() == "perfect.mcpl: 0 errors, 0 warnings"
    assert err == ""


def test_errors_show_position_source_line_marker_and_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, str(BROKEN / "barriers.mcpl"))
    assert code == 1
    assert out.strip() == "barriers.mcpl: 4 errors, 0 warnings"
    lines = err.splitlines()
    head = next(i for i, line in enumerate(lines) if ":11:15: error: unknown memory space" in line)
    assert lines[head].startswith(str(BROKEN / "barriers.mcpl"))
    assert lines[head].endswith("[mcpl-unknown-space]")
    assert lines[head + 1] == "   11 |       barrier(locl);"
    # The marker sits under `locl` (column 15) and is as long as the name.
    assert lines[head + 2] == "      |               ^~~~"
    assert lines[head + 3].strip() == "= hint: did you mean 'local'?"


def test_long_source_lines_are_not_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(BROKEN / "names.mcpl"))
    assert code == 1
    assert (
        "   10 | perfect void names(int n, main float[n] a, mian float[n] b, "
        "main Pixel[n] img) {" in err.splitlines()
    )


def test_several_files_get_one_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, str(MATMUL), str(BROKEN / "returns.mcpl"))
    assert code == 1
    assert out.strip() == "2 files checked: 3 errors, 0 warnings"


def test_warnings_alone_exit_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "warn.mcpl"
    path.write_text(
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    float unused;\n    a[i] = 0.0;\n  }\n}\n"
    )
    code, out, err = run(capsys, str(path))
    assert code == 0
    assert out.strip() == "warn.mcpl: 0 errors, 1 warning"
    assert "warning: variable 'unused' is declared but never used" in err


def test_json_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--format", "json", str(BROKEN / "returns.mcpl"), str(MATMUL))
    assert code == 1
    assert err == ""
    doc = json.loads(out)
    first, second = doc["files"]
    assert (first["errors"], first["warnings"], second["errors"]) == (3, 0, 0)
    d = first["diagnostics"][0]
    assert (d["line"], d["column"], d["severity"], d["code"]) == (3, 3, "error", "mcpl-return")
    assert d["message"] == "'half' returns float, so return needs a value"
    assert doc["summary"] == "2 files checked: 3 errors, 0 warnings"


def test_syntax_and_io_errors_are_diagnostics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.mcpl"
    bad.write_text("perfect void k(int n) {\n  foreach (int i in n threads) {\n}\n")
    code, out, err = run(capsys, str(bad), str(tmp_path / "missing.mcpl"))
    assert code == 1
    assert "[mcpl-syntax]" in err and "[mcpl-io]" in err
    assert out.strip() == "2 files checked: 2 errors, 0 warnings"


def test_include_dirs_add_source_roots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "libs"
    (root / "util").mkdir(parents=True)
    (root / "util" / "scale.mcpl").write_text(
        "package util;\nmodule scale;\nimport perfect;\n"
        "perfect float twice(float x) {\n  return 2.0 * x;\n}\n"
    )
    main_file = tmp_path / "app" / "k.mcpl"
    main_file.parent.mkdir()
    main_file.write_text(
        "import util.scale;\nperfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    a[i] = twice(a[i]);\n  }\n}\n"
    )
    code, _, err = run(capsys, str(main_file))
    assert code == 1 and "module util.scale not found" in err
    code, out, _ = run(capsys, "-I", str(root), str(main_file))
    assert code == 0, out


def test_hwd_path_adds_descriptions(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, str(BROKEN / "spaces.mcpl"))
    assert code == 1 and "unknown hardware description 'bare'" in err
    code, out, err = run(capsys, "--hwd-path", str(TEST_HWDS), str(BROKEN / "spaces.mcpl"))
    assert code == 1
    assert out.strip() == "spaces.mcpl: 3 errors, 0 warnings"
    assert "'a' is an array, so it needs a memory space" in err


def test_level_checks_the_translation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--level", "gpu", str(MATMUL))
    assert code == 0, err
    assert out.strip() == "perfect.mcpl: 0 errors, 0 warnings"
    code, _, err = run(capsys, "--level", "gpuu", str(MATMUL))
    assert code == 1
    assert "unknown level 'gpuu'" in err and "did you mean 'gpu'?" in err


def test_level_checks_the_source_first(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--level", "gpu", str(BROKEN / "returns.mcpl"))
    assert code == 1
    assert out.strip() == "returns.mcpl: 3 errors, 0 warnings"


def test_feedback_runs_on_clean_files_only(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[str, tuple[str, ...]]] = []

    def fake_feedback(program: Any, library: object, options: FeedbackOptions) -> FileFeedback:
        ran.append((program.main.functions[0].name, tuple(options.defines)))
        return FileFeedback([], {}, 0.0, options)

    monkeypatch.setattr(check_command, "feedback_options", real_feedback_options)
    monkeypatch.setattr(feedback_stage, "run_feedback", fake_feedback)
    code, out, err = run(capsys, "-D", "n=4", str(MATMUL), str(BROKEN / "returns.mcpl"))
    assert code == 1
    assert ran == [("matmul", ("n=4",))]
    assert out.strip().endswith("2 files checked: 3 errors, 0 warnings")
    ran.clear()
    assert run(capsys, str(MATMUL))[0] == 0  # not asked for: not run
    assert run(capsys, "--no-feedback", "-D", "n=4", str(MATMUL))[0] == 0
    assert ran == []
