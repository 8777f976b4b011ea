"""`mcl report`: the series file, the feedback column, the renderers and the command."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.diagnostics import MclError, Span
from mcl.feedback.findings import LoopLineFetches, OperationCounts
from mcl.feedback.messages import FeedbackSeverity, Message, Value
from mcl.report.headline import headline, headline_messages
from mcl.report.measure import Measurement
from mcl.report.render import render_markdown
from mcl.report.rows import Row, build_rows
from mcl.report.series import VersionSpec, change_of, load_series

from .series_support import MATMUL, library, program, series

PAPER_ORDER = ["perfect", "accelerator", "gpu", "gpu_v1", "gpu_v2", "gpu_v3", "nvidia",
               "nvidia_v1", "fermi", "fermi_v1"]
XEON_PHI_ORDER = ["mic", "mic_v1", "mic_v2", "xeon_phi", "xeon_phi_v1", "xeon_phi_v2",
                  "xeon_phi_v3"]

PERFECT = (MATMUL / "perfect.mcpl").read_text()
V1 = """// change: one more element per thread, because the feedback said so
// and a second line that explains it.
const int ELEMS = 2;
perfect void matmul(int n, int m, int p,
    main float[n, m] c,
    main float[n, p] a, main float[p, m] b) {
  foreach (int i in n threads) {
    foreach (int j in m threads) {
      float sum = 0.0;
      for (int k = 0; k < p; k++) {
        sum += a[i, k] * b[k, j];
      }
      c[i, j] = sum;
} } }
"""


def test_the_matmul_series_follows_the_paper_order() -> None:
    names = series().names()
    assert [x for x in names if x in PAPER_ORDER] == PAPER_ORDER
    assert [x for x in names if x in XEON_PHI_ORDER] == XEON_PHI_ORDER
    assert names.index("hopper_v1") < names.index("hopper_v2")
    assert names.index("x86_avx512") < names.index("x86_avx512_v1") < names.index("x86_avx512_v2")


def test_changes_come_from_the_header_comments_and_the_series_file() -> None:
    s = series()
    assert s.version("gpu_v1").change == change_of(MATMUL / "gpu_v1.mcpl")
    assert "local" in s.version("gpu_v1").change
    assert s.version("nvidia").change == "(auto-translate)"
    assert s.version("nvidia").source == "gpu_v3" and s.version("nvidia").level == "nvidia"
    assert s.version("perfect").change.startswith("(initial version")


def test_run_leaves_by_device_type() -> None:
    s = series()
    assert s.version("perfect").leaf_for("gpu") == "hopper"
    assert s.version("perfect").leaf_for("cpu") == "x86_avx512"
    assert s.version("fermi_v1").leaf_for("gpu") == "fermi"
    assert s.version("gpu").leaf_for("gpu") is None  # translations are not run


def _folder(tmp_path: Path, series_toml: str | None = None) -> Path:
    (tmp_path / "perfect.mcpl").write_text(PERFECT)
    (tmp_path / "perfect_v1.mcpl").write_text(V1)
    (tmp_path / "reference.py").write_text((MATMUL / "reference.py").read_text())
    if series_toml is not None:
        (tmp_path / "series.toml").write_text(series_toml)
    return tmp_path


def test_without_a_series_file_versions_are_ordered_by_level_and_number(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "gpu_v2.mcpl").write_text("// change: x\n")
    (folder / "gpu_v10.mcpl").write_text("// change: y\n")
    s = load_series(folder, library())
    assert s.names() == ["perfect", "perfect_v1", "gpu_v2", "gpu_v10"]
    assert s.version("perfect_v1").change == "one more element per thread, because the " \
        "feedback said so"


@pytest.mark.parametrize(("toml", "problem"), [
    ('[[version]]\nname = "x"\nfrom = "perfect"\nlevel = "gpu"\n', "not listed before it"),
    ('[[version]]\nname = "perfect"\n[[version]]\nname = "perfect"\n', "listed twice"),
    ('[[version]]\nname = "nothere"\n', "no file nothere.mcpl"),
    ('[[version]]\nname = "perfect"\n[[version]]\nname = "t"\nfrom = "perfect"\n',
     "names no level"),
    ("[[version]\n", "series.toml"),
])
def test_a_broken_series_file_is_an_error_not_a_traceback(tmp_path: Path, toml: str,
                                                          problem: str) -> None:
    with pytest.raises(MclError) as exc:
        load_series(_folder(tmp_path, toml), library())
    assert problem in str(exc.value.diagnostics[0])


def _message(code: str, text: str, severity: FeedbackSeverity = FeedbackSeverity.INFO,
             span: Span | None = None) -> Message:
    return Message(severity, "test", code, text, span, (), "matmul")


def _fetches(text: str, span: Span, best: int) -> LoopLineFetches:
    """A cache verdict on one loop that fetches `best` lines in the best case."""
    lines = Value(best, best)
    message = Message(FeedbackSeverity.SUGGESTION, "test", "cache-no-benefit", text, span,
                      (("best_lines", lines),), "matmul")
    return LoopLineFetches(message, best_lines=lines)


def test_headline_keeps_suggestions_and_new_facts_and_drops_repeated_facts() -> None:
    transfers = _message("transfers-total", "pcie transfers: 4*n*p")
    suggestion = _message("elements-several-per-unit", "compute more", FeedbackSeverity.SUGGESTION)
    approx = _message("opstats-approximate", "upper bounds", FeedbackSeverity.WARNING)
    detail = _message("opstats-memory", "thread accesses dev")
    first = headline_messages([transfers, suggestion, approx, detail], [], None)
    assert first == ["pcie transfers: 4*n*p", "compute more"]
    again = headline_messages([transfers, suggestion], [transfers, suggestion], None)
    assert again == ["compute more"]  # the fact is unchanged, the advice stays
    assert headline_messages([transfers, approx, detail], [transfers], None, everything=True) \
        == ["pcie transfers: 4*n*p", "upper bounds", "thread accesses dev"]


def _access_spans(name: str) -> dict[str, Span]:
    """The span of an access of each array of a version: where its messages point."""
    from mcl.mcpl import ast

    body = program(name).main.function("matmul").body
    return {ast.root_name(node): node.span for node in ast.walk(body)
            if isinstance(node, ast.Index)}


def test_headline_words_the_operation_counts_as_table_ii() -> None:
    """The counts are read from the typed record, not from the message's figures."""
    import sympy

    m, n = sympy.symbols("m n")
    message = _message("opstats-summary", "#computational instructions: 2*m*n, #data "
                       "accesses: 3*m*n (2*m*n loads and m*n stores); arithmetic intensity 2/3")
    counts = OperationCounts(message, computational=Value(2 * m * n),
                             data_accesses=Value(3 * m * n, 12))
    assert headline_messages([counts], [], None) == [
        "#computational instructions: 2*m*n, #data accesses: 3*m*n (= 12)"]
    assert headline_messages([message], [], None) == [message.text]


