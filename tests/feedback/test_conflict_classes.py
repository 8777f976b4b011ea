"""The bank-conflict survey computes one iteration of each class that costs alike
(mcl.feedback.conflict_classes) instead of every iteration; its figures are those of the
full walk. Each survey of these kernels is made both ways and compared: the shipped
kernels and the unseen corpus (slow), and a few kernels with one trait each (a
double-buffered tile, a phase guard, a move that is not a multiple of the banks, a
scan's levels, a loop mixed with the lanes), generated with Hypothesis."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcl.feedback import lockstep
from mcl.feedback.conflict_classes import IterationClasses
from mcl.feedback.stage import FeedbackOptions
from mcl.hdl.library import load_library
from mcl.pipeline import check_source

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted((REPO / "kernels").rglob("*.mcpl"))
UNSEEN = sorted((REPO / "benchmarks" / "unseen_corpus").glob("*/*.mcpl"))
SCAN = REPO / "tests" / "mcpl" / "barrier_kernels" / "blelloch_scan.mcpl"
SIZES = ("n=2048", "m=2048", "p=2048", "nb=2")


@pytest.fixture(scope="module")
def library():
    return load_library(partial=True)


def _outcome(survey: Callable[..., Any], *args: Any) -> tuple[Any, BaseException | None]:
    """What `survey(*args)` returns, or the exception it raises."""
    try:
        return survey(*args), None
    except Exception as exc:  # noqa: BLE001 - compared: the same exception both ways
        return None, exc


def _same(a: tuple[Any, BaseException | None], b: tuple[Any, BaseException | None]) -> bool:
    if a[1] is not None or b[1] is not None:
        return type(a[1]) is type(b[1]) and str(a[1]) == str(b[1])
    return a[0] == b[0]


class Compared:
    """Every `conflict_survey` made with the classes and with every iteration computed;
    `surveys` counts them, `reused` the iterations a class spared, `differ` the accesses
    whose surveys differ (an assertion inside a feedback function would become its
    warning, mcl.feedback.analyses.functions.call_function)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.surveys = 0
        self.reused = 0
        self.differ: list[str] = []
        real = lockstep.conflict_survey
        key = IterationClasses.key

        def counted(classes: IterationClasses, kernel: Any, point: Any) -> Hashable | None:
            found = key(classes, kernel, point)
            if found is not None:
                self.seen.append(found)
            return found

        def both(kernel: Any, warp: Any, instruction: Any, banks: int) -> Any:
            self.seen: list[Hashable] = []
            fast = _outcome(real, kernel, warp, instruction, banks)
            self.reused += len(self.seen) - len(set(self.seen))
            with pytest.MonkeyPatch.context() as full:
                full.setattr(IterationClasses, "of", classmethod(lambda cls, *a: None))
                slow = _outcome(real, kernel, warp, instruction, banks)
            if not _same(fast, slow):
                self.differ.append(instruction.text)
            self.surveys += 1
            if fast[1] is not None:
                raise fast[1]
            return fast[0]

        monkeypatch.setattr(IterationClasses, "key", counted)
        # (each survey made twice: the full walk must not run out of the budget)
        monkeypatch.setenv("MCL_FEEDBACK_BUDGET", "1000")
        monkeypatch.setattr(lockstep, "conflict_survey", both)


def _feedback(path: Path, library: Any, sizes: tuple[str, ...] = SIZES) -> Any:
    return check_source(path, [], library, None, FeedbackOptions(defines=sizes))


@pytest.mark.parametrize("kernel", ["matmul/hopper_v2", "matmul/hopper_v3",
                                    "convolution/hopper_v2"])
def test_the_shipped_tiles_classes_give_the_full_walks_survey(monkeypatch, library, kernel):
    compared = Compared(monkeypatch)
    found = _feedback(REPO / "kernels" / f"{kernel}.mcpl", library)
    assert found.feedback is not None and found.feedback.messages
    assert compared.surveys and compared.reused > 0 and not compared.differ


