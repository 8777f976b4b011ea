"""The feedback report as a programmer reads it: file names relative to the current
directory, `ceiling(m/1024)` for the rounding-up idiom, a summary of what to act on,
messages ordered by severity, `--severity` and `--verbose`, values listed only when the
text does not show them, and singular/plural nouns that agree with the figures."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sympy
from conftest import KERNELS, by_code, feedback, feedback_source
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.cli import main
from mcl.feedback import codes
from mcl.feedback.emit import fill, readable
from mcl.feedback.facts.symbolic import ceiling_div, identical
from mcl.feedback.messages import SEVERITY_ORDER, FeedbackSeverity, Value
from mcl.feedback.render.text import display_path
from mcl.feedback.values import evaluate
from mcl.mcpl.symbolic_values import integer_quotient

# These tests read messages and rows whole, one to a line.
pytestmark = pytest.mark.usefixtures("whole_lines")

ROOT = Path(__file__).resolve().parents[2]
MATMUL = KERNELS / "matmul" / "perfect.mcpl"
SIZES = ["-D", "n=2048", "-D", "m=2048", "-D", "p=2048"]
TRANSPOSE = KERNELS / "transpose" / "gpu_v1.mcpl"
TRANSPOSE_SIZES = ["-D", "n=8192", "-D", "m=8192"]
HEAD = re.compile(r"^  (\S+):(\d+):(\d+): (info|suggestion|warning): ")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["check", *argv])
    return code, capsys.readouterr().out


# ----------------------------------------------------------------------------- file names


def test_file_names_print_relative_to_the_current_directory(capsys, monkeypatch) -> None:
    monkeypatch.chdir(KERNELS.parent)
    code, out = run(capsys, str(MATMUL.resolve()), "--level", "gpu", *SIZES)
    assert code == 0
    heads = [HEAD.match(line) for line in out.splitlines()]
    files = {h.group(1) for h in heads if h}
    assert files == {str(MATMUL.resolve().relative_to(KERNELS.parent.resolve()))}
    assert not any(line.lstrip().startswith("/") for line in out.splitlines())
    assert f"({files.pop()})" in out.splitlines()[0]  # the title names the file too


def test_file_names_outside_the_current_directory_stay_as_given(capsys, monkeypatch,
                                                                tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    absolute = str(TRANSPOSE.resolve())
    _, out = run(capsys, absolute, "--level", "hopper", *TRANSPOSE_SIZES)
    assert f"  {absolute}:53:23: suggestion:" in out
    assert display_path(absolute, tmp_path) == absolute
    assert display_path("kernels/x.mcpl", tmp_path) == "kernels/x.mcpl"  # relative: as given


def test_json_keeps_the_file_name_as_given(capsys, monkeypatch) -> None:
    monkeypatch.chdir(KERNELS.parent)
    absolute = str(MATMUL.resolve())
    _, out = run(capsys, absolute, "--level", "gpu", "--format", "json", *SIZES)
    files = {m["file"] for m in json.loads(out)["messages"] if m["file"]}
    assert files == {absolute}


# ----------------------------------------------------------------------------- ceiling


def test_rounding_up_division_reads_as_ceiling() -> None:
    messages = feedback(MATMUL, level="gpu", values={"n": 2048, "m": 2048, "p": 2048})
    (several,) = by_code(messages, "elements-several-per-unit")
    units = several.value_map["units"]
    assert str(units.symbolic) == "1024*n*ceiling(m/1024)" and units.numeric == 2048 * 2048
    assert "1024*n*ceiling(m/1024) (= 4,194,304) threads" in several.text
    figures = [str(v.symbolic) for m in messages for _, v in m.values]
    assert not [f for f in figures if "floor" in f]


@settings(max_examples=60, deadline=None)
@given(a=st.integers(0, 5000), d=st.integers(1, 300), x=st.integers(1, 5000),
       g=st.integers(1, 64))
def test_integer_quotient_and_ceiling_div_are_exact(a: int, d: int, x: int, g: int) -> None:
    m = sympy.Symbol("m", integer=True, positive=True)
    T = sympy.Integer(d)
    rounded_up = integer_quotient(m + T - 1, T)  # the translator's (m + T - 1) / T
    plain = integer_quotient(m, T)
    if d > 1:
        assert isinstance(rounded_up, sympy.ceiling) and isinstance(plain, sympy.floor)
    if a >= 1:
        assert rounded_up.subs(m, a) == -(-a // d) and plain.subs(m, a) == a // d
    nested = ceiling_div(sympy.ceiling(m / T), g)
    assert nested == sympy.ceiling(m / (T * g))
    blocks = -(-x // d)  # ceil(x / d) threads in blocks of d
    assert nested.subs(m, x) == -(-blocks // g)


def test_identical_decides_with_probes_and_agrees_with_simplify() -> None:
    fw, w = sympy.symbols("fw w", integer=True, positive=True)
    # Zero for w <= 1024 or fw <= 1024 only: the large probe point tells them apart.
    differs = fw * sympy.ceiling(w / 1024) - fw - sympy.ceiling(w / 1024) * sympy.Min(1024, fw)
    assert not identical(differs, -sympy.Min(1024, fw))
    assert identical(sympy.Min(fw, w) + sympy.ceiling(w / 4),
                     sympy.ceiling(w / 4) + sympy.Min(w, fw))
    assert identical((fw + 1) ** 2, fw**2 + 2 * fw + 1)


def test_long_polynomials_read_factored() -> None:
    h, w, fh, fw = sympy.symbols("h w fh fw", integer=True, positive=True)
    size = sympy.expand(4 * (h + fh - 1) * (w + fw - 1))
    assert str(readable(size)) == "4*(fh + h - 1)*(fw + w - 1)"
    paper = 2 * h * w * fh + h * w  # short: kept as the paper writes it
    assert readable(paper) == paper


# ----------------------------------------------------------------------------- texts


def test_fields_fill_in_figures_nouns_and_labels() -> None:
    n = sympy.Symbol("n", integer=True, positive=True)
    values = {"one": evaluate(sympy.Integer(1), {}),
              "many": evaluate(sympy.ceiling(n / 8), {"n": 2048}),
              "symbolic": evaluate(n, {}),
              "plain": evaluate(sympy.Integer(4096), {}),
              "count": evaluate(sympy.ceiling(n / 1024), {"n": 2048})}
    text, shown = fill("{one:line fetch|line fetches}; {many:line fetch|line fetches}; "
                       "{symbolic:unit|units}; stride {plain} B; {count=nrBlocksM} blocks; "
                       "{missing}", values)
    assert text == ("1 line fetch; ceiling(n/8) (= 256) line fetches; n units; stride 4,096 B; "
                    "nrBlocksM (= 2) blocks; {missing}")
    assert shown == ("one", "many", "symbolic", "plain", "count")


def test_nouns_agree_with_their_numbers_in_every_cache_report() -> None:
    for path, level in ((MATMUL, "fermi"), (MATMUL, "xeon_phi"),
                        (KERNELS / "matmul" / "xeon_phi_v1.mcpl", None)):
        messages = feedback(path, level=level, values={"n": 2048, "m": 2048, "p": 2048})
        texts = [m.text for m in messages]
        assert not [t for t in texts if re.search(r"(?<![\d,])1 line fetches", t)]
        assert any(re.search(r"(?<![\d,])1 line fetch\b", t) for t in texts)


def test_cache_messages_say_why_and_what_to_try() -> None:
    messages = feedback(MATMUL, level="fermi", values={"n": 2048, "m": 2048, "p": 2048})
    (b_k,) = [m for m in by_code(messages, "cache-no-benefit") if " in loop k " in m.text]
    assert "consecutive iterations lie 4*m (= 8,192) B apart" in b_k.text  # why
    # ... but a warp's 32 threads load one line together: transposing b would break that
    assert "use completely (coalesced)" in b_k.text and b_k.hint is None
    (c_t,) = [m for m in by_code(messages, "cache-benefits")
              if m.text.startswith("c[i, j] in loop ttj ")]
    assert "the 32 threads of a warp store neighbouring elements (4 B apart)" in c_t.text
    (b_t,) = [m for m in by_code(messages, "cache-benefits")
              if m.text.startswith("b[k, j] in loop ttj ")]
    assert "the 32 threads of a warp load neighbouring elements" in b_t.text
    # Units that fetch their own lines by the kernel's decomposition: a fact, not advice.
    (c_bi,) = [m for m in by_code(messages, "cache-no-benefit")
               if m.text.startswith("c[i, j] in loop bi ")]
    assert c_bi.severity == FeedbackSeverity.INFO
    assert "every block fetches its own lines" in c_bi.text


def test_the_several_threads_that_share_a_space_get_one_proposal() -> None:
    # p = 8192: a block's row of a, 32 kB, does not fit fermi's 16 kB l1 (at p = 2048 the
    # l1 serves it: memory-cache-serves, tests/feedback/test_memory_served.py)
    messages = feedback(MATMUL, level="fermi", values={"n": 2048, "m": 2048, "p": 8192})
    (shared,) = by_code(messages, "memory-faster-space")
    assert shared.text.startswith("a[i, k] loaded for nrWarpsTj (= 32) warps wtj and "
                                  "nrThreadsTj (= 32) threads ttj: shared memory") or \
        shared.text.startswith("a[i, k] loaded for nrWarpsTj warps wtj and nrThreadsTj "
                               "threads ttj: shared memory")
    assert shared.value_map["units"].numeric == 1024
    assert "shared by the 1,024 threads of a block" in shared.text


def test_affine_but_not_static_indices_are_facts_not_warnings() -> None:
    messages = feedback(KERNELS / "matmul" / "hopper_v1.mcpl",
                        values={"n": 2048, "m": 2048, "p": 2048})
    assert not by_code(messages, "cache-unpredictable")
    not_affine = by_code(messages, "cache-not-affine")
    assert not_affine and all(m.severity == FeedbackSeverity.INFO for m in not_affine)


# ----------------------------------------------------------------------------- layout


def test_summary_lists_what_to_act_on_before_the_messages(capsys) -> None:
    """transpose gpu_v1 at hopper: the bank conflict pad-shared removes, 1.72x."""
    _, out = run(capsys, str(TRANSPOSE), "--level", "hopper", *TRANSPOSE_SIZES)
    lines = out.splitlines()
    assert lines[0].endswith(": 1 suggestion, 5 info (9 more with -v)")
    assert lines[1] == "  suggestion  shared-memory bank conflict: tile[jj][ii] (line 53)"
    assert lines[2] == ""


def _codes_shown(out: str) -> list[str]:
    return re.findall(r"^  \S+:\d+:\d+: \w+: .* \[([a-z0-9-]+)\]$", out, re.MULTILINE)


def test_facts_with_nothing_to_act_on_are_shown_only_with_verbose(capsys) -> None:
    """Issue 11, item 5: perfect at fermi had a cache message for every array x loop pair
    (27 messages). By default the report shows the suggestions and the headline facts,
    says how many others there are and how to see them; -v and the JSON have them all."""
    _, out = run(capsys, str(MATMUL), "--level", "fermi", *SIZES)
    shown = _codes_shown(out)
    # a[i, k]: the block's row of a (8 kB) fits fermi's l1, which serves the reuse between
    # its threads: the fact memory-cache-serves, with nothing to act on
    assert sorted(shown) == sorted([
        "opstats-summary", "transfers-total", "memory-access-optimal", "roofline",
        "reuse-independent", "reuse-independent", "occupancy", "time-estimate"])
    lines = out.splitlines()
    assert lines[0].endswith(": 8 info (21 more with -v)")
    (quiet,) = [line for line in lines if "nothing to act on" in line]
    assert quiet == ("  21 more facts with nothing to act on (14 cache, 3 transfers, "
                     "2 opstats, 1 memory, 1 elements) not shown; -v shows every message")
    _, verbose = run(capsys, str(MATMUL), "--level", "fermi", "-v", *SIZES)
    every = _codes_shown(verbose)
    assert len(every) == 29 and "nothing to act on" not in verbose
    assert {"cache-benefits", "cache-no-benefit", "transfers-parameter"} <= set(every)
    _, out = run(capsys, str(MATMUL), "--level", "fermi", "--format", "json", *SIZES)
    messages = json.loads(out)["messages"]
    assert len(messages) == 29  # machines get every message, marked
    assert sorted(m["code"] for m in messages if m["shown_by_default"]) == sorted(shown)


def test_reuse_of_a_temporary_is_hidden_and_of_a_parameter_shown(capsys) -> None:
    """fermi_v1 stages a in the shared array l_a: the reuse of l_a is bookkeeping inside
    the kernel, the reuse of the parameters a and b is what the paper's table quotes; the
    fully refined version has no suggestion left."""
    fermi_v1 = KERNELS / "matmul" / "fermi_v1.mcpl"
    _, out = run(capsys, str(fermi_v1), *SIZES)
    reused = re.findall(r"info: data reuse: (\w+)\[", out)
    assert sorted(reused) == ["a", "b"]
    assert "suggestion" not in out.splitlines()[0]
    _, verbose = run(capsys, str(fermi_v1), "-v", *SIZES)
    assert "l_a" in re.findall(r"info: data reuse: (\w+)\[", verbose)


def test_messages_are_ordered_by_severity_within_a_loop(capsys) -> None:
    # p = 8192: a[i, k]'s proposal stays (its row does not fit the l1) beside the facts;
    # it states no gain, so only -v shows it
    _, out = run(capsys, str(MATMUL), "--level", "fermi", "-v", *SIZES[:-1], "p=8192")
    groups: list[list[str]] = []
    for line in out.splitlines():
        if line.startswith("  ["):
            groups.append([])
        elif groups and (head := HEAD.match(line)):
            groups[-1].append(head.group(4))
    assert len(groups) >= 2
    for severities in groups:
        ranks = [SEVERITY_ORDER[FeedbackSeverity(s)] for s in severities]
        assert ranks == sorted(ranks)
    assert any(len(set(g)) > 1 for g in groups)  # the order had something to do


def test_severity_filter_in_text_and_json(capsys) -> None:
    # p = 8192: a[i, k]'s proposal stays, the one suggestion (as in the test above; -v:
    # it states no gain)
    sizes = [*SIZES[:-1], "p=8192"]
    _, out = run(capsys, str(MATMUL), "--level", "fermi", "-v", "--severity", "suggestion",
                 *sizes)
    severities = {h.group(4) for h in map(HEAD.match, out.splitlines()) if h}
    assert severities == {"suggestion"}
    assert out.splitlines()[0].endswith(": 1 suggestion (28 more below --severity suggestion)")
    _, out = run(capsys, str(MATMUL), "--level", "fermi", "--severity", "suggestion",
                 "--format", "json", *sizes)
    document = json.loads(out)
    assert {m["severity"] for m in document["messages"]} == {"suggestion"}
    _, out = run(capsys, str(MATMUL), "--level", "fermi", "--severity", "warning", *SIZES)
    assert not [h for h in map(HEAD.match, out.splitlines()) if h]
    assert out.splitlines()[0].endswith(
        ": nothing at this severity (29 more below --severity warning)")
    # --severity alone asks for feedback
    _, out = run(capsys, str(MATMUL), "--severity", "info")
    assert out.startswith("feedback for matmul at level perfect")


def test_values_listed_only_when_the_text_does_not_show_them(capsys) -> None:
    _, out = run(capsys, str(MATMUL), "--level", "gpu", *SIZES)
    lines = out.splitlines()
    at = next(k for k, line in enumerate(lines) if "[opstats-summary]" in line)
    assert "17,179,869,184" in lines[at]
    listed = [line for line in lines[at + 1:at + 8] if line.startswith("        ")
              and " = " in line and "|" not in line]
    assert not [line for line in listed if "computational" in line]
    _, verbose = run(capsys, str(MATMUL), "--level", "gpu", "--verbose", *SIZES)
    assert "        computational = 2*m*n*p = 17,179,869,184" in verbose.splitlines()
    # With values missing, the report says once which to give.
    _, symbolic = run(capsys, str(MATMUL), "--level", "gpu", "--feedback")
    assert "  figures without a number need -D m=... -D n=... -D p=..." in symbolic or \
        re.search(r"figures without a number need( -D [mnp]=\.\.\.){3}", symbolic)


def test_a_source_line_is_quoted_once_for_messages_about_the_same_code(capsys) -> None:
    _, out = run(capsys, str(MATMUL), "--level", "gpu", *SIZES)
    signature = [line for line in out.splitlines() if line.endswith("| perfect void matmul("
                                                                     "int n, int m, int p,")]
    assert len(signature) == 1


def test_two_files_with_the_same_function_get_a_report_each(capsys) -> None:
    gpu_v1 = KERNELS / "matmul" / "gpu_v1.mcpl"
    _, out = run(capsys, str(MATMUL), str(gpu_v1), "--level", "gpu", *SIZES)
    titles = [line for line in out.splitlines() if line.startswith("feedback for matmul")]
    assert len(titles) == 2
    assert f"({display_path(str(MATMUL))})" in titles[0]
    assert f"({display_path(str(gpu_v1))})" in titles[1]


# ----------------------------------------------------------------------------- catalogue


def _codes_in_sources() -> set[str]:
    """Every message code the analyses and the bundled feedback functions can emit."""
    found: set[str] = set()
    sources = [*(ROOT / "mcl" / "feedback").rglob("*.py"), *(ROOT / "hwdescs").glob("*.py")]
    for path in sources:
        text = path.read_text()
        found |= set(re.findall(r'code="([a-z0-9-]+)"', text))
        found |= set(re.findall(r'message\(\s*"([a-z0-9-]+)"', text))
        found |= set(re.findall(r'"(cache-[a-z-]+)"', text))
    # a record type's code (mcl.feedback.findings), emitted as `code_of(Kind)`
    found |= set(re.findall(r'MessageCode\(\s*"([a-z0-9-]+)"',
                            (ROOT / "mcl" / "feedback" / "findings.py").read_text()))
    return found


def _catalogue_sections() -> dict[str, str]:
    """docs/feedback.md's sections by the anchor of their heading (as GitHub makes it)."""
    text = (ROOT / "docs" / "feedback.md").read_text()
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    sections: dict[str, str] = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        words = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
        sections[words.replace(" ", "-")] = body
    return sections


