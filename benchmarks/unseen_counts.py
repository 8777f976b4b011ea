"""Are mcl's counts right on kernels it has never seen? Every kernel of the unseen corpus
(benchmarks/unseen_corpus/, docs/validation.md) at each of its levels and at its two
check sizes, held against a brute-force trace that runs every unit
(tests/feedback/brute.py):

- operation counts: how often every statement, `if` and loop header runs (each item of
  the feedback's facts against the trace's counter);
- loads and stores per memory space: the `opstats-memory` figures against the accesses
  the trace logs in each addressable space;
- bank-conflict degree per shared access (levels with banks: hopper): the
  `bank-conflict` message's degree (1 without one) against the most distinct words one
  bank serves in any warp of the first block that reaches the access, in any iteration
  of the loops around it;
- race alarms: the lines of `mcpl-missing-barrier` and `mcpl-write-race` against the
  lines of the accesses the trace finds racing (two units touch one element in one
  phase between barriers, one of them writing, not both atomically).

Each figure is `agree` (equal), `bound and true` (the feedback marks it as an upper
bound and it is not below the trace), `not stated` (the feedback gives no number: a
count that depends on data, such as a loop over a row of a CSR matrix) or `disagree`.

    PYTHONPATH=. python benchmarks/unseen_counts.py [--kernels NAME ...] [--json FILE]

prints a table per kernel and the disagreements; `--json` writes every row. Exit status
0 when nothing disagrees, 1 otherwise.
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "tests" / "feedback"):  # brute.py and its helpers live there
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402
from brute import Trace, Tracer  # noqa: E402
from warp_trace import conflict_degree, numeric_values  # noqa: E402

from benchmarks.unseen_corpus.corpus import Kernel, load_corpus  # noqa: E402
from mcl import pipeline  # noqa: E402
from mcl.feedback.facts.costs import executions  # noqa: E402
from mcl.feedback.facts.kernel import COND, COUNT, IF, INIT, STEP, STMT, build_facts  # noqa: E402
from mcl.feedback.messages import Message  # noqa: E402
from mcl.feedback.registry import analyse  # noqa: E402
from mcl.feedback.values import evaluate  # noqa: E402
from mcl.mcpl import ast  # noqa: E402
from mcl.mcpl.check import check_program  # noqa: E402
from mcl.mcpl.loader import load_program  # noqa: E402
from mcl.mcpl.printer import print_expr  # noqa: E402
from mcl.verify import load_reference, make_inputs  # noqa: E402

AGREE, BOUND, UNSTATED, DISAGREE = "agree", "bound and true", "not stated", "disagree"
VERDICTS = (AGREE, BOUND, UNSTATED, DISAGREE)
WARP, WORD = 32, 4
FIGURES = ("operation counts", "memory accesses", "bank conflicts", "race alarms")
RACE_CODES = ("mcpl-missing-barrier", "mcpl-write-race")
_TRACE_KIND = {STMT: "stmt", IF: "if", INIT: "init", COND: "cond", STEP: "step",
               COUNT: "count"}


@dataclass(frozen=True)
class Row:
    """One figure of one kernel at one level and size, mcl's value against the trace's."""

    kernel: str
    level: str
    sizes: str
    figure: str  # one of FIGURES
    what: str
    mcl: str
    brute: str
    verdict: str


@dataclass
class _Run:
    """One kernel file traced and analysed at one size."""

    kernel: Kernel
    level: str
    sizes: dict[str, int]
    program: Any
    function: ast.Function
    facts: Any
    trace: Trace
    messages: list[Message]
    diagnostics: list[Any]

    def row(self, figure: str, what: str, mcl: object, brute: object, verdict: str) -> Row:
        text = ", ".join(f"{k}={v}" for k, v in self.sizes.items())
        return Row(self.kernel.name, self.level, text, figure, what, str(mcl), str(brute),
                   verdict)


def run(kernel: Kernel, level: str, sizes: dict[str, int], library: Any) -> _Run:
    program = load_program(kernel.path(level), (), library)
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    reference = load_reference(kernel.folder / "reference.py")
    _, args = make_inputs(reference, sizes, seed=1)
    trace = Tracer(program, hwd).run(function, args)
    checked = pipeline.check(program, library)
    facts = build_facts(function, checked, hwd)
    return _Run(kernel, level, sizes, program, function, facts, trace,
                analyse(function, checked, hwd, sizes), check_program(program, library))


def compare(kernel: Kernel, level: str, sizes: dict[str, int], library: Any) -> list[Row]:
    """Every figure of `kernel` at `level` and `sizes` against the trace."""
    traced = run(kernel, level, sizes, library)
    rows = operation_counts(traced) + memory_accesses(traced)
    if library.get(traced.function.hwd).name == "hopper":  # the level with a bank model
        rows += bank_conflicts(traced)
    return rows + race_alarms(traced)


# ----------------------------------------------------------------------------- figures


def _verdict(value: Any, seen: int, exact: bool) -> str:
    if value is None:
        return UNSTATED
    if exact:
        return AGREE if value == seen else DISAGREE
    return BOUND if value is not None and value >= seen else DISAGREE


def operation_counts(r: _Run) -> list[Row]:
    """Every item (statement, `if`, loop header) of the facts: its count at the sizes
    against the trace's."""
    rows = []
    for item in r.facts.items:
        count, exact, _ = executions(r.facts, item)
        value = evaluate(count, r.sizes).numeric
        seen = r.trace.counts[(id(item.node), _TRACE_KIND[item.kind])]
        line = item.span.line if item.span is not None else 0
        rows.append(r.row("operation counts", f"{item.kind} line {line}",
                          value if exact else f"<= {value}", seen,
                          _verdict(value, seen, exact)))
    return rows


