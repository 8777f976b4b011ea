"""The barrier check (mcl/mcpl/barriers.py) against brute force: the tracer (brute.py)
runs a kernel phase by phase between barriers and logs every shared element each unit
touches; two units touching one element in one phase, one of them writing, is a race.
Correct barrier-synchronised algorithms (a work-efficient scan, a double-buffered scan,
a strided tile transpose) get no warning and have no race; their twins with a barrier
removed or an index wrong have races, and the check reports exactly the pairs of lines
that race."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
from brute import Trace, Tracer

from mcl.hdl.library import default_library
from mcl.mcpl import ast
from mcl.mcpl.check import check_program, integer_constants
from mcl.mcpl.loader import load_program
from mcl.mcpl.printer import print_expr

KERNELS = Path(__file__).resolve().parents[1] / "mcpl" / "barrier_kernels"


def _load(tmp_path: Path, name: str, edits: tuple[tuple[str, str, int], ...]) -> Any:
    """The kernel `name` with each (old, new, count) edit made exactly `count` times."""
    text = (KERNELS / f"{name}.mcpl").read_text(encoding="utf-8")
    for old, new, count in edits:
        assert text.count(old) >= count, old
        text = text.replace(old, new, count)
    path = tmp_path / f"{name}.mcpl"
    path.write_text(text, encoding="utf-8")
    return load_program(path, (), default_library())


def _warned_pairs(program: Any) -> set[frozenset[int]]:
    """The pairs of lines the check warns about (the second access and the line of the
    first, which its message names)."""
    found = set()
    for d in check_program(program, default_library()):
        if d.code == "mcpl-missing-barrier":
            first = int(re.search(r"at line (\d+),", d.message).group(1))
            found.add(frozenset((first, d.span.line)))
    return found


def _raced_pairs(program: Any, sizes: dict[str, int]) -> set[frozenset[int]]:
    """The pairs of lines of shared-array accesses that touch one element from different
    units in one phase between barriers, at least one of them a write."""
    function = program.main.functions[0]
    rng = np.random.default_rng(3)
    args: dict[str, Any] = dict(sizes)
    names = integer_constants(program.main) | sizes
    for p in function.params:
        if isinstance(p.type, ast.ArrayType):
            shape = tuple(int(eval(print_expr(d), {}, names))  # noqa: S307
                          for g in p.type.dims for d in g)
            args[p.name] = rng.random(shape)
    library = default_library()
    trace = Tracer(program, library.get(function.hwd)).run(function, args)
    units = {id(n) for n in ast.walk(function) if isinstance(n, ast.Foreach)}
    lines = {id(n): n.span.line for n in ast.walk(function) if getattr(n, "span", None)}
    return _races(trace, units, lines)


def _races(trace: Trace, units: set[int], lines: dict[int, int]) -> set[frozenset[int]]:
    found: set[frozenset[int]] = set()
    start = 0
    for end in [*trace.phases, len(trace.log)]:
        # element -> [(unit, line, writes)]
        touched: dict[tuple[int, tuple[int, ...]], list[tuple[tuple[int, ...], int, bool]]] = \
            defaultdict(list)
        for n in range(start, end):
            slot, index, values = trace.log[n]
            site = trace.slots[slot]
            if site.param is not None:
                continue  # device memory: not the barrier check's
            unit = tuple(v for loop, v in zip(site.loops, values, strict=True)
                         if loop in units)
            touched[(id(trace.memory[n][0]), index)].append(
                (unit, lines[site.node], "w" in site.mode))
        for accesses in touched.values():
            for unit, line, writes in accesses:
                if writes:
                    found |= {frozenset((line, other)) for u, other, _ in accesses
                              if u != unit}
        start = end
    return found


# Lines of a kernel by a snippet of their text.
Lines = tuple[tuple[str, str], ...]


class Twin(NamedTuple):
    """A correct kernel with `edits` made; `extra`: pairs of lines the check warns about
    although they do not race (it cannot relate `off` of one level to the next level's:
    the scan's `temp[2 * tid]` is even, another level's `temp[ai]` odd only when off > 1);
    `unseen`: racing pairs the check leaves out by design (accesses under a condition that
    picks units by equality, `if (tid == 0)`, docs/checker.md)."""

    edits: tuple[tuple[str, str, int], ...]
    extra: Lines = ()
    unseen: Lines = ()


CASES: dict[str, tuple[dict[str, int], dict[str, Twin]]] = {
    "blelloch_scan": ({"nb": 2}, {
        "up-sweep without its barrier": Twin(
            (("          barrier(shared);\n", "", 1),),
            extra=(("temp[2 * tid] = a", "temp[bi] += temp[ai]"),)),
        "down-sweep without its barrier": Twin(
            (("        for (int off = N / 2; off > 0; off /= 2) {\n          barrier(shared);\n",
              "        for (int off = N / 2; off > 0; off /= 2) {\n", 1),),
            extra=(("float x = temp[ai]", "temp[ai] = temp[bi]"),),
            unseen=(("temp[N - 1] = 0.0", "temp[ai] = temp[bi]"),
                    ("temp[N - 1] = 0.0", "temp[bi] += x"))),
        "bi one unit off": Twin((("tid < N / (2 * off)) {", "tid < N / (2 * off) - 1) {", 1),
                                 ("int bi = off * (2 * tid + 2) - 1;",
                                  "int bi = off * (2 * tid + 3) - 1;", 1))),
    }),
    "double_buffered_warps": ({"n": 512}, {
        "step without its barrier": Twin((("          barrier(shared);\n", "", 1),)),
        "written in place": Twin((("buf[dst, t] = buf[src, t] +",
                                   "buf[src, t] = buf[src, t] +", 1),)),
    }),
    "double_buffered_swapped": ({"n": 512}, {
        "step without its barrier": Twin((("          barrier(shared);\n", "", 1),)),
        "swapped into one half": Twin((("dst = 1 - src;", "dst = src;", 1),)),
    }),
    "double_buffered_modulo": ({"n": 2048}, {
        "step without its barrier": Twin((("          barrier(shared);\n        }", "        }",
                                           1),)),
        "loaded into the half it reads": Twin((("int nxt = 1 - cur;", "int nxt = cur;", 1),)),
    }),
    "strided_transpose": ({"n": 64}, {
        "without its barrier": Twin((("          barrier(shared);\n", "", 1),)),
        "stride 4 over 8 rows": Twin((("k < 32; k += 8", "k < 24; k += 4", 2),)),
    }),
}


def _pairs(source: str, lines: Lines) -> set[frozenset[int]]:
    text = source.splitlines()

    def line(snippet: str) -> int:
        found = [n + 1 for n, t in enumerate(text) if snippet in t]
        assert len(found) == 1, snippet
        return found[0]

    return {frozenset((line(a), line(b))) for a, b in lines}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_correct_synchronised_algorithm_has_no_race_and_no_warning(tmp_path, name):
    program = _load(tmp_path, name, ())
    sizes, _ = CASES[name]
    assert _raced_pairs(program, sizes) == set()
    assert _warned_pairs(program) == set()


@pytest.mark.parametrize(("name", "twin"), [(name, twin) for name, (_, twins) in
                                            sorted(CASES.items()) for twin in twins])
def test_a_planted_race_is_reported_at_the_lines_that_race(tmp_path, name, twin):
    sizes, twins = CASES[name]
    program = _load(tmp_path, name, twins[twin].edits)
    text = (tmp_path / f"{name}.mcpl").read_text(encoding="utf-8")
    raced = _raced_pairs(program, sizes)
    extra, unseen = _pairs(text, twins[twin].extra), _pairs(text, twins[twin].unseen)
    assert raced and unseen <= raced and not extra & raced
    assert _warned_pairs(program) == (raced - unseen) | extra