def test_every_code_is_declared_once_and_in_its_catalogue_section() -> None:
    emitted = _codes_in_sources()
    assert {"opstats-summary", "memory-faster-space", "cache-no-benefit", "occupancy",
            "uncoalesced", "cache-not-affine"} <= emitted
    declared = codes.declared()
    assert not [c for c in emitted if c not in declared]
    from mcl.feedback import registry

    every = [*registry.MESSAGE_CODES, *(c for a in registry.BUILTIN for c in a.codes)]
    assert len({c.code for c in every}) == len(every)  # nobody declares a code twice
    sections = _catalogue_sections()
    for c in every:
        assert c.severities and c.title, c
        assert c.anchor in sections, f"{c.code}: no section #{c.anchor} in docs/feedback.md"
        assert f"`{c.code}`" in sections[c.anchor], f"{c.code} is not in #{c.anchor}"


@pytest.mark.parametrize("path, level, sizes", [
    ("matmul/fermi_v1.mcpl", None, {"n": 1000, "m": 1000, "p": 1000}),
    ("matmul/xeon_phi_v1.mcpl", None, {"n": 1000, "m": 1000, "p": 1000}),
    ("histogram/gpu_v1.mcpl", None, {"h": 1000, "w": 1000}),
    ("spmv/perfect.mcpl", "gpu", {}),
])
def test_messages_carry_a_declared_code_and_severity(path, level, sizes) -> None:
    messages = feedback(KERNELS / path, level, values=sizes)
    declared = codes.declared()
    assert len({m.code for m in messages}) >= 4
    for m in messages:
        assert m.code in declared, m.code
        assert m.severity in declared[m.code].severities, (m.code, m.severity)


