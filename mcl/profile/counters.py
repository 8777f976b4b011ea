"""The hardware counters `mcl profile` asks Nsight Compute for, and the reading of its
CSV report (`ncu --import REPORT --csv --page raw --print-units base`): one row per
kernel launch, one column per metric, a second row of units. Nothing here runs ncu, so
the parsing is tested on recorded reports without a GPU (tests/profile/data).

Metric names are Nsight Compute's for compute capability 7.0 and later (its "Metrics
Reference"); each is listed with the figure of mcl's feedback it is held against.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass, field

from mcl.diagnostics import MclError, error

# metric -> what it measures, in the words docs/profile.md uses
METRICS: dict[str, str] = {
    "gpu__time_duration.sum": "kernel time (ns)",
    # with the time, the clocks it ran at: ncu locks the SM clock to base by default
    "gpc__cycles_elapsed.max": "SM clock cycles of the kernel (the slowest GPC)",
    "dram__cycles_elapsed.avg": "device-memory clock cycles of the kernel",
    "dram__bytes_read.sum": "bytes read from device memory",
    "dram__bytes_write.sum": "bytes written to device memory",
    "lts__t_sectors_srcunit_tex_op_write.sum": "32 B sectors the SMs wrote to the L2 cache",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "32 B sectors of global loads",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "global load requests (one a warp)",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "32 B sectors of global stores",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "global store requests",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum": "shared-load wavefronts",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum": "shared-store wavefronts",
    "smsp__sass_inst_executed_op_shared_ld.sum": "shared-load instructions (warps)",
    "smsp__sass_inst_executed_op_shared_st.sum": "shared-store instructions (warps)",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "bank conflicts of loads",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "bank conflicts of stores",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy (%)",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy (%)",
    "launch__registers_per_thread": "registers per thread",
    "launch__occupancy_limit_blocks": "blocks per SM allowed by the block slots",
    "launch__occupancy_limit_warps": "blocks per SM allowed by the warp slots",
    "launch__occupancy_limit_registers": "blocks per SM allowed by the registers",
    "launch__occupancy_limit_shared_mem": "blocks per SM allowed by shared memory",
    "launch__grid_size": "blocks in the grid",
    "launch__block_size": "threads per block",
    "smsp__sass_inst_executed_op_local_ld.sum": "local-memory loads (register spills)",
    "smsp__sass_inst_executed_op_local_st.sum": "local-memory stores (register spills)",
    "smsp__sass_average_branch_targets_threads_uniform.pct": "branch efficiency (%)",
    "smsp__sass_branch_targets_threads_divergent.sum": "divergent branch targets",
}

# Figures the SourceCounters section (which `mcl profile` asks for) adds to the raw page:
# read like the metrics, but not names `--metrics` takes.
SECTION_FIGURES: dict[str, str] = {
    "memory_l1_wavefronts_shared": "shared-memory wavefronts",
    "memory_l1_wavefronts_shared_ideal": "shared-memory wavefronts without bank conflicts "
    "(a 64-bit access takes 2, a 128-bit one 4)",
}

# The CSV columns that describe a launch rather than measure it.
KERNEL_NAME = "Kernel Name"
ID = "ID"


@dataclass(frozen=True)
class Pages:
    """The two CSV pages of a report: per launch (raw), and per source line (source; empty
    where none was recorded)."""

    raw: str
    source: str


@dataclass
class ProfiledLaunch:
    """One kernel launch of the report: its name and its metrics in base units."""

    kernel: str
    metrics: dict[str, float] = field(default_factory=dict)

    def get(self, metric: str) -> float | None:
        return self.metrics.get(metric)


def parse_number(text: str) -> float | None:
    """A value of the CSV: ncu writes thousands separators ("1,048,576") and "n/a" where a
    metric does not apply."""
    cleaned = text.strip().replace(",", "")
    if not cleaned or cleaned.lower() in ("n/a", "nan", "(!) n/a"):
        return None
    try:
        return float(cleaned)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[ProfiledLaunch]:
    """The launches of `ncu --csv --page raw` output. Lines before the header (ncu's own
    "==PROF==" notes, the program's output) are skipped; the row after the header that
    holds units is recognised by its empty ID."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(f'"{ID}",')), None)
    if start is None:
        raise MclError(error("profile-csv", "the Nsight Compute report has no table of "
                             "metrics (no header row starting with \"ID\")", None,
                             hint="did ncu profile any kernel? run the kernel with "
                             "`mcl run --backend cuda` to see its own errors"))
    rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    header, body = rows[0], rows[1:]
    launches = []
    for row in body:
        if len(row) != len(header):
            continue
        record = dict(zip(header, row, strict=True))
        if not record[ID].strip().isdigit():  # the units row
            continue
        metrics = {name: value for name, cell in record.items()
                   if name in METRICS or name in SECTION_FIGURES
                   if (value := parse_number(cell)) is not None}
        launches.append(ProfiledLaunch(record.get(KERNEL_NAME, ""), metrics))
    return launches


def totals(launches: list[ProfiledLaunch]) -> Mapping[str, float]:
    """The metrics of one run of a function, whatever its number of kernels: counts
    (".sum", bytes, time) add up; ratios, percentages and per-launch figures are taken
    from the longest launch, which dominates the run's time."""
    if not launches:
        return {}
    result: dict[str, float] = dict(_longest(launches).metrics)
    for name in (*METRICS, *SECTION_FIGURES):
        if name.endswith(".sum") or name in SECTION_FIGURES:  # counts
            values = [v for k in launches if (v := k.get(name)) is not None]
            if values:
                result[name] = sum(values)
    return result


def sm_clock_hz(launches: list[ProfiledLaunch]) -> float | None:
    """The SM clock the kernels ran at: the GPC cycles of the longest launch over its time
    (Nsight Compute locks the clock to base by default, `--clock-control base`, below the
    description's boost clock); None where the report lacks either."""
    if not launches:
        return None
    longest = _longest(launches)
    cycles, nanoseconds = (longest.get("gpc__cycles_elapsed.max"),
                           longest.get("gpu__time_duration.sum"))
    if not cycles or not nanoseconds:
        return None
    return cycles / (nanoseconds * 1e-9)


def _longest(launches: list[ProfiledLaunch]) -> ProfiledLaunch:
    """The launch that ran longest: the kernel whose figures stand for the run."""
    return max(launches, key=lambda k: k.get("gpu__time_duration.sum") or 0.0)
