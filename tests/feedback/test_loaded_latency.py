"""The loaded-latency term of the time model (mcl.feedback.analyses.timemodel,
`loaded_seconds`): the formula on hand-made phases, checked against the curve it comes
from, and the description's key reaching the model."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from mcl.feedback.analyses.timemodel import (
    ACHIEVED_BANDWIDTH,
    DEVICE_MEMORY,
    LATENCY,
    Figures,
    Phase,
    latency_knee,
    loaded_seconds,
)
from mcl.hdl.library import hwdescs_dir, library_with


def _fixed_point(waits: float, traffic: float, knee: float) -> float:
    """The phase's time found by bisection: the time T at which Little's law at the
    latency of the curve, L(rho) = L0 / (1 - rho^k)^(1/k) with rho = traffic / T, gives
    T again (waits x L(rho) / L0 = T)."""
    lo, hi = max(waits, traffic), 10 * (waits + traffic)
    for _ in range(200):
        t = (lo + hi) / 2
        rho = traffic / t
        if waits / (1 - rho**knee) ** (1 / knee) > t:
            lo = t
        else:
            hi = t
    return (lo + hi) / 2


@pytest.mark.parametrize(("waits", "traffic", "knee"), [
    (18.9, 25.4, 1.75),  # a scan's load phase: waits near the traffic
    (5.6, 25.4, 1.75),  # a streaming phase: many loads in flight
    (500.0, 50.0, 1.75),  # a latency-bound phase
    (10.0, 10.0, 2.0),
    (3.0, 7.0, 4.0),
])
def test_the_closed_form_is_the_curve_solved(waits: float, traffic: float, knee: float
                                             ) -> None:
    assert loaded_seconds(waits, traffic, knee) == pytest.approx(
        _fixed_point(waits, traffic, knee), rel=1e-9)


def test_the_term_by_hand() -> None:
    # equal waits and traffic at k = 2: sqrt(2) times either
    assert loaded_seconds(10.0, 10.0, 2.0) == pytest.approx(10.0 * 2**0.5)
    # k = 1: the sum (every load waits behind the whole traffic)
    assert loaded_seconds(3.0, 4.0, 1.0) == pytest.approx(7.0)
    # k = 2 on a 3-4-5 triangle
    assert loaded_seconds(3.0, 4.0, 2.0) == pytest.approx(5.0)
    # far apart: hardly more than the larger (0.1 ^ 1.75 = 0.0178, to the 1 / 1.75: 1% more)
    assert loaded_seconds(1.0, 10.0, 1.75) == pytest.approx(10.101, rel=1e-4)


def test_without_a_knee_or_a_side_the_larger_alone() -> None:
    assert loaded_seconds(3.0, 4.0, 0.0) == 4.0
    assert loaded_seconds(0.0, 4.0, 1.75) == 4.0
    assert loaded_seconds(3.0, 0.0, 1.75) == 3.0


def test_it_grows_as_the_knee_softens() -> None:
    times = [loaded_seconds(18.9, 25.4, k) for k in (8.0, 4.0, 2.0, 1.75, 1.0)]
    assert times == sorted(times)
    assert times[0] < 25.4 * 1.02 and times[-1] == pytest.approx(18.9 + 25.4)


def _one_phase(waits_s: float, device_s: float, knee: float) -> Figures:
    """A phase of one warp-level load per warp and SM whose Little's law waits
    `waits_s` (one SM, one warp, one load in flight: the latency itself) and whose
    traffic takes `device_s` at the achieved share of the bandwidth."""
    phase = Phase(device_seconds=device_s * ACHIEVED_BANDWIDTH, on_chip_bytes=0.0,
                  flops=0.0, loads_per_sm=1.0)
    return Figures(multiprocessors=1.0, clock_hz=1e9, warps_per_sm=1.0, peak_flops=1e12,
                   on_chip_bandwidth=1e12, loads_in_flight=1.0, latency_s=waits_s,
                   phases=(phase,), latency_knee=knee)


def test_the_model_loads_the_larger_limit_and_keeps_its_name() -> None:
    streaming = _one_phase(18.9e-6, 25.4e-6, 1.75)
    limits = streaming.phase_limits(streaming.phases[0])
    assert limits[DEVICE_MEMORY] == pytest.approx(loaded_seconds(18.9e-6, 25.4e-6, 1.75))
    assert limits[LATENCY] == pytest.approx(18.9e-6)
    assert streaming.limit == DEVICE_MEMORY
    assert streaming.seconds == pytest.approx(limits[DEVICE_MEMORY])
    waiting = _one_phase(40e-6, 25.4e-6, 1.75)
    assert waiting.limit == LATENCY
    assert waiting.seconds == pytest.approx(loaded_seconds(40e-6, 25.4e-6, 1.75))
    # no knee stated: the larger alone, as before the term
    assert replace(streaming, latency_knee=0.0).seconds == pytest.approx(25.4e-6)


def _knee_of(hwd: Any) -> float:
    held = hwd.memories_for("global")
    return latency_knee(hwd.link(held[0].node.path))


def test_a_description_states_the_knee_on_its_link_to_device_memory(
        tmp_path: Path, library: Any) -> None:
    # no bundled description states one (docs/validation.md, "The loaded latency")
    assert _knee_of(library.get("hopper")) == 0.0 and _knee_of(library.get("fermi")) == 0.0
    assert latency_knee(None) == 0.0
    text = (hwdescs_dir() / "hopper.hdl").read_text()
    text = text.replace("hardware_description hopper;", "hardware_description knee;")
    text = text.replace("device hopper {", "device knee {")
    text = text.replace("  latency = 600 cycles;",
                        "  latency = 600 cycles;\n  latency_knee = 7 / 4;")
    (tmp_path / "knee.hdl").write_text(text)
    loaded = library_with([tmp_path])
    assert "knee" not in loaded.failed, loaded.failed.get("knee")
    assert _knee_of(loaded.get("knee")) == pytest.approx(1.75)