def test_a_scans_levels_are_each_computed(monkeypatch, library):
    """`ai = off * (2 * tid + 1) - 1` mixes the level's counter with the lanes': no class
    holds two levels, and the survey is the full walk's."""
    compared = Compared(monkeypatch)
    found = _feedback(SCAN, library, ("nb=2",))
    assert found.feedback is not None
    assert [m for m in found.feedback.messages if m.code == "bank-conflict"]
    assert compared.surveys and not compared.differ


@pytest.mark.slow
@pytest.mark.parametrize("path", KERNELS + UNSEEN,
                         ids=[str(p.relative_to(REPO)) for p in KERNELS + UNSEEN])
def test_every_kernels_classes_give_the_full_walks_survey(monkeypatch, library, path):
    compared = Compared(monkeypatch)
    _feedback(path, library)
    assert not compared.differ


# A block of WARPS warps walks `phases` iterations of l; the access reads a tile chosen by
# the phase (`l % buffers`, a double or triple buffer), moved by `step` words a phase and
# `lane` words a thread, under a phase guard or one of the lanes.
TEMPLATE = """
hopper void tiles(int n, global float[n, 64] out) {{
  foreach (int b in n blocks) {{
    shared float[{size}] tile;
    foreach (int w in 2 warps) {{
      foreach (int t in 32 threads) {{
        float s = 0.0;
        tile[w * 32 + t] = 1.0;
        barrier(shared);
        for (int l = 0; l < {phases}; l++) {{
          for (int k = 0; k < {inner}; k++) {{
            if ({guard}) {{
              s += tile[{index}];
            }}
          }}
          barrier(shared);
        }}
        out[b, w * 32 + t] = s;
      }}
    }}
  }}
}}
"""
GUARDS = ["true", "l + 1 < {phases}", "l % 3 != 1", "t < 16", "t < l + 2", "w * 32 + t > l"]


def tiles_source(phases: int, inner: int, buffers: int, step: int, lane: int, mixed: bool,
                 guard: str) -> str:
    parts = [f"{lane} * t", f"{step} * l", f"128 * (l % {buffers})", "k"]
    if mixed:  # the phase's counter times the lane's
        parts.append("(l % 4) * t")
    return TEMPLATE.format(size=lane * 32 + step * phases + 128 * buffers + 3 * 32 + inner,
                           phases=phases, inner=inner, guard=guard.format(phases=phases),
                           index=" + ".join(parts))


tiles = st.builds(tiles_source, st.integers(2, 40), st.sampled_from([1, 2, 4]),
                  st.integers(1, 3), st.sampled_from([0, 1, 2, 8, 32, 33, 64, 96]),
                  st.sampled_from([1, 2, 4, 32, 33]), st.booleans(), st.sampled_from(GUARDS))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(source=tiles)
# a 4-way conflict read as 128-bit loads where the phase keeps them aligned (l % 4 == 0):
# a move of one word a phase is a class of its own until 32 words
@example(source=tiles_source(40, 4, 1, 1, 4, False, "true"))
# matmul's double-buffered tiles under the phase guard: two classes
@example(source=tiles_source(12, 4, 2, 0, 4, False, GUARDS[1]))
# a move of 32 words: one class; then mixed with the lanes: every phase its own
@example(source=tiles_source(9, 2, 1, 32, 2, False, "l % 3 != 1"))
@example(source=tiles_source(9, 2, 1, 32, 2, True, "t < l + 2"))
def test_generated_tiles_classes_give_the_full_walks_survey(tmp_path, library, source):
    path = tmp_path / "tiles.mcpl"
    path.write_text(source)
    with pytest.MonkeyPatch.context() as monkeypatch:
        compared = Compared(monkeypatch)
        found = _feedback(path, library, ("n=2",))
    assert not [d for d in found.diagnostics if d.severity.value == "error"], source
    assert compared.surveys and not compared.differ, source
