"""The series `mcl refine -o DIR` writes: each version of the search's best sequence a
.mcpl file whose `// change:` header line names the refinement, and a series.toml in
refinement order (the format of kernels/matmul/series.toml, read by `mcl report DIR` as
the paper's Table II) whose rows also state each step's refinement invocation, the
estimated and measured gain and how it was verified; a [search] table records how the
series was found. The reference the search verified against is copied as the folder's
reference.py, so that `mcl report DIR --run` can make inputs and verify."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcl.refine.search import SearchResult, Version
from mcl.report.series import SERIES_FILE
from mcl.verify import reference_for

BRANCH = "refine"
_CHANGE_LINE = re.compile(r"^\s*//\s*change:.*$")


@dataclass(frozen=True)
class SeriesRow:
    """One row of the written series: its name, file, the change in words, and the
    search's version (None for the input, where the search started from its
    translation)."""

    name: str
    text: str
    change: str
    version: Version | None


@dataclass(frozen=True)
class SearchSettings:
    """How the search was asked for, recorded in the series' [search] table."""

    input: Path
    target: str
    steps: int
    beam: int
    budget_s: float | None
    backend: str | None  # with --measure: the backend the versions were timed with
    values: Mapping[str, Any]


def series_rows(result: SearchResult, original: Path, original_text: str,
                translated_from: str | None, target: str) -> list[SeriesRow]:
    """The rows in refinement order: the input (where the search started from its
    translation), then each version of the best sequence, named `TARGET_vN`."""
    rows: list[SeriesRow] = []
    if translated_from is not None:
        # The input keeps its name unless it is one the versions take (TARGET_vN).
        name = "input" if re.fullmatch(rf"{re.escape(target)}_v\d+", original.stem) \
            else original.stem
        rows.append(SeriesRow(name, original_text,
                              f"(the search's input, {original.name}, at {translated_from})",
                              None))
    for n, version in enumerate(result.series, start=1):
        if version.offer is None:
            change = (f"(auto-translate from {translated_from}: the search's first version)"
                      if translated_from is not None else
                      f"(the search's input, {original.name})")
        else:
            change = f"{version.invocation}: {version.summary}" + _gains_text(version)
        rows.append(SeriesRow(f"{target}_v{n}", version.text, change, version))
    return rows


def write_series(folder: Path, rows: list[SeriesRow], result: SearchResult,
                 settings: SearchSettings, reference: Path | None) -> list[Path]:
    """Write the rows' files, series.toml and the reference into `folder`; the paths
    written, series.toml first."""
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / SERIES_FILE]
    for row in rows:
        path = folder / f"{row.name}.mcpl"
        text = row.text if row.version is None else with_change_line(row.text, row.change)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    written[0].write_text(series_toml(rows, result, settings), encoding="utf-8")
    if reference is not None and reference.is_file():
        # reference.py is where `mcl report DIR --run` looks (mcl.verify.reference_for),
        # whatever the file the user named with --reference was called.
        copy = reference_for(folder / SERIES_FILE)
        shutil.copyfile(reference, copy)
        written.append(copy)
    return written


def with_change_line(text: str, change: str) -> str:
    """`text` with `// change: CHANGE` as its first line: the first line replaced where
    it is a change line already (a version keeps the text the search verified, with
    the header that names its own change, as the hand-written versions do)."""
    lines = text.splitlines(keepends=True)
    header = f"// change: {change}\n"
    first = next((n for n, line in enumerate(lines) if line.strip()), None)
    if first is not None and _CHANGE_LINE.match(lines[first]):
        lines[first] = header
        return "".join(lines)
    return header + text


def series_toml(rows: list[SeriesRow], result: SearchResult, settings: SearchSettings) -> str:
    best = result.best
    out = [
        "# Written by `mcl refine`: the best sequence of refinements its search found, in",
        "# refinement order (`mcl report` shows it as Table II). The keys of [[version]] are",
        "# those of kernels/matmul/series.toml, and for each refined version: refinement",
        "# (the `mcl apply` invocation that makes it from the row before), estimated_seconds",
        "# and estimated_gain (the time model), measured_seconds and measured_gain (with",
        "# --measure), verified (against what, at which sizes).",
        "",
        "[series]",
        f"kernel = {_toml(best.kernel.function if best.kernel else settings.input.stem)}",
        f"title = {_toml(f'{settings.input.name} refined for {settings.target} by mcl refine')}",
        "",
        "[search]",
        f"input = {_toml(str(settings.input))}",
        f"target = {_toml(settings.target)}",
        f"steps = {settings.steps}",
        f"beam = {settings.beam}",
    ]
    if settings.budget_s is not None:
        out.append(f"budget_s = {_toml(settings.budget_s)}")
    if settings.backend is not None:
        out.append(f"measured_with = {_toml(settings.backend)}")
    out += [
        f"values = {{ {', '.join(f'{k} = {_toml(v)}' for k, v in settings.values.items())} }}",
        f"candidates = {result.candidates}",
        f"stopped = {_toml(result.stopped)}",
        f"wall_s = {result.wall_s:.3f}",
        f"step_s = [{', '.join(f'{t:.3f}' for t in result.step_seconds)}]",
    ]
    for row in rows:
        out += ["", "[[version]]", f"name = {_toml(row.name)}", f"branch = {_toml(BRANCH)}",
                f"change = {_toml(row.change)}", f"run = {_toml(settings.target)}"]
        version = row.version
        if version is None:
            continue
        if version.offer is not None:
            out.append(f"refinement = {_toml(version.invocation)}")
        for key, value in (("estimated_seconds", version.seconds),
                           ("estimated_gain", version.estimated_gain),
                           ("measured_seconds", version.measured_seconds),
                           ("measured_gain", version.measured_gain)):
            if value is not None:
                out.append(f"{key} = {_toml(value)}")
        if version.measured is not None and version.measured.problem:
            out.append(f"not_measured = {_toml(version.measured.problem)}")
        if version.verification is not None:
            out.append(f"verified = {_toml(verified_text(version))}")
    return "\n".join(out) + "\n"


def verified_text(version: Version) -> str:
    check = version.verification
    if check is None:
        return ""
    return (f"against {check.against} at "
            + "; ".join(" ".join(f"{k}={v}" for k, v in c.sizes.items()) for c in check.checks))


def _gains_text(version: Version) -> str:
    parts = []
    if version.estimated_gain is not None:
        parts.append(f"estimated {version.estimated_gain:.2f}x")
    elif version.parent is not None:  # the model states no time: no gain is claimed
        parts.append("not estimated")
    if version.measured_gain is not None:
        parts.append(f"measured {version.measured_gain:.2f}x")
    return f" ({', '.join(parts)})" if parts else ""


def _toml(value: Any) -> str:
    """A TOML value: a string (JSON's escapes are TOML's), a number or a boolean."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)
