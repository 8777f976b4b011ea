"""The time model's partial-sector writes (mcl.feedback.analyses.timemodel; docs/feedback.md,
"Time estimate"): a store whose lanes each write a few bytes of their own 32 B sector (a
column of a row-major array) is one L2 write per sector, at the cache's
`partial_write_bandwidth`; a store that fills its sectors is not, and a description that
states no such rate gets no such term."""

from __future__ import annotations

import pytest
from conftest import KERNELS, by_code, feedback

from mcl.feedback.analyses import timemodel
from mcl.feedback.analyses.timemodel import (
    ACHIEVED_BANDWIDTH,
    DEVICE_MEMORY,
    PARTIAL_WRITES,
    Figures,
    Phase,
)

KEY = "seconds_" + PARTIAL_WRITES.replace(" ", "_").replace("-", "_")
SIZES = {"n": 8192, "m": 8192}


def _values(messages) -> dict:
    (found,) = by_code(messages, "time-estimate")
    return {k: v.numeric for k, v in found.values}


@pytest.fixture(scope="module")
def column() -> list:
    return feedback(KERNELS / "transpose" / "perfect.mcpl", "hopper", values=SIZES)


def test_hopper_states_the_rate_fitted_on_the_calibration_half(library) -> None:
    # hopper.hdl's l2: 1689 GB/s, transpose perfect's 67.1 M sectors over its 1.27 ms
    rate = timemodel.partial_write_rate(library.get("hopper"), "global")
    assert rate == pytest.approx(1689e9)
    assert timemodel.partial_write_rate(library.get("fermi"), "global") == 0.0


def test_a_column_store_is_one_l2_write_per_sector(column, library) -> None:
    """transpose perfect: each warp's store touches 32 sectors, 4 B in each; 8192^2 / 32
    warp stores of 32 sectors of 32 B, over the l2's rate, limit the kernel."""
    values = _values(column)
    rate = timemodel.partial_write_rate(library.get("hopper"), "global")
    expected = 8192 * 8192 / 32 * 32 * 32 / rate
    assert values[KEY] == pytest.approx(expected, rel=1e-9)
    assert values[KEY] > values["seconds_device_memory"]
    assert values["estimated_seconds"] == pytest.approx(values["seconds_launch"] + expected)


def test_coalescing_the_store_removes_its_partial_writes(column) -> None:
    """The uncoalesced message's estimate after its change drops the store's partial
    sectors with its extra transactions: no other term of the kernel is as long."""
    (store,) = [m for m in by_code(column, "uncoalesced") if "store" in m.text]
    after = dict(store.values)["estimated_seconds_after"].numeric
    values = _values(column)
    assert after < values[KEY]
    assert after >= values["seconds_device_memory"]


def test_a_store_that_fills_its_sectors_makes_none() -> None:
    """hopper_v1 stores whole rows of its tile: full sectors, no such term."""
    values = _values(feedback(KERNELS / "transpose" / "hopper_v1.mcpl", values=SIZES))
    assert KEY not in values


def test_a_description_without_the_rate_has_no_such_term() -> None:
    """fermi states no `partial_write_bandwidth`: hopper's figure is not carried over."""
    values = _values(feedback(KERNELS / "transpose" / "perfect.mcpl", "fermi", values=SIZES))
    assert KEY not in values


def _two_phases(partial_bytes: float) -> Figures:
    """A phase bound by device memory, then one that only stores `partial_bytes` of
    sectors written in part, at 1 GB/s."""
    load = Phase(device_seconds=ACHIEVED_BANDWIDTH * 1e-3, on_chip_bytes=0.0, flops=0.0,
                 loads_per_sm=0.0)
    store = Phase(device_seconds=0.0, on_chip_bytes=0.0, flops=0.0, loads_per_sm=0.0,
                  partial_bytes=partial_bytes)
    return Figures(multiprocessors=2, clock_hz=1e9, warps_per_sm=4, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=0.0,
                   phases=(load, store), partial_write_rate=1e9)


def test_the_partial_writes_limit_the_kernel_not_their_phase() -> None:
    """A warp does not wait for its stores: the cache writes them during the other phases,
    so they add nothing to a kernel that takes longer, and set its time where they take
    longer than its phases."""
    hidden = _two_phases(0.5e6)  # 0.5 ms of writes behind a 1 ms phase
    assert hidden.seconds == pytest.approx(1e-3)
    assert hidden.limit == DEVICE_MEMORY
    assert hidden.terms[PARTIAL_WRITES] == pytest.approx(0.5e-3)
    bound = _two_phases(3e6)
    assert bound.seconds == pytest.approx(3e-3)
    assert bound.limit == PARTIAL_WRITES
