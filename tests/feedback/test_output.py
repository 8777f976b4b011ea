"""`mcl check` with feedback: the rich report, the JSON document and its schema, exit
codes, and a plain check that stays free of SymPy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import KERNELS

from mcl.cli import main

# These tests read messages and rows whole, one to a line.
pytestmark = pytest.mark.usefixtures("whole_lines")

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "feedback-schema.json")
                    .read_text())
MATMUL = str(KERNELS / "matmul" / "perfect.mcpl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["check", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_document_validates_against_the_documented_schema(capsys) -> None:
    code, out, _ = run(capsys, MATMUL, "--level", "gpu", "--format", "json", "-D", "n=2048",
                       "-D", "m=2048")
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    messages = document["messages"]
    assert {m["analysis"] for m in messages} >= {"opstats", "transfers", "reuse", "memory",
                                                 "elements"}
    (summary,) = [m for m in messages if m["code"] == "opstats-summary"]
    assert summary["values"]["computational"] == {"symbolic": "2*m*n*p", "numeric": None}
    assert summary["needs"] == ["p"]
    assert summary["file"].endswith("perfect.mcpl") and summary["line"] == 3
    (local,) = [m for m in messages if m["code"] == "memory-faster-space"]
    assert (local["line"], local["column"], local["end_column"]) == (11, 16, 23)  # a[i, k]


def test_schema_rejects_what_it_should() -> None:
    good = {"messages": [{"file": "k.mcpl", "line": 1, "column": 1, "end_line": 1,
                          "end_column": 2, "severity": "info", "analysis": "opstats",
                          "code": "opstats-summary", "message": "m",
                          "values": {"x": {"symbolic": "n", "numeric": None}}}]}
    jsonschema.validate(good, SCHEMA)
    for broken in ({"severity": "error"}, {"values": {"x": {"symbolic": "n"}}},
                   {"code": "Not A Code"}):
        bad = {"messages": [{**good["messages"][0], **broken}]}
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SCHEMA)


def test_text_report_groups_by_function_and_loop_with_markers(capsys) -> None:
    code, out, _ = run(capsys, MATMUL, "--level", "gpu", "-D", "n=2048", "-D", "m=2048",
                       "-D", "p=2048")
    assert code == 0
    assert "feedback for matmul at level gpu" in out
    lines = out.splitlines()
    where = next(k for k, line in enumerate(lines) if "data reuse: a[i, k]" in line)
    source, marker = lines[where + 1], lines[where + 2]
    assert "sum += a[i, k] * b[k, j];" in source
    assert marker.index("^") == source.index("a[i, k]")
    assert "^~~~~~~" in marker
    assert any("> for k (line 10)]" in line for line in lines)  # the loop group header
    assert "17,179,869,184" in out  # 2*m*n*p with the values
    assert out.rstrip().endswith("perfect.mcpl: 0 errors, 0 warnings")


def test_exit_codes(capsys, tmp_path) -> None:
    assert run(capsys, MATMUL, "--feedback")[0] == 0
    code, _, err = run(capsys, MATMUL, "-D", "n=lots")
    assert code == 1 and "values-bad-define" in err
    broken = tmp_path / "broken.mcpl"
    broken.write_text("perfect void f(int n, main float[n] a) {\n"
                      "  foreach (int i in n threads) { a[i] = b[i]; }\n}\n")
    code, out, _ = run(capsys, str(broken), "--feedback")
    assert code == 1 and "feedback for" not in out


def test_no_feedback_and_plain_check(capsys) -> None:
    code, out, _ = run(capsys, MATMUL, "-D", "n=4", "--no-feedback")
    assert code == 0 and "feedback for" not in out
    code, out, _ = run(capsys, MATMUL)
    assert code == 0 and "feedback for" not in out


def test_plain_check_does_not_import_sympy() -> None:
    probe = (f"import sys; from mcl.cli import main; main(['check', {MATMUL!r}]); "
             "print('sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "False"


def test_json_at_a_leaf_level_validates_with_every_analysis(capsys) -> None:
    code, out, _ = run(capsys, MATMUL, "--level", "xeon_phi", "--format", "json",
                       "-D", "n=256", "-D", "m=256", "-D", "p=256")
    assert code == 0
    document = json.loads(out)
    jsonschema.validate(document, SCHEMA)
    analyses = {m["analysis"] for m in document["messages"]}
    assert {"opstats", "transfers", "reuse", "elements", "cache"} <= analyses
