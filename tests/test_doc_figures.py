"""The measured figures a doc quotes are in the raw files it names (the rule is stated in
benchmarks/README.md, "How a figure is checked against its raw file").

A passage -- a table row, a paragraph or a list item -- that names raw files under
benchmarks/results/ (in the forms tests/test_benchmark_results.py reads; a table row that
names none: those of the paragraph introducing its table) quotes its figures from them. A
figure is a number with a unit: GFLOP/s, TFLOP/s, GB/s, s, ms, µs (or us), %, or a ratio
(0.85x, 1.36×); a range (0.83–0.89×, 2.8 to 6.3 s, 256 → 257 ms) is two figures. Each
must be
- a number of one of the named files (a .tar.gz read member by member), rounded to the
  digits the doc shows (thousands separators dropped), in the same unit or one a thousand
  times larger or smaller (GFLOP/s quoted as TFLOP/s, a time in seconds quoted in ms or
  µs); a ratio is not rescaled, but 0.89× may be written 89% in the file; or
- a ratio (x, ×, %) of two measured figures of the same passage that are themselves
  found (a % also as their difference); or
- a ratio of two numbers of a file, stated in RATIOS_OF_THE_FILES.
Goals and bounds (≥ 80%, within 2×, at least every 500 ms) and the doc's own estimates
(about 85 ms) are not measurements. The blocks that scripts write (`<!-- table4: ...` to
`<!-- end table4 -->`) are left out: tests/series/ regenerates them from their files.
The figures found in no named file are listed in NOT_IN_THEIR_FILES until fixed.
"""

from __future__ import annotations

import re
import tarfile
from dataclasses import dataclass
from functools import cache
from itertools import permutations
from pathlib import Path

import pytest
from test_benchmark_results import CITATION, ROOT, alternatives, matches

DOCS = ("performance.md", "validation.md", "editor.md", "feedback.md", "scaling.md", "hdl.md",
        "reliability.md", "refinements.md", "tuning.md", "codegen.md", "performance-log.md")

NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
# the unit right after a number: a ratio sign or % directly, a word unit after a space
UNIT = r"(?P<unit>[×x%](?![\w])|\s?(?:GFLOP/s|TFLOP/s|GB/s|ms|µs|us|s)(?![\w/]))"
# a goal or a bound ("≥ 80%", "within 2×", "at least every 500 ms", "outside the 10%") is
# not a measurement, and "about 85 ms" is the doc's own estimate
GOAL = r"(?P<goal>(?:[≥≤<>]|within|under|over|outside|than|goal of|every|about)\s?(?:the )?)?"
# 0.83–0.89×, 2.8 to 6.3 s, 256 → 257 ms: two figures of one unit
RANGE = rf"(?P<low>{NUMBER})(?:(?:\s?[–-]\s?|\s(?:to|→|->)\s)(?P<high>{NUMBER}))?"
FIGURE = re.compile(rf"{GOAL}(?<![\w.,/^-]){RANGE}{UNIT}")
RAW_NUMBER = re.compile(rf"(?<![\d.])(?:{NUMBER})(?:[eE][-+]?\d+)?")
PLAIN_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
GENERATED = re.compile(r"<!-- (?P<kind>[\w-]+): .*?<!-- end (?P=kind) -->", re.S)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
# what is not read for figures: inline code (commands, file names) and a link's target
SKIPPED = re.compile(r"`[^`]*`|\]\([^)]*\)")

RATIOS = {"×", "x", "%"}
SCALES = {"GFLOP/s": (1.0, 1e3, 1e-3), "TFLOP/s": (1.0, 1e3, 1e-3), "GB/s": (1.0, 1e3, 1e-3),
          "s": (1.0, 1e-3), "ms": (1.0, 1e3, 1e-3), "µs": (1.0, 1e6, 1e3), "us": (1.0, 1e6, 1e3),
          "%": (1.0,), "×": (1.0,), "x": (1.0,)}


@dataclass(frozen=True)
class Figure:
    text: str  # as the doc writes it
    value: float
    decimals: int
    unit: str

    def rounds_to(self, value: float) -> bool:
        """Whether `value` shows as this figure at the digits the doc shows."""
        return abs(value - self.value) <= 0.5 * 10 ** -self.decimals * (1 + 1e-9) + 1e-12