_SPACE = re.compile(r"memory space (\w+):")


def memory_accesses(r: _Run) -> list[Row]:
    """Loads and stores per addressable memory space: the `opstats-memory` figures (upper
    bounds where `opstats-approximate` says so) against the trace's accesses."""
    stated: dict[tuple[str, str], Any] = {}
    for m in r.messages:
        found = _SPACE.search(m.text) if m.code == "opstats-memory" else None
        if found is not None:
            values = numeric_values(m)
            for kind in ("loads", "stores"):
                stated[(found[1], kind)] = values.get(kind)
    exact = not any(m.code == "opstats-approximate" for m in r.messages)
    space_of = {id(a.node): a.space for a in r.facts.accesses
                if r.facts.spaces.addressable(a.space)}
    seen: dict[tuple[str, str], int] = defaultdict(int)
    used = r.trace.per_slot()
    for k, slot in enumerate(r.trace.slots):
        space = space_of.get(slot.node)
        if space is None or not used[k]:
            continue
        if "r" in slot.mode:
            seen[(space, "loads")] += used[k]
        if "w" in slot.mode:
            seen[(space, "stores")] += used[k]
    rows = []
    for key in sorted(set(stated) | set(seen)):
        value = stated.get(key, 0)
        rows.append(r.row("memory accesses", f"{key[1]} of {key[0]}",
                          value if exact else f"<= {value}", seen[key],
                          _verdict(value, seen[key], exact)))
    return rows


def bank_conflicts(r: _Run) -> list[Row]:
    """Per shared access: the `bank-conflict` message's degree (1 without one) against
    the worst warp of the first block over every iteration of the loops around it."""
    reported = {(m.span.line, m.span.column): numeric_values(m)["conflict_degree"]
                for m in r.messages if m.code == "bank-conflict" and m.span is not None}
    rows = []
    for access in r.facts.accesses:
        span = access.node.span
        if access.space != "shared" or span is None:
            continue
        groups = warp_instructions(r.trace, r.facts, access)
        if not groups:
            continue
        degree = max(conflict_degree(a) for a in groups)
        stated = reported.get((span.line, span.column), 1)
        kind = "load" if access.mode[0] == "r" else "store"
        rows.append(r.row("bank conflicts", f"{kind} of {print_expr(access.node)} line "
                          f"{span.line}", stated, degree,
                          AGREE if stated == degree else DISAGREE))
    return rows