def test_headline_collapses_cache_messages_to_the_costliest_loop_of_each_array() -> None:
    spans = _access_spans("gpu_v3")
    on_b = [_fetches(f"b in loop {k}", spans["b"], lines)
            for k, lines in (("i", 4), ("k", 2048), ("j", 64))]
    on_c = _fetches("c in loop i", spans["c"], 8)
    assert headline_messages([*on_b, on_c], [], program("gpu_v3")) == [
        "b in loop k [+2 more loops]", "c in loop i"]


def test_headline_shows_reuse_only_for_parameters() -> None:
    """The array is found from the message's span: the access it is about."""
    spans = _access_spans("gpu_v3")
    on_b = _message("reuse-independent", "data reuse: b", span=spans["b"])
    on_sums = _message("reuse-independent", "data reuse: sums", span=spans["sums"])
    assert headline_messages([on_b, on_sums], [], program("gpu_v3")) == ["data reuse: b"]


def test_markdown_escapes_cells_and_marks_branches() -> None:
    spec = VersionSpec("v1", branch="GPU", change="a | b")
    row = Row(spec, level="gpu", shown=["2*m*n*p loads", "x"])
    text = render_markdown("T", [row], {"v1": Measurement("hopper", rate=12.5,
                                                          unit="GFLOP/s")}, True)
    lines = text.splitlines()
    assert lines[2] == "| version | level | change compared to the previous version | " \
        "feedback | performance |"
    assert "| **GPU** |" in text
    assert r"a \| b" in text and r"2\*m\*n\*p loads<br>• x" in text and "12.5 GFLOP/s" in text


def test_measurement_text() -> None:
    assert Measurement("hopper", rate=1234.5, unit="GFLOP/s").text == "1.23e+03 GFLOP/s"
    assert Measurement("hopper", rate=3.0, unit="GFLOP/s", verified=False).text.endswith("WRONG")
    assert Measurement("hopper", problem="no device").text == "(no device)"


def test_rows_of_a_series_with_a_translation(tmp_path: Path) -> None:
    toml = ('[[version]]\nname = "perfect"\nbranch = "p"\n'
            '[[version]]\nname = "acc"\nfrom = "perfect"\nlevel = "accelerator"\nbranch = "p"\n'
            'change = "(auto-translate)"\n')
    rows = build_rows(load_series(_folder(tmp_path, toml), library()), library(),
                      {"n": 8, "m": 8, "p": 8})
    assert [(r.name, r.level, r.problem) for r in rows] == [
        ("perfect", "perfect", None), ("acc", "accelerator", None)]
    assert any(line.startswith("#computational instructions: 2*m*n*p (= 1,024)")
               for line in rows[0].shown)
    # the translation adds the transfers and does not repeat the unchanged counts in full:
    # it names them, in short, on a last line (issue 11, item 5)
    assert any("pcie transfers" in line for line in rows[1].shown)
    assert not any(line.startswith("#computational") for line in rows[1].shown)
    assert rows[1].shown[-1] == "(unchanged) #computational instructions; data reuse of a, b"
    assert [text.split(" ")[:3] for text in rows[1].unchanged] == [
        ["#computational", "instructions:", "2*m*n*p"], ["data", "reuse:", "a[i,"],
        ["data", "reuse:", "b[k,"]]
    assert rows[1].unchanged[0] in [m.text for m in rows[0].messages]
    assert not [line for line in rows[0].shown if "(unchanged)" in line]  # nothing before


