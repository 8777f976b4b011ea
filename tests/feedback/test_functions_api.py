"""The `Kernel` object performance feedback functions receive (paper 6.5): description
values, context, memory instructions, and the on-demand evaluator."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl import pipeline
from mcl.diagnostics import Severity as DiagnosticSeverity
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.kernel_api import Kernel, MissingValues, NotStatic
from mcl.feedback.messages import FeedbackSeverity
from mcl.hdl.library import default_library
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.translate import translate_program

ROOT = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).resolve().parent / "kernels"
SIZES = {"n": 2048, "m": 2048, "p": 2048}


@pytest.fixture(scope="module")
def library():
    return default_library()


def kernel_at(path: Path, level: str | None, library, values=None) -> Kernel:
    program = load_program(path, (), library)
    if level is not None:
        program = translate_program(program, level, library).program
    errors = [d for d in check_program(program, library)
              if d.severity == DiagnosticSeverity.ERROR]
    assert not errors, errors
    function = program.main.functions[0]
    hwd = library.get(function.hwd)
    named = dict(hwd.feedback_functions())  # fermi's load_store_optimality, when named
    name = "load_store_optimality" if "load_store_optimality" in named else next(iter(named), "")
    node = named.get(name)
    checked = pipeline.check(program, library)
    return Kernel(build_facts(function, checked, hwd), values or {}, node, name)


@pytest.fixture(scope="module")
def matmul(library):
    return kernel_at(ROOT / "kernels" / "matmul" / "perfect.mcpl", "fermi", library, SIZES)


def test_description_values_by_path(matmul):
    hwd = matmul.hwd
    assert hwd.value("smps.smp.on_chip.capacity") == 48 * 1024
    assert hwd.value("fermi.smps.smp.l1.cache_line_size") == 128
    assert hwd.value("smps.smp.on_chip.nr_banks") == 32
    assert hwd.value("hierarchy.blocks.block.warps.warp.threads.nr_units") == 32
    assert hwd.slots("smps.smp", "block") == 8 and hwd.slots("smps.smp", "warp") == 48
    assert hwd.value("smps.smp.no_such_property") is None
    assert hwd.slots("smps.smp", "vector") is None
    assert matmul.node is not None and matmul.node.path == "smps.smp.lsus"


def test_context_units_and_memory(matmul):
    ctx = matmul.context
    assert ctx.units("threads") == 32
    assert ctx.units("warps") == 1024 // 32  # nrWarpsTj = nrThreadsM / nrThreadsTj
    assert ctx.units_per("thread", "block") == 1024
    assert ctx.units_per("thread", "warp") == 32
    assert ctx.units("blocks") == 2048 * 2  # n blocks bi times nrBlocksM blocks bj
    assert ctx.space_bytes("global") == 4 * (3 * 2048 * 2048)
    assert ctx.space_bytes("shared") == 0
    estimate = ctx.registers_per_thread()
    assert estimate.value >= 4 and "an estimate: the compiler used" in estimate.basis
    assert not estimate.counted  # fermi: no architecture NVRTC compiles for


def test_missing_values_are_reported_by_name(library):
    kernel = kernel_at(ROOT / "kernels" / "matmul" / "perfect.mcpl", "fermi", library)
    with pytest.raises(MissingValues) as caught:
        kernel.context.units("blocks")
    assert caught.value.names == ("m", "n")
    with pytest.raises(MissingValues) as caught:
        kernel.evaluator.value("nrBlocksM")
    assert caught.value.names == ("m",)
    assert kernel.evaluator.value("nrThreadsM") == 1024  # a description constant


def test_evaluator_follows_host_statements(matmul):
    assert matmul.evaluator.value("nrBlocksM") == 2  # (m + nrThreadsM - 1) / nrThreadsM
    assert matmul.evaluator.value("nrWarpsTj") == 32


def test_memory_instructions(matmul):
    seen = {(i.kind, i.text, i.space, i.unit) for i in matmul.instructions}
    assert ("load", "a[i, k]", "global", "thread") in seen
    assert ("load", "b[k, j]", "global", "thread") in seen
    assert ("store", "c[i, j]", "global", "thread") in seen
    b = next(i for i in matmul.instructions if i.text == "b[k, j]")
    assert b.element_bytes == 4 and b.span is not None and b.variable == "b"
    assert b.is_memory


def test_stepping_through_the_threads_of_a_warp(matmul):
    b = next(i for i in matmul.instructions if i.text == "b[k, j]")
    ev = matmul.evaluator
    cursor = ev.units("threads", at=b)
    assert cursor.count == 32
    cursor.reset()
    addresses = []
    for step in range(32):
        assert cursor.index == step
        addresses.append(ev.address(b))
        more = cursor.increment()
        assert more == (step < 31)
    assert addresses == [4 * t for t in range(32)]
    assert cursor.index == 0  # wrapped around
    # Foreach statements of another group keep their unit; for-loops their iteration.
    ev.units("blocks", at=b).increment()  # the next bj block (bj is the inner blocks loop)
    assert ev.address(b) == 4 * 1024
    ev.units("blocks", at=b).reset()
    ev.iteration("k", 3)
    assert ev.address(b) == 3 * 2048 * 4
    ev.iteration("k", 0)
    a = next(i for i in matmul.instructions if i.text == "a[i, k]")
    assert {ev.address(a) for _ in range(1)} == {0}


def test_paper_style_reset_and_increment(matmul):
    ev = matmul.evaluator
    c = next(i for i in matmul.instructions if i.text == "c[i, j]")
    ev.reset("threads")
    ev.increment("threads")
    ev.increment("threads")
    assert ev.address(c) == 8
    ev.reset("threads")


def test_values_that_depend_on_data_are_not_static(library):
    kernel = kernel_at(ROOT / "kernels" / "spmv" / "perfect.mcpl", "fermi", library,
                       {"nrows": 100, "ncols": 100, "nnz": 500})
    x = next(i for i in kernel.instructions if i.text == "x[cols[k]]")
    with pytest.raises(NotStatic):
        kernel.evaluator.address(x)


def test_shared_memory_per_block(library):
    for name, expected in (("nvidia_shared48.mcpl", 48 * 1024),
                           ("nvidia_shared12.mcpl", 12 * 1024)):
        kernel = kernel_at(KERNELS / name, None, library)
        assert kernel.context.space_bytes("shared") == expected
        assert kernel.context.units_per("thread", "block") == 128


REGS_KERNEL = """
nvidia void f(int n, global float[n] out) {
  foreach (int b in n / 32 blocks) {
    foreach (int t in 32 threads) {
      float x = 1.0;
      EXTRA
      out[b * 32 + t] = x;
    }
  }
}"""


def test_register_estimate_counts_register_declarations(tmp_path, library):
    def estimate(extra: str) -> int:
        path = tmp_path / "regs.mcpl"
        path.write_text(REGS_KERNEL.replace("EXTRA", extra))
        return kernel_at(path, None, library).context.registers_per_thread().value

    base = estimate("")
    assert estimate("reg float[8] r; r[0] = x;") == base + 8
    assert estimate("double d = 2.0; x = x * toFloat(d);") == base + 2


def test_messages_carry_values(matmul):
    message = matmul.message("hello", values={"blocks": 3}, severity="info", code="x-y")
    assert message.analysis == "functions" and message.code == "x-y"
    assert message.severity == FeedbackSeverity.INFO and message.value_map["blocks"].numeric == 3
    assert message.span == matmul.function.span and message.function == "matmul"
