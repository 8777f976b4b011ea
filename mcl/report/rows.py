"""The rows of the table: every version of a series loaded (or translated), checked, and
analysed at its level by the feedback engine (mcl.feedback)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError
from mcl.feedback.findings import Finding
from mcl.feedback.messages import Message
from mcl.report.headline import headline
from mcl.report.series import Series, VersionSpec

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program


@dataclass
class Row:
    spec: VersionSpec
    # mcl.mcpl.loader.Program at the row's level; None when it failed
    program: Program | None = None
    checked: CheckedProgram | None = None  # the program with the checker's side tables
    level: str = ""
    findings: list[Finding] = field(default_factory=list)  # every feedback finding
    shown: list[str] = field(default_factory=list)  # the lines of the feedback column
    # the full texts of the facts its "(unchanged) ..." line names (mcl.report.headline)
    unchanged: list[str] = field(default_factory=list)
    problem: str | None = None  # why the row has no program or no feedback

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def messages(self) -> list[Message]:
        """Every feedback message (of the findings)."""
        return [f.message for f in self.findings]


def build_rows(series: Series, library: HwdLibrary, values: Mapping[str, Any] | None = None,
               *, everything: bool = False) -> list[Row]:
    """One row per version, in series order. `values` are the `-D` sizes that make the
    feedback numeric; `everything` shows every message instead of the headline ones."""
    values = dict(values or {})
    rows: list[Row] = []
    by_name: dict[str, Row] = {}
    for spec in series.versions:
        row = _load(spec, by_name, library)
        if row.program is not None:
            try:
                row.findings = _analyse(row.checked, library, values)
            except MclError as exc:
                row.problem = "; ".join(d.message for d in exc.diagnostics)
        parent = _derived_from(spec, rows, by_name, library)
        column = headline(row.findings, parent.findings if parent else [], row.program,
                          everything)
        row.shown, row.unchanged = column.lines, column.unchanged
        rows.append(row)
        by_name[spec.name] = row
    return rows


def _derived_from(spec: VersionSpec, rows: list[Row], by_name: dict[str, Row],
                  library: HwdLibrary) -> Row | None:
    """The row a version was made from, which "new feedback" is compared with. For a
    translation: the same source at the level above (gpu after accelerator, both
    translations of perfect), else the source itself; for a hand-written version: the
    previous row of its branch (else the previous row)."""
    if spec.translated:
        source = by_name.get(spec.source or "")
        parent = library.parent(spec.level) if spec.level and spec.level in library else None
        for row in reversed(rows):
            if row.level == parent and (row is source or row.spec.source == spec.source):
                return row
        return source
    same_branch = [r for r in rows if r.spec.branch == spec.branch]
    if same_branch:
        return same_branch[-1]
    return rows[-1] if rows else None


def _load(spec: VersionSpec, by_name: dict[str, Row], library: HwdLibrary) -> Row:
    from mcl import pipeline

    row = Row(spec)
    try:
        if spec.translated:
            source = by_name[spec.source or ""]
            if source.program is None:
                row.problem = f"{spec.source} did not load"
                return row
            checked = pipeline.translate(pipeline.CheckedProgram(source.program),
                                         spec.level or "", library)
        else:
            assert spec.path is not None  # a version that is not a translation has a file
            checked = pipeline.check_file(spec.path, (), library)
        program, errors = checked.program, checked.errors
    except MclError as exc:
        row.problem = "; ".join(d.message for d in exc.diagnostics)
        return row
    if errors:
        row.problem = f"{len(errors)} check error(s), first: {errors[0]}"
        return row
    row.program, row.checked = program, checked
    row.level = _level(program)
    return row


def _level(program: Program) -> str:
    levels = sorted({f.hwd for f in program.main.functions})
    return ", ".join(levels)


def _analyse(checked: CheckedProgram | None, library: HwdLibrary, values: Mapping[str, Any]
             ) -> list[Finding]:
    from mcl.feedback.registry import analyse_program_findings

    assert checked is not None  # a row with a program has its check
    findings, _ = analyse_program_findings(checked, library, values)
    return findings