def figure(number: str, unit: str) -> Figure:
    plain = number.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    return Figure(f"{number}{unit}", float(plain), decimals, unit.strip())


def figures(text: str) -> list[Figure]:
    found: list[Figure] = []
    for match in FIGURE.finditer(SKIPPED.sub(" ", text)):
        if match["goal"]:
            continue
        found.append(figure(match["low"], match["unit"]))
        if match["high"]:
            found.append(figure(match["high"], match["unit"]))
    return found


@dataclass(frozen=True)
class Passage:
    doc: str
    line: int
    text: str
    # a table names its raw files in the paragraph that introduces it
    introduction: str = ""

    def cited(self) -> list[str]:
        """The globs (relative to benchmarks/results/) of the raw files this passage names
        (a table row that names none: those its table's introduction names)."""
        names: list[str] = []
        own = list(CITATION.finditer(self.text))
        for match in own or CITATION.finditer(self.introduction):
            if match["tail"]:
                cited = "*" + re.sub(r"…|\.\.\.", "*", match["tail"])
            else:
                cited = match["path"] or match["name"]
            names += alternatives(cited.rstrip("."))
        return names


def passages(doc: str) -> list[Passage]:
    """The table rows, paragraphs and list items of a doc, without code or generated blocks
    (blanked out, so that line numbers stay)."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    blank = lambda m: re.sub(r"[^\n]", " ", m.group(0))  # noqa: E731
    text = FENCE.sub(blank, GENERATED.sub(blank, text))
    found: list[Passage] = []
    start, lines = 0, []  # the passage being read
    introduction = ""  # of the table being read
    for number, line in enumerate([*text.splitlines(), ""], 1):
        new_item = line.startswith(("|", "- ", "* ")) or re.match(r"\d+\. ", line)
        if lines and (not line.strip() or new_item or lines[0].startswith("|")):
            row = lines[0].startswith("|")
            if row and (not found or not found[-1].text.startswith("|")):
                introduction = found[-1].text if found else ""
            found.append(Passage(doc, start, "\n".join(lines), introduction if row else ""))
            lines = []
        if line.strip():
            start = start if lines else number
            lines.append(line)
    return found


def text_of(path: Path) -> str:
    if path.is_dir():
        return "\n".join(text_of(p) for p in sorted(path.rglob("*")) if p.is_file())
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path) as archive:
            members = [archive.extractfile(m) for m in archive.getmembers() if m.isfile()]
            return "\n".join(m.read().decode("utf-8", "replace") for m in members if m)
    if path.name.endswith((".png", ".svg")):
        return ""
    return path.read_text(encoding="utf-8", errors="replace")


@dataclass(frozen=True)
class RawNumbers:
    numbers: frozenset[float]  # every number written in the files
    shares: frozenset[float]  # those written as a share, "89%"

    def __add__(self, other: RawNumbers) -> RawNumbers:
        return RawNumbers(self.numbers | other.numbers, self.shares | other.shares)


NONE = RawNumbers(frozenset(), frozenset())


@cache
def raw_numbers(pattern: str) -> RawNumbers:
    """The numbers written in the raw files a citation names."""
    numbers: set[float] = set()
    shares: set[float] = set()
    for path in matches(pattern):
        text = text_of(path)
        for regex in (RAW_NUMBER, PLAIN_NUMBER):  # "1,402.1" and a JSON list's "[1,234]"
            for m in regex.finditer(text):
                numbers.add(float(m.group(0).replace(",", "")))
                if text.startswith("%", m.end()):
                    shares.add(float(m.group(0).replace(",", "")))
    return RawNumbers(frozenset(numbers), frozenset(shares))


def in_files(quoted: Figure, raw: RawNumbers) -> bool:
    if quoted.unit in RATIOS:  # a ratio is not rescaled, but 0.89× may be written 89%
        shown_as = [n / 100 for n in raw.shares] if quoted.unit != "%" else []
        return any(quoted.rounds_to(n) for n in [*raw.numbers, *shown_as])
    return any(quoted.rounds_to(n * scale) for scale in SCALES[quoted.unit] for n in raw.numbers)


def ratio_of(quoted: Figure, a: float, b: float) -> bool:
    """Whether `quoted` is a / b (as x or ×), or as a share or a difference in %."""
    if quoted.unit != "%":
        return quoted.rounds_to(a / b)
    return quoted.rounds_to(100 * a / b) or quoted.rounds_to(100 * (a / b - 1))


def derived(quoted: Figure, found: list[Figure]) -> bool:
    """A ratio of two measured figures of the passage (of one unit) that are in the files."""
    measured = [f for f in found if f.unit not in RATIOS]
    return quoted.unit in RATIOS and any(
        ratio_of(quoted, a.value, b.value)
        for a, b in permutations(measured, 2) if a.unit == b.unit and b.value)


# Ratios a doc quotes of two numbers of a raw file that the doc itself does not quote (each
# run's best of two rows): (doc, figure, the file, the numerator, the denominator).
RATIOS_OF_THE_FILES = [
    ("performance.md", "0.83×", "2026-11-27-h100-matmul-v4-sweep.log",
     42360.0, 51247.7),  # call 4: the committed hopper_v4 (CUDA) against cuBLAS (start)
    ("performance.md", "0.75×", "2026-11-27-h100-matmul-v4-sweep.log",
     38377.0, 51144.0),  # call 5: hopper_v4 through OpenCL against cuBLAS (start)
    ("performance.md", "0.80×", "2026-11-27-h100-matmul-v4-series.log",
     38369.5, 47868.1),  # hopper_v4 through OpenCL against cuBLAS
    ("performance.md", "41.9%", "2026-11-27-h100-convolution-v4.log",
     28010.1, 66908.0),  # hopper_v4 through OpenCL against the FP32 FMA peak
    # transpose on the H100: each version's GB/s against the run's copy bandwidth
    ("performance-log.md", "14%", "2026-11-27-h100-transpose-table4.log",
     398.3, 2937.2),  # perfect through CUDA
    ("performance-log.md", "59%", "2026-11-27-h100-transpose-table4.log",
     1744.5, 2937.2),  # gpu_v1 through OpenCL
    ("performance-log.md", "60%", "2026-11-27-h100-transpose-table4.log",
     1769.5, 2937.2),  # gpu_v1 through CUDA
    ("performance-log.md", "33%", "2026-11-27-h100-transpose-table4.log",
     958.8, 2937.2),  # torch's transpose
    # spmv round 6 on uniform rows: the power-law versions' CUDA builds against torch
    ("performance-log.md", "0.89×", "2026-11-27-h100-spmv-round6-table4.log",
     185.7, 209.0),  # hopper_v7 (H100)
    ("performance-log.md", "0.95×", "2026-11-27-h200-spmv-round6-table4.json",
     221.23893951091006, 234.08239047825595),  # hopper_v6 (H200; 0.94 as the log rounds)
    # spmv round 7: hopper_v12 on uniform rows against torch (the second Table IV run),
    # and hopper_v8 against torch on the H200 (GFLOP/s of the first repetition)
    ("performance-log.md", "0.99×", "2026-11-27-h100-spmv-round7-table4b.log", 203.3, 206.2),
    ("performance-log.md", "1.03×", "2026-11-27-h200-spmv-round7-sweep1.log", 520.6, 503.4),
    # matmul v4 on the H100: each version against cuBLAS in the table's run
    ("performance-log.md", "0.67×", "2026-11-27-h100-matmul-v4.log",
     33352.5, 49663.1),  # hopper_v1 through OpenCL (through CUDA 33252.3: 0.67× too)
    ("performance-log.md", "0.70×", "2026-11-27-h100-matmul-v4.log",
     34935.2, 49663.1),  # hopper_v2 through OpenCL
    ("performance-log.md", "0.62×", "2026-11-27-h100-matmul-v4.log",
     30675.3, 49663.1),  # hopper_v3 through OpenCL (through CUDA 30840.5: 0.62× too)
    # the same three measurements as performance.md's
    ("performance-log.md", "0.83×", "2026-11-27-h100-matmul-v4-sweep.log", 42360.0, 51247.7),
    ("performance-log.md", "0.75×", "2026-11-27-h100-matmul-v4-sweep.log", 38377.0, 51144.0),
    ("performance-log.md", "0.80×", "2026-11-27-h100-matmul-v4-series.log", 38369.5, 47868.1),
    # hopper_v4 with its loads placed against v2's guarded prefetch (the same kernel)
    ("performance-log.md", "1.27×", "2026-11-27-h100-matmul-v4-sweep.log", 42360.0, 33228.9),
    # hopper_v4 through CUDA against OpenCL in the table's run
    ("performance-log.md", "10%", "2026-11-27-h100-matmul-v4.log", 42422.4, 38437.5),
    # convolution on the H100: hopper_v2 through OpenCL against the FMA peak (the run
    # before round 1), then each version of rounds 1 and 2 against the peak and cuDNN
    ("performance-log.md", "25%", "2026-11-26-h100-table4-both-backends.log",
     16494.7, 66908.0),
    ("performance-log.md", "1.78×", "2026-11-27-h100-convolution-v3.log", 5749.4, 3231.2),
    ("performance-log.md", "1.79×", "2026-11-27-h100-convolution-v3.log", 5769.2, 3231.2),
    ("performance-log.md", "23%", "2026-11-27-h100-convolution-v3.log", 15703.6, 66908.0),
    ("performance-log.md", "4.86×", "2026-11-27-h100-convolution-v3.log", 15703.6, 3231.2),
    ("performance-log.md", "5.42×", "2026-11-27-h100-convolution-v3.log", 17512.1, 3231.2),
    ("performance-log.md", "1.68×", "2026-11-27-h100-convolution-v4.log",
     5806.4, 3447.6),  # perfect through OpenCL (through CUDA 5786.4: 1.68× too)
    ("performance-log.md", "33%", "2026-11-27-h100-convolution-v4.log", 21884.5, 66908.0),
    ("performance-log.md", "26%", "2026-11-27-h100-convolution-v4.log", 17682.4, 66908.0),
    ("performance-log.md", "6.35×", "2026-11-27-h100-convolution-v4.log", 21884.5, 3447.6),
    ("performance-log.md", "5.13×", "2026-11-27-h100-convolution-v4.log", 17682.4, 3447.6),
    # convolution's SASS: the FFMA share of the static instructions of each build
    ("performance-log.md", "49%", "2026-11-27-h100-convolution-v4-sass.txt", 1388.0, 2824.0),
    ("performance-log.md", "77%", "2026-11-27-h100-convolution-v4-sass.txt", 2601.0, 3392.0),
    ("performance-log.md", "80%", "2026-11-27-h100-convolution-v4-sass.txt", 2601.0, 3264.0),
    ("performance-log.md", "78%", "2026-11-27-h100-convolution-v4-sass.txt", 2592.0, 3344.0),
    # spmv hopper_v1 -> hopper_v2 on uniform rows (OpenCL), a row of feedback.md's table
    ("feedback.md", "1.02x", "2026-11-27-h100-perf-limit-applications.log", 189.5, 186.1),
    # LANES_J = 4 through OpenCL against cuBLAS at the start and the end of its call
    ("performance-log.md", "0.79×", "2026-11-27-h100-matmul-v4-sweep.log", 40599.0, 51144.0),
    ("performance-log.md", "0.80×", "2026-11-27-h100-matmul-v4-sweep.log", 40599.0, 50586.2),
]


def stated_ratio(passage: Passage, quoted: Figure) -> bool:
    named = {path.name for cited in passage.cited() for path in matches(cited)}
    return any(doc == passage.doc and text == quoted.text and raw in named
               and {a, b} <= raw_numbers(raw).numbers and ratio_of(quoted, a, b)
               for doc, text, raw, a, b in RATIOS_OF_THE_FILES)


# Figures the docs quote that the files their passage names do not hold: findings, each to
# be fixed in its doc (the figure from the file, or the file it comes from named beside it)
# and then struck off here. The test fails for a new one and for one fixed but still listed.
NOT_IN_THEIR_FILES = {
    ("validation.md", "1.245×"): "1.98 / 1.59 GHz: the clocks are not in the calibration file",
    ("validation.md", "1.12×"): "the offers' model columns: newer than the runs named",
    ("validation.md", "1.26×"): "the offers' model columns: newer than the runs named",
    ("validation.md", "1.44×"): "the offers' model columns: newer than the runs named",
    ("validation.md", "38%"): "a share of the sum of the ncu page's pcsamp columns",
    ("validation.md", "7.5%"): "a share of the sum of the ncu page's pcsamp columns",
    ("validation.md", "7.4%"): "a share of the sum of the ncu page's pcsamp columns",
    ("validation.md", "1.10 ms"): "the model's new estimates: newer than the file named",
    ("editor.md", "474 ms"): "spmv hopper_v17/v20 with --repeat 3: in no file named",
    ("feedback.md", "4.40 ms"): "the model's new estimates: newer than the files named",
    ("feedback.md", "1.10 ms"): "the model's new estimates: newer than the files named",
    ("feedback.md", "1.07×"): "the v1 -> v2 step before: not in the archive named",
    ("feedback.md", "0.77×"): "the v2 -> v3 step before: not in the archive named",
    ("feedback.md", "78%"): "the store's share of the transactions: not in the table4 run",
    ("feedback.md", "15 s"): "not in the check and lsp-cpu logs named",
    ("reliability.md", "25 s"): "a 22-term chain before the fix: not in the scaling log",
    ("reliability.md", "1.5 s"): "rerun times of two 'hangs': not in the fuzz log named",
    ("reliability.md", "2.6 s"): "rerun times of two 'hangs': not in the fuzz log named",
    ("reliability.md", "1.6 s"): "round 8's rerun times: the row names only 2026-11-24's log",
    ("refinements.md", "1.10 ms"): "the model's new estimates: newer than the files named",
    # performance-log.md, the historical log: figures of runs whose files were not kept,
    # or derived from a file in a way no rule above states
    ("performance-log.md", "6.4 GFLOP/s"): "x86_avx512_v1's idle run: its table (CPU: "
                                           "x86_avx512 on PoCL) names no file; none kept",
    ("performance-log.md", "63%"): "the MCL paper's GTX480 figure, not a measurement here",
    ("performance-log.md", "17.5 s"): "round 7's check times of v10/v12: a run not kept",
    ("performance-log.md", "349\nms"): "round 7's editor times of v10/v12: a run not kept",
    ("performance-log.md", "615 ms"): "round 8's editor times of v16: a run not kept",
    ("performance-log.md", "649 ms"): "round 8's editor times of v16: a run not kept",
    ("performance-log.md", "403 ms"): "round 8's editor times of v12: a run not kept",
    ("performance-log.md", "407 ms"): "round 8's editor times of v12: a run not kept",
    ("performance-log.md", "280 s"): "Nsight Compute's second attempt: its output not kept",
    ("performance-log.md", "27%"): "the means of three runs' wall times: derived, not written",
    ("performance-log.md", "3.2 s"): "the search: 'search done' minus 'ready' in the file",
    ("performance-log.md", "2.8 s"): "the search: 'search done' minus 'ready' in the file",
    ("performance-log.md", "36.9 s"): "a mean of two runs of the file (33.98 and 39.71 s)",
    ("performance-log.md", "31.1 s"): "a mean of two runs of the file",
    ("performance-log.md", "26.3 s"): "a mean of two runs of the file",
    ("performance-log.md", "25.7 s"): "a mean of two runs of the file",
    ("performance-log.md", "24.5 s"): "a mean of two runs of the file",
    ("performance-log.md", "18.9 s"): "a mean of two runs of the file",
    ("performance-log.md", "18.0 s"): "a mean of two runs of the file",
    ("performance-log.md", "13.1 s"): "the timeline's 'cluster up' to 'search done'",
    ("performance-log.md", "11.1 s"): "the timeline's 'cluster up' to 'search done'",
    ("performance-log.md", "3.9 s"): "the timeline's warm-up: a difference of its times",
    ("performance-log.md", "7.2 s"): "the timeline's search: a difference of its times",
    ("performance-log.md", "3.5 s"): "closing the cluster: a difference of the timeline's",
}


def unfound(passage: Passage) -> list[str]:
    raw = sum((raw_numbers(c) for c in passage.cited()), NONE)
    quoted = figures(passage.text)
    found = [q for q in quoted if in_files(q, raw)]
    return [q.text for q in quoted
            if q not in found and not derived(q, found) and not stated_ratio(passage, q)]


def citing_passages() -> list[Passage]:
    return [p for doc in DOCS for p in passages(doc) if p.cited() and figures(p.text)]


def test_the_passages_and_their_figures_are_read_as_a_reader_reads_them() -> None:
    assert [f.text for f in figures("16 threads 1,402 GFLOP/s at 2048³ (1.36× numpy's, "
                                    "0.83–0.89× in three runs; 25.3 s, 97%; 9 × 9, "
                                    "`--rounds 5` [log](a.md#x-2-s))")] == \
        ["1,402 GFLOP/s", "1.36×", "0.83×", "0.89×", "25.3 s", "97%"]
    goals = [p for p in passages("performance.md") if "Black-Scholes 1.6" in p.text]
    assert len(goals) == 2 and goals[0].text.startswith("| Black-Scholes")
    assert goals[0].cited() == ["2026-11-27-h100-bandwidth-round5.json",
                                "2026-11-27-h100-bandwidth-round5.log"]
    assert not any("42422.4" in p.text for p in passages("performance.md"))  # a table4 block
    row = next(p for p in passages("validation.md") if p.text.startswith("| transpose gpu_v1 `pad"))
    assert row.cited() == [f"2026-12-06-{card}-refine-offers.{ext}"  # the introduction's
                           for card in ("h100", "h200") for ext in ("txt", "json")]


def test_a_figure_matches_at_the_digits_shown_and_a_ratio_by_its_rule() -> None:
    numbers = RawNumbers(frozenset({1402.1, 0.0123456, 84.5, 103.3, 89.0}), frozenset({89.0}))
    assert in_files(figure("1,402", " GFLOP/s"), numbers)
    assert in_files(figure("1.4", " TFLOP/s"), numbers)
    assert in_files(figure("12.3", " ms"), numbers)  # seconds in the file
    assert not in_files(figure("1,403", " GFLOP/s"), numbers)
    assert not in_files(figure("12.4", " ms"), numbers)
    assert not in_files(figure("1.4", "×"), numbers)  # a ratio is not rescaled
    assert in_files(figure("0.89", "×"), numbers)  # but may be written as a share
    assert not in_files(figure("0.845", "x"), numbers)
    found = [figure("84.5", " GFLOP/s"), figure("103.3", " GFLOP/s")]
    assert derived(figure("82", "%"), found) and derived(figure("0.82", "×"), found)
    assert not derived(figure("83", "%"), found)
    assert not derived(figure("0.82", " ms"), found)


def test_each_stated_ratio_is_one_of_its_files() -> None:
    for doc, text, raw, a, b in RATIOS_OF_THE_FILES:
        assert {a, b} <= raw_numbers(raw).numbers, (doc, text, raw)
        cited = [p for p in passages(doc) if raw in {path.name for c in p.cited()
                                                      for path in matches(c)}]
        assert any(text in [f.text for f in figures(p.text)] for p in cited), (doc, text)


@pytest.mark.parametrize("passage", citing_passages(), ids=lambda p: f"{p.doc}:{p.line}")
def test_every_quoted_figure_is_in_the_raw_files_it_names(passage: Passage) -> None:
    new = [f for f in unfound(passage) if (passage.doc, f) not in NOT_IN_THEIR_FILES]
    assert new == [], passage.text


def test_each_listed_finding_is_still_there() -> None:
    """A figure struck off the list once its doc is fixed, so the list stays the findings."""
    unfound_now = {(p.doc, f) for p in citing_passages() for f in unfound(p)}
    assert sorted(set(NOT_IN_THEIR_FILES) - unfound_now) == []


def test_a_figure_changed_in_its_last_digits_is_caught_more_often_than_not() -> None:
    """The check has teeth: performance.md's figures each moved by three units of their last
    digit are mostly in no named file (a file of many numbers may hold the moved one)."""
    moved = caught = 0
    for passage in passages("performance.md"):
        raw = sum((raw_numbers(c) for c in passage.cited()), NONE)
        quoted = figures(passage.text) if passage.cited() else []
        for q in quoted:
            changed = Figure(q.text, q.value + 3 * 10 ** -q.decimals, q.decimals, q.unit)
            others = [f for f in quoted if f is not q and in_files(f, raw)]
            moved += 1
            caught += not (in_files(changed, raw) or derived(changed, others))
    assert moved > 50 and caught > moved / 2, (caught, moved)