def test_the_headline_rules_come_from_the_declarations() -> None:
    declared = codes.declared()
    headline = {c for c, d in declared.items() if d.headline}
    # the facts the paper's Table II quotes (docs/feedback.md, "What a report shows")
    assert {"opstats-summary", "transfers-total", "reuse-independent", "roofline",
            "memory-access-optimal", "occupancy"} <= headline
    assert "cache-benefits" not in headline and "transfers-parameter" not in headline
    assert codes.column("opstats-approximate") == codes.LEFT_OUT
    assert codes.column("transfers-total") == codes.SILENT_WHEN_UNCHANGED
    assert codes.column("a-code-of-my-own") == codes.IN_COLUMN


def test_unknown_codes_are_summarised_by_their_text() -> None:
    assert codes.title("per-core", "250 threads per core: too many") == "250 threads per core"
    assert codes.title("uncoalesced", "whatever") == codes.declared()["uncoalesced"].title


def test_figures_of_one_are_singular() -> None:
    assert fill("{x:block|blocks}", {"x": Value(sympy.Integer(1), 1)})[0] == "1 block"
    assert fill("{x:block|blocks}", {"x": Value(sympy.Integer(2), 2)})[0] == "2 blocks"


# ----------------------------------------------------------------------------- closed forms


def test_tiles_walked_in_vector_steps_sum_in_closed_form() -> None:
    from conftest import feedback_source

    messages = feedback_source("""
perfect void f(int p, main float[p] a) {
  foreach (int t in 1 threads) {
    for (int kb = 0; kb < (p + 127) / 128; kb++) {
      int len = min(128, p - kb * 128);
      for (int k = 0; k < len; k += 8) {
        a[kb * 128 + k] = a[kb * 128 + k] * 2.0;
      }
    }
  }
}""")
    (summary,) = by_code(messages, "opstats-summary")
    computational = summary.value_map["computational"].symbolic
    assert not computational.has(sympy.Sum) and not summary.approximate
    for p in (1, 7, 8, 9, 127, 128, 129, 300, 1000):
        walked = sum(len(range(0, min(128, p - kb * 128), 8)) for kb in range(-(-p // 128)))
        assert evaluate(computational, {"p": p}).numeric == walked


# ----------------------------------------------------------------------------- severities


def test_lines_of_elements_used_once_are_a_fact_and_strided_lanes_a_suggestion() -> None:
    v1 = feedback(KERNELS / "matmul" / "xeon_phi_v1.mcpl",
                  values={"n": 2048, "m": 2048, "p": 2048})
    (c_ej,) = [m for m in by_code(v1, "cache-no-benefit")
               if m.text.startswith("c[i, j] in loop ej ")]
    assert c_ej.severity == FeedbackSeverity.INFO
    # b is reused, but the 16 lanes load a line together and use all of it (issue 11)
    (b_k,) = [m for m in by_code(v1, "cache-no-benefit")
              if m.text.startswith("b[k, j] in loop k ")]
    assert b_k.severity == FeedbackSeverity.INFO and b_k.hint is None
    once = feedback_source("""
perfect void f(int n, int m, main float[n, m] a, main float[m, n] b) {
  foreach (int i in n threads) {
    for (int j = 0; j < m; j++) {
      b[j, i] = a[i, j];
    }
  }
}""", level="x86_avx512", values={"n": 64, "m": 64})
    (b_j,) = [m for m in by_code(once, "cache-no-benefit")
              if m.text.startswith("b[j, i] in loop j ")]
    assert b_j.severity == FeedbackSeverity.INFO and "each element is accessed once" in b_j.text
    transpose = feedback(KERNELS / "transpose" / "perfect.mcpl", level="xeon_phi",
                         values={"n": 2048, "m": 2048})
    (lanes,) = [m for m in by_code(transpose, "cache-no-benefit")
                if m.text.startswith("b[j, i] in loop vj ")]
    assert lanes.severity == FeedbackSeverity.SUGGESTION
    assert "the 16 vectors of a thread store together, but their elements lie" in lanes.text
    assert lanes.hint == "let neighbouring vectors (loop vj) access neighbouring elements of b"