def warp_instructions(trace: Trace, facts: Any, access: Any) -> list[list[int]]:
    """The byte addresses of each warp instruction at one access site in the first block
    that reaches it (a stencil's first blocks may hold only boundary points):
    the lanes of a warp (32 consecutive units, threads fastest) that access it in the same
    iteration of the loops around it. A loop whose values no two lanes share (a
    grid-stride loop, `i = tid; i < n; i += stride`) is told by its trip, the rank of the
    value in the order the lane met it, as the lanes of a warp run it in lock step."""
    loops = {id(x.node): x for x in facts.loops}
    lanes: dict[int, list[tuple[int, tuple[int, ...], int]]] = defaultdict(list)
    first: tuple[int, ...] | None = None
    for n, (slot_number, index, values) in enumerate(trace.log):
        slot = trace.slots[slot_number]
        if slot.node != id(access.node) or access.mode[0] not in slot.mode:
            continue
        pairs = list(zip(slot.loops, values, strict=True))
        block = tuple(v for k, v in pairs if loops[k].group == "blocks")
        first = block if first is None else first
        if block != first:
            continue  # the first block that reaches the site only
        at = {loops[k].group: v for k, v in pairs if loops[k].kind == "foreach"}
        lane = at.get("warps", 0) * WARP + at.get("threads", 0)
        iteration = tuple(v for k, v in pairs if loops[k].kind != "foreach")
        array = trace.memory[n][0]
        address = int(np.ravel_multi_index(index, array.shape)) * WORD
        lanes[lane // WARP].append((lane, iteration, address))
    groups: list[list[int]] = []
    for entries in lanes.values():
        keys = trip_keys(entries)
        per_instruction: dict[tuple[int, ...], list[int]] = defaultdict(list)
        for key, (_, _, address) in zip(keys, entries, strict=True):
            per_instruction[key].append(address)
        groups += per_instruction.values()
    return groups


def trip_keys(entries: list[tuple[int, tuple[int, ...], int]]) -> list[tuple[int, ...]]:
    """Per entry (lane, loop values, address) of one warp: the loop values, with the value
    of a loop no two lanes share replaced by its rank in the lane's own order."""
    depth = len(entries[0][1]) if entries else 0
    seen: dict[int, list[dict[int, int]]] = defaultdict(lambda: [{} for _ in range(depth)])
    for lane, values, _ in entries:
        for p, v in enumerate(values):
            seen[lane][p].setdefault(v, len(seen[lane][p]))
    by_trip = []
    for p in range(depth):
        sets = [set(per[p]) for per in seen.values()]
        union = set().union(*sets)
        by_trip.append(len(sets) > 1 and len(union) == sum(len(x) for x in sets))
    return [tuple(seen[lane][p][v] if by_trip[p] else v for p, v in enumerate(values))
            for lane, values, _ in entries]


def race_alarms(r: _Run) -> list[Row]:
    """The lines the race alarms name against the lines of the accesses the trace finds
    racing; one row per kernel."""
    alarmed: set[int] = set()
    for d in r.diagnostics:
        if d.code in RACE_CODES and d.span is not None:
            alarmed.add(d.span.line)
            alarmed.update(int(x) for x in re.findall(r"at line (\d+)", d.message))
    racing = traced_races(r.trace, r.function)
    verdict = AGREE if alarmed == racing else DISAGREE
    return [r.row("race alarms", "lines", sorted(alarmed) or "none", sorted(racing) or "none",
                  verdict)]


def traced_races(trace: Trace, function: ast.Function) -> set[int]:
    """The source lines of accesses that race in the trace: two different units touch the
    same element of the same array in one phase (between two marks of `trace.phases`),
    at least one writing, not both through an atomic function."""
    nodes = {id(n): n for n in ast.walk(function)}
    units = {id(n) for n in nodes.values() if isinstance(n, ast.Foreach)}
    atomic = {id(n.args[0]) for n in nodes.values()
              if isinstance(n, ast.Call) and n.func.startswith("atomic") and n.args}
    groups: dict[tuple[int, int, tuple[int, ...]], list[tuple[tuple[int, ...], bool, bool, int]]]
    groups = defaultdict(list)
    for n, (slot_number, index, values) in enumerate(trace.log):
        slot = trace.slots[slot_number]
        unit = tuple(v for loop, v in zip(slot.loops, values, strict=True) if loop in units)
        span = nodes[slot.node].span if slot.node in nodes else None
        phase = bisect.bisect_right(trace.phases, n)
        groups[(phase, id(trace.memory[n][0]), index)].append(
            (unit, "w" in slot.mode, slot.node in atomic, span.line if span else 0))
    lines: set[int] = set()
    for accesses in groups.values():
        writers = [a for a in accesses if a[1]]
        for w in writers:
            for other in accesses:
                if other[0] != w[0] and not (w[2] and other[2]):
                    lines.update((w[3], other[3]))
    return lines


# ----------------------------------------------------------------------------- driver


# The idiom corpus of the feedback validation (benchmarks/validation_corpus/, the cases
# `idiom-NAME` of benchmarks/validate_feedback.py): its second check size beside its
# reference's, one that divides no tile or block (partial blocks, rows that start off a
# sector).
IDIOMS = REPO / "benchmarks" / "validation_corpus"
UNEVEN = {
    "scan": {"n": 1500},
    "stencil": {"h": 19, "w": 45},
    "batched_gemm": {"nb": 3, "m": 8},
    "ell_spmv": {"n": 301, "ncols": 53, "width": 5},
    "softmax": {"rows": 5, "m": 1025},
}


@dataclass(frozen=True)
class IdiomKernel(Kernel):
    """A kernel of the idiom corpus, checked at its reference's sizes and at UNEVEN."""

    @property
    def folder(self) -> Path:
        return IDIOMS / self.name


def idiom_kernels() -> list[Kernel]:
    """The idiom corpus as kernels of one level (hopper), in name order."""
    from benchmarks.validate_feedback import CORPUS

    return [IdiomKernel(name, "idiom", "", ("hopper",), False,
                        (dict(load_reference(IDIOMS / name / "reference.py").sizes),
                         UNEVEN[name]), dict(CORPUS[name]))
            for name in sorted(UNEVEN)]


def compare_corpus(kernels: Iterable[Kernel], library: Any) -> list[Row]:
    rows: list[Row] = []
    for kernel in kernels:
        for level in kernel.levels:
            for sizes in kernel.check:
                rows += compare(kernel, level, sizes, library)
    return rows


def summary(rows: list[Row]) -> list[dict[str, Any]]:
    """Per kernel and level: for each figure, how many rows have each verdict (over both
    sizes)."""
    table: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
    for row in rows:
        cell = table.setdefault((row.kernel, row.level), {}).setdefault(
            row.figure, dict.fromkeys(VERDICTS, 0))
        cell[row.verdict] += 1
    return [{"kernel": k, "level": lv, "figures": figures}
            for (k, lv), figures in sorted(table.items())]


def table_text(rows: list[Row]) -> str:
    """A markdown table, a row per kernel and level, a column per figure: the counts of
    each verdict, then the disagreements one per line."""
    lines = ["| kernel | level | " + " | ".join(FIGURES) + " |",
             "|---|---|" + "---:|" * len(FIGURES)]
    for entry in summary(rows):
        cells = []
        for figure in FIGURES:
            c = entry["figures"].get(figure)
            cells.append("-" if c is None else " / ".join(str(c[v]) for v in VERDICTS))
        lines.append(f"| {entry['kernel']} | {entry['level']} | {' | '.join(cells)} |")
    lines.append("")
    lines.append("(each cell: agree / marked as a bound and true / not stated / disagree)")
    wrong = [r for r in rows if r.verdict == DISAGREE]
    if wrong:
        lines += ["", "Disagreements:"]
        lines += [f"- {r.kernel} {r.level} ({r.sizes}) {r.figure}, {r.what}: mcl {r.mcl}, "
                  f"brute force {r.brute}" for r in wrong]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from mcl.hdl.library import default_library

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="*", default=[], help="only these kernels")
    parser.add_argument("--json", type=Path, help="write every row here")
    options = parser.parse_args(argv)
    kernels = [k for k in load_corpus() + idiom_kernels()
               if not options.kernels or k.name in options.kernels]
    rows = compare_corpus(kernels, default_library())
    print(table_text(rows))
    if options.json is not None:
        options.json.write_text(json.dumps({"summary": summary(rows),
                                            "rows": [asdict(r) for r in rows]}, indent=1))
    return 1 if any(r.verdict == DISAGREE for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
