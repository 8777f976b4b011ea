"""`mcl check --level ...` shows the cache analysis in the rich report and the JSON
document (acceptance of issue 6, with the commands of the issue)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from mcl.cli import main

MATMUL = str(Path(__file__).resolve().parents[2] / "kernels" / "matmul" / "perfect.mcpl")
SIZES = ["-D", "n=2048", "-D", "m=2048", "-D", "p=2048"]
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "feedback-schema.json").read_text())


def cache_messages(capsys, level: str) -> list[dict]:
    assert main(["check", MATMUL, "--level", level, *SIZES, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    jsonschema.validate(document, SCHEMA)  # docs/feedback-schema.json: the stable schema
    return [m for m in document["messages"] if m["analysis"] == "cache"]


def test_xeon_phi_in_json(capsys):
    messages = cache_messages(capsys, "xeon_phi")
    assert sum(m["code"] == "cache-oriented" for m in messages) == 1
    (b_k,) = [m for m in messages if m["message"].startswith("b[k, j] in loop k ")]
    assert b_k["code"] == "cache-no-benefit" and b_k["severity"] == "info"  # lanes coalesce
    assert b_k["values"]["worst_lines"] == {"symbolic": "p", "numeric": 2048}
    (a_k,) = [m for m in messages if m["message"].startswith("a[i, k] in loop k ")]
    assert a_k["code"] == "cache-benefits"
    assert a_k["line"] == 11 and a_k["column"] == 16  # the a[i, k] of the source file


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_fermi_in_the_rich_report(capsys):
    """The cache facts have nothing to act on here: shown with -v (issue 11, item 5)."""
    assert main(["check", MATMUL, "--level", "fermi", *SIZES]) == 0
    assert "[cache-" not in capsys.readouterr().out
    assert main(["check", MATMUL, "--level", "fermi", "-v", *SIZES]) == 0
    out = capsys.readouterr().out
    assert "b[k, j] in loop bi may benefit from the cache l1" in out
    assert ("best case ceiling(n/8) (= 256) line fetches of 128 B when the 8 blocks that use "
            "one l1 at once share lines, worst case n (= 2,048)") in out
    assert ("b[k, j] in loop k does not benefit from the caches l1, l2, and loses nothing: "
            "consecutive iterations lie 4*m (= 8,192) B apart") in out
    assert "the 32 threads of a warp load neighbouring elements together" in out
    assert "[cache-no-benefit]" in out and "cache-oriented" not in out
