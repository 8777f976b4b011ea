"""What checks each figure of the default view? Every shipped kernel (kernels/*/*.mcpl)
and every corpus kernel (benchmarks/unseen_corpus, benchmarks/validation_corpus) through
`mcl check FILE --level LEAF --format json` (feedback on, the default verbosity: the
messages marked `shown_by_default`), each value of each shown message a figure, and each
figure given a class and a check:

- `brute: agree` / `brute: bound and true` / `brute: DISAGREE`: held against the
  brute-force trace (tests/feedback/brute.py) of the same file at the same size, each of
  the two check sizes of the corpus manifest (corpus kernels only: a shipped kernel's view
  is taken without sizes, its figures are formulas, and it is not traced here); a file of
  a level above the leaves (gpu.mcpl) is viewed translated to hopper, and the figures per
  memory space or access site of that view are not checked (the trace runs the file as
  written, with its own spaces);
- `compiler`: the register count NVIDIA's compiler gave (NVRTC, cached);
- `estimate`: a figure of the time model (seconds, gains, the transfer time), to be read
  with the held-out error of docs/validation.md;
- `hardware`: a constant or quotient of the hardware description (banks, peaks, the
  occupancy limits built from them);
- `unchecked`: a count or ratio no check here covers (the reason is printed).

    PYTHONPATH=. python benchmarks/default_view_audit.py [--only SUBSTRING ...]

prints one line per figure and the totals. Exit status 1 when brute force contradicts a
figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "tests" / "feedback"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from warp_trace import conflict_degree  # noqa: E402

from benchmarks.unseen_corpus.corpus import Kernel, load_corpus  # noqa: E402
from benchmarks.unseen_counts import idiom_kernels, run, warp_instructions  # noqa: E402

LEAVES = ("hopper", "fermi", "x86_avx512", "xeon_phi")
# a file of a level above the leaves is viewed at the leaf below it the series aims at
LEAF_OF = {"mic": "xeon_phi", "gpu": "hopper", "nvidia": "hopper", "perfect": "hopper"}
WORD = 4
# messages whose figures are per memory space or per access site
BY_SPACE = ("roofline", "memory-access-optimal", "bank-conflict", "reuse-ratio",
            "reuse-independent", "reuse-neighbours")

# (code, value) -> class, for the figures no trace checks; a value not named here and not
# checked by brute force below is `unchecked`
ESTIMATE, HARDWARE, COMPILER, UNCHECKED = "estimate", "hardware", "compiler", "unchecked"
CLASSES: dict[str, dict[str, str]] = {
    "time-estimate": defaultdict(lambda: ESTIMATE, phases=UNCHECKED, warps_per_sm=HARDWARE,
                                 loads_in_flight=ESTIMATE),
    "transfers-total": {"seconds": ESTIMATE},
    "bank-conflict": {"estimated_seconds_after": ESTIMATE, "estimated_gain": ESTIMATE,
                      "transactions_saved": ESTIMATE, "banks": HARDWARE},
    "occupancy": defaultdict(lambda: HARDWARE, registers_per_thread=COMPILER,
                             registers_per_thread_estimate=ESTIMATE,
                             blocks_per_sm_estimated_registers=ESTIMATE),
    "roofline": {"attainable_gflops": HARDWARE},
}
LOWER = "brute: below, a lower bound not labelled as one"


@dataclass(frozen=True)
class Figure:
    file: str
    level: str
    sizes: str
    code: str
    line: int
    name: str
    value: Any  # the numeric value, or the formula where the view has no sizes
    check: str  # estimate, hardware, compiler, unchecked (why), or brute: verdict
    seen: Any = None  # brute force's value


def jobs() -> list[tuple[str, str, dict[str, int], Kernel | None]]:
    """(file, leaf, sizes, corpus kernel or None) for every file audited."""
    out: list[tuple[str, str, dict[str, int], Kernel | None]] = []
    for path in sorted((REPO / "kernels").glob("*/*.mcpl")):
        stem = path.stem.rsplit("_v", 1)[0]
        out.append((str(path.relative_to(REPO)), stem if stem in LEAVES else LEAF_OF[stem],
                    {}, None))
    for kernel in load_corpus() + idiom_kernels():
        for level in kernel.levels:
            for sizes in kernel.check:  # the second divides no tile or block
                out.append((str(kernel.path(level).relative_to(REPO)),
                            level if level in LEAVES else LEAF_OF[level], sizes, kernel))
    return out


def default_view(file: str, level: str, sizes: dict[str, int]) -> list[dict[str, Any]]:
    """The messages `mcl check` shows without --verbose."""
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    done = subprocess.run([sys.executable, "-m", "mcl", "check", file, "--level", level,
                           "--format", "json", *defines], capture_output=True, text=True,
                          cwd=REPO, check=False)
    return [m for m in json.loads(done.stdout)["messages"] if m["shown_by_default"]]


# ----------------------------------------------------------------------------- brute force


class Brute:
    """The trace of one corpus file at one size and what the figures are checked against."""

    def __init__(self, kernel: Kernel, level: str, sizes: dict[str, int], library: Any):
        self.r = run(kernel, level, sizes, library)
        trace, facts = self.r.trace, self.r.facts
        self.node_space = {id(a.node): a.space for a in facts.accesses}
        used = trace.per_slot()
        self.space_totals: Counter = Counter()
        for k, slot in enumerate(trace.slots):
            space = self.node_space.get(slot.node)
            if space is None or not facts.spaces.addressable(space) or not used[k]:
                continue
            for mode, kind in (("r", "loads"), ("w", "stores")):
                if mode in slot.mode:
                    self.space_totals[kind] += used[k]
                    self.space_totals[(space, kind)] += used[k]
        # per access node: element -> how often the site touched it
        self.per_element: dict[int, Counter] = defaultdict(Counter)
        self.distinct: dict[tuple[str, str], set] = defaultdict(set)
        for n, (k, index, _) in enumerate(trace.log):
            slot = trace.slots[k]
            array = id(trace.memory[n][0])
            self.per_element[slot.node][(array, index)] += 1
            space = self.node_space.get(slot.node)
            for mode in "rw":
                if mode in slot.mode and space is not None:
                    self.distinct[(space, mode)].add((array, index))
        args = run_args(self.r)
        self.param_bytes = {p: args[p].size * WORD for p in args if hasattr(args[p], "size")}

    def accesses_at(self, line: int, column: int) -> list[Any]:
        return [a for a in self.r.facts.accesses if a.node.span is not None
                and (a.node.span.line, a.node.span.column) == (line, column)]

    def check(self, m: dict[str, Any], name: str, value: Any) -> tuple[str, Any] | None:
        """(verdict, brute force's value) for a figure the trace can check, else None."""
        code, exact = m["code"], not m["approximate"]
        least = name.endswith("_least")
        key = name.removesuffix("_least")
        seen: Any = None
        if code == "opstats-summary" and key in ("loads", "stores", "data_accesses"):
            t = self.space_totals
            seen = t["loads"] + t["stores"] if key == "data_accesses" else t[key]
        elif code == "transfers-total" and key.startswith("bytes_"):
            trace = self.r.trace
            into = sum(self.param_bytes.get(p, 0) for p in trace.read_params)
            back = sum(self.param_bytes.get(p, 0) for p in trace.written_params)
            seen = {"bytes_in": into, "bytes_out": back, "bytes_total": into + back}[key]
            exact = True
        elif code == "bank-conflict" and key == "conflict_degree":
            seen = max((conflict_degree(g) for a in self.accesses_at(m["line"], m["column"])
                        for g in warp_instructions(self.r.trace, self.r.facts, a)), default=1)
            exact = True
        elif code == "memory-access-optimal" and key == "conflict_free":
            # per instruction (a read-modify-write site, `part[t] += ...`, issues a load
            # and a store) of the shared sites some unit runs: a site no unit of the
            # examined block reaches is not judged
            degrees = []
            for a in self.r.facts.accesses:
                groups = warp_instructions(self.r.trace, self.r.facts, a) \
                    if a.space == "shared" else []
                if groups:
                    degrees += [max(conflict_degree(g) for g in groups)] * len(a.mode)
            seen, exact = sum(d == 1 for d in degrees), True
            if seen != len(degrees):
                return "brute: DISAGREE", f"{seen} of {len(degrees)} conflict-free"
        elif code == "roofline" and key == "bytes_global":
            # compulsory traffic: every element read once and every element written once;
            # an array read through a subscript that depends on data counts nothing in
            # mcl's figure (mcl.feedback.analyses.roofline), which is then a lower bound,
            # as its text must say
            seen = WORD * (len(self.distinct[("global", "r")])
                           + len(self.distinct[("global", "w")]))
            if value is not None and not least and value < seen:
                labelled = "compulsory traffic, a lower bound" in m["message"]
                return ("brute: bound and true" if labelled else LOWER), seen
        elif code == "roofline" and key in ("bytes_global_no_reuse", "bytes_shared"):
            space = key.split("_")[1]  # every access moves its word
            seen = WORD * (self.space_totals[(space, "loads")]
                           + self.space_totals[(space, "stores")])
        elif code in ("reuse-independent", "reuse-ratio") and key in (
                "reuse", "accesses", "distinct", "ratio"):
            counts: Counter = Counter()
            for a in self.accesses_at(m["line"], m["column"]):
                counts.update(self.per_element[id(a.node)])
            if not counts:
                return None
            seen = {"reuse": max(counts.values()), "accesses": sum(counts.values()),
                    "distinct": len(counts),
                    "ratio": sum(counts.values()) / len(counts)}[key]
            exact = True
        else:
            return None
        if value is None:
            return "unchecked (no number at these sizes)", seen
        if least:
            ok = value <= seen
            return ("brute: bound and true" if ok else "brute: DISAGREE"), seen
        if exact:
            same = abs(value - seen) <= 1e-9 * max(1, abs(seen))
            return ("brute: agree" if same else "brute: DISAGREE"), seen
        return ("brute: bound and true" if value >= seen else "brute: DISAGREE"), seen


def run_args(r: Any) -> dict[str, Any]:
    from mcl.verify import load_reference, make_inputs

    _, args = make_inputs(load_reference(r.kernel.folder / "reference.py"), r.sizes, seed=1)
    return args


# ----------------------------------------------------------------------------- driver


def classify(m: dict[str, Any], name: str, brute: Brute | None) -> tuple[str, Any]:
    value = m["values"][name]["numeric"]
    if brute is not None:
        checked = brute.check(m, name, value)
        if checked is not None:
            return checked
    table = CLASSES.get(m["code"], {})
    kind = table[name] if name in table or isinstance(table, defaultdict) else UNCHECKED
    if kind != UNCHECKED:
        return kind, None
    why = "no trace of shipped kernels" if brute is None else "no brute-force check written"
    return f"unchecked ({why})", None


def audit(only: list[str]) -> list[Figure]:
    from mcl.hdl.library import default_library

    library = default_library()
    figures: list[Figure] = []
    for file, level, sizes, kernel in jobs():
        if only and not any(s in file for s in only):
            continue
        messages = default_view(file, level, sizes)
        brute = None
        source_level = Path(file).stem
        if kernel is not None and any(m["values"] for m in messages):
            brute = Brute(kernel, source_level, sizes, library)
        for m in messages:
            for name, v in m["values"].items():
                if brute is not None and source_level != level and m["code"] in BY_SPACE:
                    # the view is of the translated file, whose memory spaces the trace
                    # of the file as written does not have
                    check, seen = f"unchecked (viewed after translation to {level})", None
                else:
                    check, seen = classify(m, name, brute)
                value = v["numeric"] if v["numeric"] is not None else v["symbolic"]
                text = ", ".join(f"{k}={v}" for k, v in sizes.items())
                figures.append(Figure(file, level, text, m["code"], m["line"], name, value,
                                      check, seen))
    return figures


def totals(figures: list[Figure]) -> Counter:
    return Counter(f.check.split(" (")[0] for f in figures)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=[], help="files containing these")
    options = parser.parse_args(argv)
    figures = audit(options.only)
    current = None
    for f in figures:
        if (f.file, f.level, f.sizes) != current:
            current = (f.file, f.level, f.sizes)
            print(f"\n## {f.file} at {f.level}" + (f" ({f.sizes})" if f.sizes else ""))
        seen = "" if f.seen is None else f" (brute force {f.seen})"
        print(f"  {f.code}:{f.line} {f.name} = {f.value}: {f.check}{seen}")
    views = len({(f.file, f.level, f.sizes) for f in figures})
    print(f"\nTotals over {views} views (file, leaf, sizes) with figures, {len(figures)} "
          "figures:")
    for check, n in sorted(totals(figures).items()):
        print(f"  {check}: {n}")
    print("\nBy check and reason:")
    for check, n in sorted(Counter(f.check for f in figures).items()):
        print(f"  {check}: {n}")
    print("\nBy message and check:")
    for (code, check), n in sorted(Counter((f.code, f.check.split(" (")[0])
                                           for f in figures).items()):
        print(f"  {code}, {check}: {n}")
    print(f"\nCorpus files (traced): {len({f.file for f in figures if 'kernels/' not in f.file})},"
          f" shipped files: {len({f.file for f in figures if f.file.startswith('kernels/')})}")
    return 1 if any("DISAGREE" in f.check for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
