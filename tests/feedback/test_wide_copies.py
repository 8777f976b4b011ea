"""A copy loop that code generation issues as one wide access per thread is judged as
that access (mcl.feedback.lockstep, mcl.feedback.compiler_vectors; docs/feedback.md,
"Coalescing"): Black-Scholes hopper_v2's `call[g * VEC + c] = rc[e * VEC + c]` is one
128-bit store per thread (STG.E.128 in NVRTC's code), whose 32 lanes fill 16 sectors of
32 B, not 32 stores of 4 B standing 16 B apart. A store whose lanes stand apart in the
request the hardware sees keeps its finding and its partial-sector writes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import KERNELS, by_code, feedback, feedback_source

from mcl.backends.wide_copies import wide_copies
from mcl.cli import main
from mcl.feedback import compiler_vectors
from mcl.feedback.analyses.timemodel import PARTIAL_WRITES

HOPPER_V2 = KERNELS / "blackscholes" / "hopper_v2.mcpl"
OPTIONS = {"n": 4_000_000}
KEY = "seconds_" + PARTIAL_WRITES.replace(" ", "_").replace("-", "_")

# A thread's 4 elements stored at g * 4 + 1 + c: contiguous, but not 16-byte aligned, so
# no aligned vector copy (CUDA keeps the loop, OpenCL a vstore4 the compiler may split).
UNALIGNED = """
const int VEC = 4;
hopper void shift(int n, global float[n * 4 + 4] out, global float[n * 4] a) {
  foreach (int b in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int g = (b * 8 + w) * 32 + t;
        reg float[VEC] r;
        for (int c = 0; c < VEC; c++) {
          r[c] = a[g * VEC + c];
        }
        for (int c = 0; c < VEC; c++) {
          out[g * VEC + 1 + c] = r[c];
        }
      }
    }
  }
}
"""


@pytest.fixture
def finder() -> Iterator[None]:
    """The command line's finder: the loops the generated code has as vector copies."""
    compiler_vectors.use_finder(wide_copies)
    yield
    compiler_vectors.use_finder(None)


def _estimate(messages: list) -> dict:
    (found,) = by_code(messages, "time-estimate")
    return {k: v.numeric for k, v in found.values}


def test_the_generated_code_names_its_vector_copies() -> None:
    """Code generation records each copy it makes one aligned vector access: hopper_v2's
    three loads and two stores of 16 B, not the guarded element-by-element loops."""
    from conftest import load_kernel

    from mcl import pipeline
    from mcl.backends import generate_module

    program, library = load_kernel(HOPPER_V2)
    generated = generate_module(pipeline.check(program, library), "hopper", library)
    lines = HOPPER_V2.read_text().splitlines()
    # the loops whose body is one copy of `g * VEC + c` (the others hold an `if`)
    copies = [k + 1 for k, text in enumerate(lines) if text.strip().startswith(
        "for (int c") and "[g * VEC + c]" in lines[k + 1] and "if" not in lines[k + 1]]
    assert len(copies) == 5
    assert sorted((s.line, b) for s, b in generated.wide_copies.items()) == [
        (line, 16) for line in copies]


def test_hopper_v2_s_vector_stores_are_coalesced(finder) -> None:
    messages = feedback(HOPPER_V2, values=OPTIONS)
    assert not by_code(messages, "uncoalesced")
    (optimal,) = by_code(messages, "memory-access-optimal")
    assert dict(optimal.values)["coalesced"].numeric == 5
    values = _estimate(messages)
    assert KEY not in values
    # device memory limits it: its 80 MB (measured 31.4 µs on an H100,
    # benchmarks/results/2026-12-07-h100-shipped-best-r11b.txt)
    assert values["estimated_seconds"] == pytest.approx(
        values["seconds_device_memory"] + values["seconds_launch"], rel=0.01)


def test_the_default_view_of_hopper_v2(capsys) -> None:
    """`mcl check` hands the feedback code generation's vector copies."""
    assert main(["check", str(HOPPER_V2), "--level", "hopper", "-D", "n=4000000"]) == 0
    out = capsys.readouterr().out
    assert "uncoalesced" not in out
    assert "not coalesced" not in out
    assert "partial-sector writes" not in out
    assert "time estimate: " in out and "limited by device memory" in out


@pytest.mark.parametrize("path", [KERNELS / "transpose" / "perfect.mcpl",
                                  KERNELS.parent / "tests" / "refine" / "kernels"
                                  / "colscale.mcpl"], ids=["transpose", "colscale"])
def test_a_scalar_column_store_keeps_its_finding_and_partial_writes(finder, path) -> None:
    messages = feedback(path, "hopper", values={"n": 8192, "m": 8192})
    (store,) = [m for m in by_code(messages, "uncoalesced") if "store" in m.text]
    assert dict(store.values)["lines"].numeric == 32
    assert "estimated_gain" in dict(store.values)
    assert _estimate(messages)[KEY] > 0


def test_an_unaligned_copy_is_judged_element_by_element(finder) -> None:
    """No aligned vector copy: each iteration's store is its own request, 32 lanes 16 B
    apart (more sectors than the 5 its bytes need), with its gain and partial writes."""
    messages = feedback_source(UNALIGNED, "hopper", {"n": 1 << 20})
    (store,) = [m for m in by_code(messages, "uncoalesced") if "store" in m.text]
    values = dict(store.values)
    assert values["lines"].numeric > values["minimum_lines"].numeric
    assert "estimated_gain" in values
    assert KEY in _estimate(messages)
    assert not [m for m in by_code(messages, "uncoalesced") if "load" in m.text]


def test_without_a_finder_no_gain_is_promised() -> None:
    """Without code generation (the editor, a direct call) hopper_v2's stores are judged
    element by element, as facts that state no gain and add nothing to the estimate:
    whether they are one wide access is not known."""
    messages = feedback(HOPPER_V2, values=OPTIONS)
    stores = by_code(messages, "uncoalesced")
    assert len(stores) == 2
    for store in stores:
        assert store.severity.name == "INFO"
        assert "not known here" in store.text
        assert "estimated_gain" not in dict(store.values)
    assert KEY not in _estimate(messages)