def test_a_persisting_fact_is_marked_unchanged_and_transfers_stay_silent() -> None:
    counts = _message("opstats-summary", "#computational instructions: 2*m*n*p")
    transfers = _message("transfers-total", "pcie transfers: 4*n*p")
    occupancy = _message("occupancy", "occupancy: 8 blocks per SM (100%)")
    moved = _message("occupancy", "occupancy: 4 blocks per SM (50%)")
    suggestion = _message("elements-several-per-unit", "compute more", FeedbackSeverity.SUGGESTION)
    column = headline([counts, transfers, occupancy, suggestion],
                      [counts, transfers, moved, suggestion], None)
    assert column.lines == ["occupancy: 8 blocks per SM (100%)", "compute more",
                            "(unchanged) #computational instructions"]
    assert column.unchanged == ["#computational instructions: 2*m*n*p"]
    long = _message("opstats-summary", "x" * 80)
    assert headline([long], [long], None).lines == ["(unchanged) operation counts"]


def test_cli_markdown_and_run_on_pocl(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    toml = ('[series]\ntitle = "tiny"\n[[version]]\nname = "perfect"\nrun = "x86_avx512"\n'
            '[[version]]\nname = "perfect_v1"\nrun = { cpu = "x86_avx512" }\n')
    folder = _folder(tmp_path, toml)
    out = tmp_path / "table.md"
    rc = main(["report", str(folder), "--run", "--repeat", "1", "-D", "n=5", "-D", "m=7",
               "-D", "p=3", "--format", "markdown", "-o", str(out)])
    assert rc == 0
    text = out.read_text()
    assert text.startswith("**tiny — n = 5, m = 7, p = 3**")
    assert "one more element per thread" in text
    table = [line for line in text.splitlines() if line.startswith("| perfect")]
    assert sum("GFLOP/s" in line for line in table) == 2 and "WRONG" not in text
    # issue 17: each run's fraction of its roof; the reference's peer in the same run
    assert sum("% of roof)" in line for line in table) == 2
    assert "\npeer, measured in the same run: numpy a @ b" in text


def test_cli_rich_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(_folder(tmp_path)), "--versions", "perfect_v1"]) == 0
    out = capsys.readouterr().out
    assert "perfect_v1" in out and "one more element" in out
    assert re.search(r"^(│ perfect_v1 +│|version: perfect_v1$)", out, re.MULTILINE)
    # only the version asked for, as a table row or (narrow terminals) a block
    assert not re.search(r"^(│ perfect +│|version: perfect$)", out, re.MULTILINE)


@pytest.mark.parametrize(("argv", "message"), [
    (["--target", "hopper"], "--target and --device only apply with --run"),
    (["--versions", "perfect_v2"], "no version 'perfect_v2'"),
    (["--run", "--target", "nowhere"], "unknown level 'nowhere'"),
    (["--run", "--repeat", "0"], "--repeat needs a positive count"),
])
def test_cli_errors_are_diagnostics(tmp_path: Path, capsys: pytest.CaptureFixture,
                                    argv: list[str], message: str) -> None:
    assert main(["report", str(_folder(tmp_path)), *argv]) == 1
    assert message in " ".join(capsys.readouterr().err.split())


def test_cli_missing_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(tmp_path / "nothing")]) == 1
    assert "is not a folder of kernel versions" in " ".join(capsys.readouterr().err.split())


def test_headline_says_a_repeated_line_once() -> None:
    twice = [_message("transfers-total", "same words"), _message("transfers-total", "same words")]
    assert headline_messages(twice, [], None) == ["same words"]


def test_cli_target_runs_only_versions_above_the_leaf(tmp_path: Path) -> None:
    out = tmp_path / "t.md"
    rc = main(["report", str(MATMUL), "--run", "--target", "hopper", "--versions",
               "fermi_v1,gpu_v1", "--repeat", "1", "-D", "n=5", "-D", "m=7", "-D", "p=3",
               "--format", "markdown", "-o", str(out)])
    assert rc == 0
    rows = {line.split(" | ")[0].strip("| "): line for line in out.read_text().splitlines()}
    assert rows["fermi_v1"].endswith("(fermi is not above hopper) |")
    assert re.search(r"GFLOP/s \([\d.]+% of roof\) \|$", rows["gpu_v1"])
