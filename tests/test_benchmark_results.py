"""The raw benchmark output under benchmarks/results/ and the figures that cite it stay in
step (benchmarks/README.md): every file a doc, a kernel's header or a benchmark script
names there exists, and every file kept directly in benchmarks/results/ is named somewhere
(what nothing cites goes to benchmarks/results/archive/).

A citation is a path under `benchmarks/results/`, or a file name that starts with its
date (`2026-11-27-h100-matmul-v4.log`), in the forms the docs write them: shell braces
(`...-quiet.{json,log}`), globs (`...-round7-*`), a run's name without its extension
(`2026-11-27-h100-transpose-table4`, its .json and .log), and a name shortened with an
ellipsis (`…-validate-feedback-merged.{md,json}`, any file whose name ends so)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ARCHIVE = RESULTS / "archive"

NAME = r"[A-Za-z0-9_.{},*/-]*[A-Za-z0-9_}*/]"
DATED = r"20\d\d-\d\d-\d\d-"
CITATION = re.compile(
    rf"benchmarks/results/(?P<path>(?:archive/)?(?:{DATED}|\*){NAME})"  # a path
    rf"|(?<![\w/.-])(?P<name>{DATED}{NAME})"  # a file name
    rf"|(?:…|\.\.\.)(?P<tail>-(?:{NAME}?(?:…|\.\.\.))*{NAME})")  # a shortened name
EXTENSIONS = (".tar.gz", ".json", ".log", ".md", ".txt", ".err", ".out", ".hdl", ".s")


def citing_files() -> list[Path]:
    return sorted({*ROOT.glob("docs/*.md"), ROOT / "README.md", *ROOT.glob("kernels/**/*.mcpl"),
                   *ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("benchmarks/**/README.md")})


def alternatives(pattern: str) -> list[str]:
    """The shell's brace expansion of `pattern`."""
    match = re.search(r"\{([^{}]*)\}", pattern)
    if match is None:
        return [pattern]
    return [expanded for choice in match.group(1).split(",")
            for expanded in alternatives(pattern[:match.start()] + choice + pattern[match.end():])]


@cache
def citations() -> dict[str, set[str]]:
    """Every citation (a glob relative to benchmarks/results/) -> the files citing it."""
    found: dict[str, set[str]] = {}
    for path in citing_files():
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            if match["tail"]:
                cited = "*" + re.sub(r"…|\.\.\.", "*", match["tail"])
            else:
                cited = match["path"] or match["name"]
            found.setdefault(cited.rstrip("."), set()).add(str(path.relative_to(ROOT)))
    return found


def matches(pattern: str) -> list[Path]:
    """The entries of benchmarks/results/ (or its archive) a pattern names: by glob, and as
    a run's name without its extension."""
    hits: list[Path] = []
    for folder in (RESULTS, ARCHIVE):
        hits += [*folder.glob(pattern.rstrip("/")), *folder.glob(pattern + ".*")]
    return hits


def stem(path: Path) -> str:
    return next((path.name[:-len(e)] for e in EXTENSIONS if path.name.endswith(e)), path.name)


def test_the_scan_sees_each_form_of_citation() -> None:
    cited = citations()
    assert "2026-11-27-pocl-v4-scaling-2048-{bundled,avx512}-quiet.{json,log}" in cited
    assert "2026-11-27-h100-spmv-round7-*" in cited
    assert "*-validate-feedback-merged.{md,json}" in cited
    assert "2026-11-27-h100-transpose-table4" in cited
    assert "docs/performance.md" in cited["2026-11-27-h100-matmul-v4.{json,log}"]
    assert alternatives("a-{b,c}.{json,log}") == ["a-b.json", "a-b.log", "a-c.json", "a-c.log"]


def test_every_cited_raw_file_exists() -> None:
    missing = sorted(f"{choice} (cited by {', '.join(sorted(where))})"
                     for cited, where in citations().items()
                     for choice in alternatives(cited) if not matches(choice))
    assert missing == []


def test_every_raw_file_kept_in_results_is_cited() -> None:
    named = {hit for cited in citations() for choice in alternatives(cited)
             for hit in matches(choice)}
    cited_stems = {stem(p) for p in named}
    uncited = sorted(
        entry.name for entry in RESULTS.iterdir()
        if entry != ARCHIVE and entry not in named
        and not any(entry in hit.parents for hit in named)  # a file inside it is cited
        and stem(entry) not in cited_stems)  # the .log of a cited run's .json
    assert uncited == [], "cite these or move them to benchmarks/results/archive/"


def test_the_archive_says_what_it_holds() -> None:
    assert (ARCHIVE / "README.md").is_file()
