"""The bundled feedback functions: `shared_mem_parallelism` (nvidia), `load_store_optimality`
(fermi), and the coalescing and bank-conflict calculators they use."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcl import pipeline
from mcl.diagnostics import Severity as DiagnosticSeverity
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse
from mcl.feedback.warp_access import Coalescing, bank_conflict, coalescing
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


def function_messages(path: Path, level: str | None, library, values):
    program = load_program(path, (), library)
    if level is not None:
        program = translate_program(program, level, library).program
    errors = [d for d in check_program(program, library)
              if d.severity == DiagnosticSeverity.ERROR]
    assert not errors, errors
    function = program.main.functions[0]
    # fermi's occupancy fact has tests of its own (test_occupancy_fermi.py)
    checked = pipeline.check(program, library)
    return [m for m in analyse(function, checked, library.get(function.hwd), values,
                               only=["functions"]) if m.code != "occupancy"]


def numbers(message) -> dict:
    return {k: v.numeric for k, v in message.values}


# ----------------------------------------------------------------------------- nvidia


def test_48_kB_of_shared_memory_runs_one_of_eight_blocks(library):
    (message,) = function_messages(KERNELS / "nvidia_shared48.mcpl", None, library,
                                   {"n": 12288 * 60})
    assert message.text.startswith("using 1/8 blocks per SMP: shared memory limits; "
                                   "load/store shared memory in phases")
    assert message.severity == FeedbackSeverity.SUGGESTION
    assert message.code == "shared-mem-parallelism"
    values = numbers(message)
    assert values["blocks_per_smp"] == 1 and values["block_slots"] == 8
    assert values["shared_bytes_per_block"] == 48 * 1024 and values["threads_per_block"] == 128
    assert message.span is not None and message.span.line == 5  # the shared declaration


def test_12_kB_of_shared_memory_runs_four_of_eight_blocks(library):
    (message,) = function_messages(KERNELS / "nvidia_shared12.mcpl", None, library, {})
    assert message.text.startswith("using 4/8 blocks per SMP: shared memory limits")
    assert numbers(message)["blocks_per_smp"] == 4


def test_threads_can_be_the_limit(tmp_path, library):
    path = tmp_path / "wide.mcpl"
    path.write_text("""
nvidia void f(int n, global float[n] out) {
  foreach (int b in n / 1024 blocks) {
    shared float[256] tile;
    foreach (int t in 1024 threads) {
      tile[t / 4] = 1.0;
      barrier(shared);
      out[b * 1024 + t] = tile[t / 4];
    }
  }
}""")
    (message,) = function_messages(path, None, library, {})
    assert message.text.startswith("using 1/8 blocks per SMP: threads limit")
    assert "shared memory" not in message.text.split(" (")[0]


def test_no_shared_memory_no_message(library):
    assert function_messages(ROOT / "kernels" / "matmul" / "perfect.mcpl", "nvidia", library,
                             SIZES) == []


# ----------------------------------------------------------------------------- fermi


def test_fermi_matmul_access_is_optimal(library):
    (message,) = function_messages(ROOT / "kernels" / "matmul" / "perfect.mcpl", "fermi",
                                   library, SIZES)
    assert message.code == "memory-access-optimal" and message.severity == FeedbackSeverity.INFO
    assert "all 3 global loads/stores are coalesced" in message.text
    assert "no shared-memory accesses" in message.text


def test_fermi_asks_for_every_missing_value_at_once(library):
    (message,) = function_messages(ROOT / "kernels" / "matmul" / "perfect.mcpl", "fermi",
                                   library, {})
    assert message.code == "function-needs-values"
    assert "m, p" in message.text


def test_column_access_by_consecutive_threads_is_uncoalesced(library):
    messages = function_messages(KERNELS / "fermi_rows.mcpl", None, library, {"n": 4096})
    (message,) = messages
    assert message.code == "uncoalesced" and message.severity == FeedbackSeverity.SUGGESTION
    assert message.text.startswith("load of a[i, k] is not coalesced")
    assert numbers(message)["lines"] == 32 and numbers(message)["minimum_lines"] == 1


def test_shared_array_indexed_by_thread_times_32_is_a_32_way_conflict(library):
    messages = function_messages(KERNELS / "fermi_banks.mcpl", None, library, {"n": 4096})
    (message,) = messages
    assert message.code == "bank-conflict"
    assert "tile[t * 32]" in message.text and "32-way bank conflict" in message.text
    assert numbers(message)["conflict_degree"] == 32


def test_conflict_free_shared_memory_is_reported_optimal(tmp_path, library):
    path = tmp_path / "ok.mcpl"
    path.write_text("""
fermi void f(int n, global float[n] out, global float[n] src) {
  foreach (int b in n / 32 blocks) {
    shared float[1024] tile;
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        tile[t] = src[b * 32 + t];
        barrier(shared);
        out[b * 32 + t] = tile[31 - t] + tile[0];
      }
    }
  }
}""")
    (message,) = function_messages(path, None, library, {"n": 64})
    assert message.code == "memory-access-optimal"
    assert "no bank conflicts in the 3 shared-memory accesses" in message.text


# ----------------------------------------------------------------------------- calculators


def brute_lines(addresses, element, line):
    return len({b // line for a in addresses for b in range(a, a + element)})


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 1 << 14), min_size=1, max_size=32),
       st.sampled_from([4, 8]), st.sampled_from([32, 128]))
def test_coalescing_counts_lines_and_the_minimum(words, element, line):
    addresses = [w * element for w in words]
    result = coalescing(addresses, element, line)
    assert result.lines == brute_lines(addresses, element, line)
    # the distinct elements one after another from the lowest address
    low = min(addresses)
    packed = [low + k * element for k in range(len(set(addresses)))]
    assert result.minimum == brute_lines(packed, element, line)
    assert result.minimum <= result.lines
    assert coalescing([a * element for a in range(32)], element, line).optimal


def test_contiguous_data_that_starts_inside_a_line_is_coalesced():
    # spmv's rowptr[i + 1] for 4 rows a warp: 16 B from byte 20 straddle two 32 B sectors,
    # as any order of the threads would (Nsight Compute measured no excess for it)
    result = coalescing([20, 24, 28, 32], 4, 32)
    assert (result.lines, result.minimum) == (2, 2) and result.optimal
    # 4 elements from the same byte spread over three sectors are not
    assert coalescing([20, 24, 60, 100], 4, 32) == Coalescing(3, 2)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 4096), min_size=1, max_size=32))
def test_bank_conflict_degree(words):
    result = bank_conflict([4 * w for w in words], 32, 4)
    per_bank = {}
    for w in set(words):
        per_bank.setdefault(w % 32, set()).add(w)
    assert result.degree == max(len(v) for v in per_bank.values())
    assert bank_conflict([4 * 32 * t for t in range(32)], 32, 4).degree == 32
    assert bank_conflict([4 * t for t in range(32)], 32, 4).degree == 1
    assert bank_conflict([0] * 32, 32, 4).degree == 1  # a broadcast
