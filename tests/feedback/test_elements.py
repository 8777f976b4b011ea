"""Several elements per unit (paper section 5, gpu message (3); docs/feedback.md, "Several
elements per unit"): the advice comes when the kernel launches more units than the
description keeps resident and each unit stores one element of its own; the units it
names are the stores a brute-force trace performs; no advice where a unit already
computes several elements, where units contend for data-dependent addresses, or where the
description's slots are unlimited."""

from __future__ import annotations

import numpy as np
from brute import Tracer
from conftest import KERNELS, by_code, feedback, feedback_source

from mcl.hdl.library import default_library
from mcl.mcpl.parse import parse_source

ONE_PER_THREAD = """\
gpu void scale(int n, dev float[n, 256] a) {
  foreach (int b in n blocks) {
    foreach (int t in 256 threads) {
      a[b, t] = a[b, t] * 2.0;
    }
  }
}
"""
FOUR_PER_THREAD = """\
gpu void scale(int n, dev float[n, 1024] a) {
  foreach (int b in n blocks) {
    foreach (int t in 256 threads) {
      for (int e = 0; e < 4; e++) {
        a[b, e * 256 + t] = a[b, e * 256 + t] * 2.0;
      }
    }
  }
}
"""


def _advice(source: str, n: int) -> list:
    return by_code(feedback_source(source, "gpu", {"n": n}), "elements-several-per-unit")


def test_the_units_named_are_the_stores_of_a_trace() -> None:
    n = 301
    (advice,) = _advice(ONE_PER_THREAD, n)
    module = parse_source(ONE_PER_THREAD)
    args = {"n": n, "a": np.ones((n, 256), dtype=np.float32)}
    trace = Tracer(module, default_library().get("gpu")).run(module.functions[0], args)
    stores = sum(c for k, c in trace.per_slot().items() if "w" in trace.slots[k].mode)
    assert advice.value_map["units"].numeric == stores == n * 256
    assert "per thread" in advice.text and advice.hint


def test_no_advice_while_the_device_runs_every_unit_at_once() -> None:
    (advice,) = _advice(ONE_PER_THREAD, 10_000)
    resident = int(advice.value_map["concurrent"].numeric)
    assert resident > 256
    blocks = resident // 256  # exactly as many threads as stay resident
    assert not _advice(ONE_PER_THREAD, blocks)
    assert _advice(ONE_PER_THREAD, blocks + 1)


def test_no_advice_where_a_unit_already_computes_several_elements() -> None:
    assert _advice(ONE_PER_THREAD, 100_000)
    assert not _advice(FOUR_PER_THREAD, 100_000)


def test_contended_stores_are_left_to_the_irregular_analysis() -> None:
    messages = feedback(KERNELS / "histogram" / "gpu_v1.mcpl", values={"h": 4096, "w": 4096})
    assert by_code(messages, "store-contention")
    assert not by_code(messages, "elements-several-per-unit")


def test_unlimited_slots_no_analysis() -> None:
    messages = feedback(KERNELS / "matmul" / "perfect.mcpl",
                        values={"n": 4096, "m": 4096, "p": 4096})
    assert "opstats-summary" in {m.code for m in messages}
    assert not {m.analysis for m in messages} & {"elements"}
