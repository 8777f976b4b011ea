"""Property-based: mutated versions of valid descriptions (tokens deleted, duplicated,
swapped, identifiers renamed, numbers changed) never crash the loader — they load, or
they fail with diagnostics that have a place in the file."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from mcl.diagnostics import MclError, Severity
from mcl.hdl.library import load_library
from mcl.resources import hwdescs_dir
from tests.hdl.broken import MINI

TOKEN = re.compile(
    r'//[^\n]*|/\*.*?\*/|"[^"]*"|\(\s*[-+*/]\s*\)|\[\*\]|[A-Za-z_][A-Za-z0-9_]*|\d+|\S', re.S
)
SOURCES = {p.stem: p.read_text() for p in sorted(hwdescs_dir().glob("*.hdl"))}
SOURCES["mini"] = MINI
NAMES = ["threads", "thread", "main", "mem", "cores", "core", "gpu", "perfect", "device",
         "memory", "cache", "par_group", "slots", "space", "unlimited", "kB", "x", "B"]


def tokens(text: str) -> tuple[list[str], list[str]]:
    """The tokens of `text` and the text between them (len(gaps) == len(tokens) + 1)."""
    toks, gaps, last = [], [], 0
    for m in TOKEN.finditer(text):
        gaps.append(text[last : m.start()])
        toks.append(m.group())
        last = m.end()
    gaps.append(text[last:])
    return toks, gaps


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(SOURCES)))
    toks, gaps = tokens(SOURCES[name])
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(toks) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "rename", "swap", "number"]))
        if kind == "delete":
            toks[i] = ""
        elif kind == "duplicate":
            toks[i] = toks[i] + " " + toks[i]
        elif kind == "rename":
            ids = [j for j, t in enumerate(toks) if re.fullmatch(r"[A-Za-z_]\w*", t)]
            j = ids[i % len(ids)]
            toks[j] = draw(st.sampled_from(NAMES + [toks[j] + "x", toks[j][:-1] or "y"]))
        elif kind == "swap" and i + 1 < len(toks):
            toks[i], toks[i + 1] = toks[i + 1], toks[i]
        elif kind == "number":
            nums = [j for j, t in enumerate(toks) if t.isdigit()]
            if nums:
                toks[nums[i % len(nums)]] = str(draw(st.sampled_from([0, 1, 7, 10**30])))
    text = "".join(g + t for g, t in zip(gaps[:-1], toks, strict=True)) + gaps[-1]
    return name, text


@settings(max_examples=150, deadline=None)
@given(mutated())
def test_mutated_descriptions_give_diagnostics_not_crashes(case):
    name, text = case
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.hdl"
        path.write_text(text)
        try:
            lib = load_library([folder], use_env=False)
        except MclError as exc:
            errors = [d for d in exc.diagnostics if d.severity == Severity.ERROR]
            assert errors
            for d in exc.diagnostics:
                assert d.message and d.code.startswith("hdl-")
                if d.span is not None:
                    assert d.span.line >= 1 and d.span.column >= 1
                    assert Path(d.span.file).exists()
        else:
            for hwd in lib:  # whatever loaded answers the basic questions without crashing
                hwd.memory_spaces()
                hwd.nodes()
                for unit in hwd.par_units():
                    hwd.execution_units_for(unit.name)
                    hwd.lockstep(unit.name)
                for space in hwd.memory_spaces():
                    hwd.memories_for(space.name)
                    hwd.shared_by(space.name)
                    hwd.is_faster(space.name, hwd.memory_spaces()[0].name)
                hwd.has_host()
