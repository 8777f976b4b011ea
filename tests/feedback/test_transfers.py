"""Host <-> device transfers (docs/feedback.md, "Transfers"): at a level with a host, the
bytes of every parameter the kernel reads go in and of every one it writes come out, as
many as the arrays a brute-force trace touches hold; a level without a host has none."""

from __future__ import annotations

import numpy as np
import pytest
from brute import Tracer
from cases import Case, load, reference
from conftest import KERNELS, by_code

from mcl import pipeline
from mcl.feedback import analyse
from mcl.hdl.library import default_library


@pytest.mark.parametrize("app", ["matmul", "convolution", "histogram", "spmv"])
def test_bytes_in_and_out_are_those_of_the_arrays_the_trace_reads_and_writes(app: str) -> None:
    case = Case(KERNELS / app / "perfect.mcpl", "accelerator")
    program, function, hwd = load(case)
    ref = reference(case.path.parent)
    sizes = dict(ref.SIZES)
    args = ref.inputs(dict(sizes), np.random.default_rng(1))
    trace = Tracer(program, hwd).run(function, args)
    messages = analyse(function, pipeline.check(program, default_library()), hwd, sizes)
    (total,) = by_code(messages, "transfers-total")
    bytes_in = sum(args[p].nbytes for p in trace.read_params)
    bytes_out = sum(args[p].nbytes for p in trace.written_params)
    assert total.value_map["bytes_in"].numeric == bytes_in
    assert total.value_map["bytes_out"].numeric == bytes_out
    moved = {m.text.split(":")[0] for m in by_code(messages, "transfers-parameter")}
    assert moved == trace.read_params | trace.written_params


def test_no_host_no_transfers() -> None:
    program, function, hwd = load(Case(KERNELS / "matmul" / "perfect.mcpl", None))
    checked = pipeline.check(program, default_library())
    codes = {m.code for m in analyse(function, checked, hwd, {"n": 4, "m": 4, "p": 4})}
    assert "opstats-summary" in codes
    assert not {c for c in codes if c.startswith("transfers")}


# A first kernel clears y, a second adds into it at data-dependent elements (spmv hopper
# (v2)'s pattern); the variants break what makes the clear complete and ordered.
CLEARED = """
gpu void f(int n, int m, dev int[n] y, dev int[m] idx) {
  foreach (int b in (n + 31) / 32 blocks) {
    foreach (int t in 32 threads) {
      int i = b * 32 + t;
      if (i < n) {
        y[i] = 0;
      }
    }
  }
  foreach (int b in (m + 31) / 32 blocks) {
    foreach (int t in 32 threads) {
      int k = b * 32 + t;
      if (k < m) {
        atomicAdd(y[idx[k]], 1);
      }
    }
  }
}
"""
# the clear and the additions in one kernel: its blocks have no order
ONE_KERNEL = """
gpu void f(int n, int m, dev int[n] y, dev int[m] idx) {
  foreach (int b in (n + 31) / 32 blocks) {
    foreach (int t in 32 threads) {
      int i = b * 32 + t;
      if (i < n) {
        y[i] = 0;
      }
      if (i < m) {
        atomicAdd(y[idx[i]], 1);
      }
    }
  }
}
"""
VARIANTS = {
    "cleared": (CLEARED, True),
    "one kernel": (ONE_KERNEL, False),
    "last element left": (CLEARED.replace("if (i < n)", "if (i < n - 1)"), False),
    "every other element": (CLEARED.replace("int i = b * 32 + t;", "int i = b * 64 + t;"),
                            False),
    "a block too few": (CLEARED.replace("(n + 31) / 32 blocks", "n / 32 blocks"), False),
}


def _entry_values_read(program: object, function: object, hwd: object,
                       args: dict[str, np.ndarray]) -> bool:
    """Brute force: does a read of y see no write of an earlier kernel (a top-level
    foreach nest; the units of one kernel are not ordered, so only an earlier one counts)?"""
    trace = Tracer(program, hwd).run(function, args)
    kernels: list[int] = []
    written: dict[tuple[int, ...], int] = {}
    for slot_number, index, _values in trace.log:
        slot = trace.slots[slot_number]
        if slot.param != "y":
            continue
        if slot.loops[0] not in kernels:
            kernels.append(slot.loops[0])
        kernel = kernels.index(slot.loops[0])
        if "r" in slot.mode and written.get(index, kernel) >= kernel:
            return True
        if "w" in slot.mode:
            written.setdefault(index, kernel)
    return False


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(("n", "m"), [(37, 90), (70, 200)])
def test_a_parameter_cleared_by_a_first_kernel_does_not_move_to_the_device(
        variant: str, n: int, m: int) -> None:
    """y moves host -> device exactly when a trace can read a value of y that no earlier
    kernel wrote; the analysis proves the clear complete from the code alone."""
    from mcl.mcpl.parse import parse_source

    source, cleared = VARIANTS[variant]
    module = parse_source(source)
    function = module.functions[-1]
    library = default_library()
    hwd = library.get("hopper")
    idx = np.arange(m, dtype=np.int32) % n  # every element of y, the last one too
    args = {"n": n, "m": m, "y": np.full(n, 7, np.int32), "idx": idx}
    assert _entry_values_read(module, function, hwd, args) == (not cleared)
    messages = analyse(function, pipeline.check(module, library), hwd, {"n": n, "m": m})
    (y,) = [msg for msg in by_code(messages, "transfers-parameter") if msg.text[:2] == "y:"]
    assert ("host -> device" not in y.text.split(";")[0]) == cleared
    assert "device -> host" in y.text
    (total,) = by_code(messages, "transfers-total")
    assert total.value_map["bytes_in"].numeric == 4 * m + (0 if cleared else 4 * n)


def test_spmv_hopper_v2_clears_y_on_the_device() -> None:
    """Its first kernel clears y, the second adds into it: y only comes back."""
    from conftest import feedback

    values = {"nrows": 1000, "ncols": 1000, "nnz": 20000}
    messages = feedback(KERNELS / "spmv" / "hopper_v2.mcpl", values=values)
    by_name = {m.text.split(":")[0]: m for m in by_code(messages, "transfers-parameter")}
    assert by_name["y"].value_map["bytes"].numeric == 4000
    assert "bytes device -> host" in by_name["y"].text
    assert "nothing host -> device" in by_name["y"].text
    (total,) = by_code(messages, "transfers-total")
    assert total.value_map["bytes_in"].numeric == 4 * 1001 + 8 * 20000 + 4 * 1000
