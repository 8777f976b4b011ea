"""benchmarks/harness.py: the shared device, bandwidth, run and timing helpers (PoCL CPU)."""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest

from mcl.diagnostics import MclError

from .series_support import benchmark_script

REPO = Path(__file__).resolve().parents[2]


def harness() -> types.ModuleType:
    return benchmark_script("harness")


@pytest.fixture(scope="module")
def opened():
    return harness().open_device(None)


def test_open_device_uses_mcls_device_selection(opened) -> None:
    context, queue = opened
    assert queue.context == context and opened.kind == "cpu"
    assert "Portable Computing Language" in opened.name
    with pytest.raises(MclError, match="no OpenCL device matches"):
        harness().open_device("no-such-device-anywhere")


def test_copy_bandwidth_is_a_plausible_rate(opened) -> None:
    rate = harness().copy_bandwidth(opened.queue, nbytes=8 << 20, rounds=2)
    assert 0.05 < rate < 10_000  # GB/s: a CPU copies somewhere between these


def test_run_version_times_and_verifies(opened) -> None:
    h = harness()
    result = h.run_version(REPO / "kernels" / "reduction" / "perfect.mcpl", "x86_avx512",
                           opened.queue, {"n": 5000, "chunk": 700}, rounds=3)
    assert result.problem is None and result.verified is True
    assert len(result.times) == 3 and all(t > 0 for t in result.times)
    assert 0 <= result.ratio <= 1 and result.unit == "GB/s"
    assert result.rate == pytest.approx(result.work[0] / min(result.times) / 1e9)
    assert result.sizes == {"n": 5000, "chunk": 700}


def test_run_version_reports_what_cannot_run(opened) -> None:
    h = harness()
    missing = h.run_version(REPO / "kernels" / "matmul" / "gpu_v1.mcpl", "x86_avx512",
                            opened.queue, {}, rounds=1)
    assert missing.problem and missing.verified is None and missing.times == []


def test_wrong_outputs_are_not_verified(opened, tmp_path: Path) -> None:
    """An off-by-one kernel (the last element of each chunk dropped) fails verification."""
    folder = tmp_path / "reduction"
    folder.mkdir()
    source = (REPO / "kernels" / "reduction" / "perfect.mcpl").read_text()
    (folder / "perfect.mcpl").write_text(source.replace("k < chunk;", "k < chunk - 1;"))
    (folder / "reference.py").write_text((REPO / "kernels" / "reduction" / "reference.py")
                                         .read_text())
    result = harness().run_version(folder / "perfect.mcpl", "x86_avx512", opened.queue,
                                   {"n": 5000, "chunk": 700}, rounds=1)
    assert result.verified is False and result.ratio > 1


def test_time_helpers_time_each_call() -> None:
    h = harness()
    calls = []
    times = h.time_cpu(lambda: calls.append(np.ones(10).sum()), 4)
    assert len(times) == 4 and len(calls) == 5  # one warm-up call
    assert h.best(times) == min(times) and h.median([1.0, 3.0, 2.0]) == 2.0
