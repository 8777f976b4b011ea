"""Counters per MCPL line: Nsight Compute's source page (`ncu --import R --page source
--csv --print-source cuda,sass`). The generated CUDA names the MCPL line of each statement
with `#line` and NVRTC adds line information (mcl.backends.cuda.runner), so
ncu attributes every machine instruction to an MCPL line. The page holds, per source file
and kernel, a `"File Path"` row, a `"Function Name"` row, a header row, and then one row
per source line (its number in the first column) followed by the rows of its machine
instructions (first column empty), which are left out here.

The columns read are the instanced metrics of ncu's SourceCounters section:
`L2 Theoretical Sectors Global` over `L1 Tag Requests Global` (sectors per request),
`L1 Wavefronts Shared` over `L1 Wavefronts Shared Ideal` (the bank-conflict degree), and
`Divergent Branches`.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import PurePath

from mcl.profile.counters import parse_number

COLUMNS = {
    "Instructions Executed": "instructions",
    "L1 Tag Requests Global": "global_requests",
    "L2 Theoretical Sectors Global": "global_sectors",
    "L2 Theoretical Sectors Global Ideal": "global_sectors_ideal",
    "L1 Wavefronts Shared": "shared_wavefronts",
    "L1 Wavefronts Shared Ideal": "shared_wavefronts_ideal",
    "Divergent Branches": "divergent_branches",
}


@dataclass
class LineCounters:
    """The counters of one source line, summed over the kernels that run it."""

    file: str  # the file name line information gives (the MCPL file's, by #line)
    line: int
    values: dict[str, float] = field(default_factory=dict)

    def ratio(self, top: str, bottom: str) -> float | None:
        a, b = self.values.get(top), self.values.get(bottom)
        return a / b if a is not None and b else None

    @property
    def sectors_per_request(self) -> float | None:
        return self.ratio("global_sectors", "global_requests")

    @property
    def conflict_degree(self) -> float | None:
        return self.ratio("shared_wavefronts", "shared_wavefronts_ideal")


def parse_source_csv(text: str) -> dict[tuple[str, int], LineCounters]:
    """Counters by (file name, line) from a source page; empty where the page has no
    source lines (a kernel built without line information)."""
    lines: dict[tuple[str, int], LineCounters] = {}
    file = ""
    header: list[str] = []
    for row in csv.reader(io.StringIO(text)):
        if not row:
            continue
        if row[0] == "File Path" and len(row) > 1:
            file = PurePath(row[1]).name
        elif row[0] == "Line No":
            header = row
        elif header and row[0].strip().isdigit() and len(row) == len(header):
            number = int(row[0])
            counters = lines.setdefault((file, number), LineCounters(file, number))
            for column, cell in zip(header, row, strict=True):
                name = COLUMNS.get(column)
                if name is None or (value := parse_number(cell)) is None:
                    continue
                counters.values[name] = counters.values.get(name, 0.0) + value
    return lines


def for_file(lines: dict[tuple[str, int], LineCounters], name: str
             ) -> dict[int, LineCounters]:
    """The lines of the MCPL file `name` (its base name, as #line gives it)."""
    base = PurePath(name).name
    return {line: c for (file, line), c in lines.items() if file == base}
