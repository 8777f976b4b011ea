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
