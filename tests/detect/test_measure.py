"""`mcl hwd detect --measure` on the PoCL CPU device: every benchmark runs (small sizes)
and keeps its spread, the peak kernel beats a naive one and reaches a fraction of numpy's
SGEMM measured in the same test, the written description comments every figure with how
it was measured and its spread, warns where a figure is far from the nominal one, and
the whole command keeps to its time budget. Only orders are asserted, never absolute
rates: the test machine is shared."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from mcl.cli import main
from mcl.detect.generate import generate
from mcl.detect.measure import Sizes, measure
from mcl.detect.measurements import Measurements
from mcl.detect.timing import Rate
from mcl.hdl.library import library_with
from mcl.hdl.peak import bandwidth, peak_flops
from mcl.schemas import load_schema

DATA = Path(__file__).parent / "data"
SMALL = Sizes(memory=8 << 20, seconds=0.005, repeat=3, chase=8 << 20)
RATES = ("fma", "gemm", "read", "write", "copy", "library_copy", "l1", "l2", "local")
LATENCIES = ("latency_l1", "latency_l2", "latency_memory", "latency_local", "launch",
             "launch_wall")


@pytest.fixture(scope="module")
def pocl() -> tuple[object, dict]:
    from mcl.backends.opencl.runner import select_device
    from mcl.detect.query import query

    device = select_device()
    return device, query(device)


@pytest.fixture(scope="module")
def measured(pocl: tuple[object, dict]) -> Measurements:
    device, q = pocl
    return measure(device, q, sizes=SMALL, budget_s=600)


def test_every_benchmark_runs_and_keeps_its_spread(measured: Measurements) -> None:
    for key in RATES:  # rates: the best is the highest
        rate = measured.rates[key]
        assert rate.runs == SMALL.repeat and rate.how
        assert rate.value >= rate.median >= rate.worst > 0, key
    for key in LATENCIES:  # durations: the best is the lowest
        rate = measured.rates[key]
        assert 0 < rate.value <= rate.median <= rate.worst, key
    assert "to_device" not in measured.rates  # a CPU device shares the host's memory
    # A dependent load from memory waits longer than one from L1.
    assert measured.rates["latency_memory"].value > measured.rates["latency_l1"].value
    assert "swept over work-groups" in measured.rates["copy"].how


def test_the_compute_roof_is_at_least_the_library_s_sgemm(measured: Measurements) -> None:
    """The roof is the larger of the peak kernel and numpy's SGEMM of the same run; the
    kernel itself reaches a fair share of the library (it is no naive loop)."""
    fma, gemm = measured.rates["fma"], measured.rates["gemm"]
    assert measured.fma_flops == max(fma.value, gemm.value)
    assert fma.value >= 0.2 * gemm.value
    if gemm.value > fma.value:
        assert any("below" in w and "library" in w for w in measured.warnings)


def test_the_peak_kernel_beats_a_naive_fma_loop(pocl: tuple[object, dict],
                                                measured: Measurements) -> None:
    """One work-item, one chain of scalar FMAs: each waits for the last, one core, one
    lane. The peak kernel, timed in the same module, is several times faster."""
    import pyopencl as cl

    device, _ = pocl
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    program = cl.Program(ctx, """
        __kernel void naive(__global float *out, float b, float c, int iters) {
            float a = 1.0f;
            for (int i = 0; i < iters; ++i) a = fma(a, b, c);
            out[0] = a;
        }""").build()
    out = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4)
    kernel = program.naive
    iters = 1 << 22
    kernel.set_args(out, np.float32(0.999999), np.float32(1e-6), np.int32(iters))
    cl.enqueue_nd_range_kernel(queue, kernel, (1,), (1,)).wait()
    event = cl.enqueue_nd_range_kernel(queue, kernel, (1,), (1,))
    event.wait()
    naive = 2 * iters / ((event.profile.end - event.profile.start) * 1e-9)
    assert measured.rates["fma"].value > 4 * naive


def test_the_written_description_comments_every_measured_figure(
        measured: Measurements, pocl: tuple[object, dict], tmp_path: Path) -> None:
    _, q = pocl
    generated = generate(q, "here", measured)
    (tmp_path / "here.hdl").write_text(generated.hdl)
    (tmp_path / "here.opencl.toml").write_text(generated.mapping)
    library = library_with([str(tmp_path)])
    assert "here" not in library.failed, library.failed.get("here")
    hwd = library.get("here")
    assert peak_flops(hwd) == pytest.approx(measured.fma_flops, rel=1e-3)
    main_bw = bandwidth(hwd, "main")
    assert main_bw is not None
    # No nominal figure for a CPU device: the roof is the highest rate measured.
    highest = max(measured.rates[k].value for k in ("read", "write", "copy")
                  if k in measured.rates)
    assert main_bw.bytes_per_s == pytest.approx(highest, rel=1e-3)
    text = generated.hdl
    flat = " ".join(text.replace("//", " ").split())  # comments wrap over lines
    for phrase in ("numpy float32 matmul", "numpy copyto", "pointer chase",
                   "swept over work-groups", "one kernel launch beyond its work"):
        assert phrase in flat, phrase
    # The launch is the device's latency (docs/hdl.md), stated where HDL has it.
    from mcl.hdl.build import _DEVICE_PROPS

    device_block = text[text.index("device here {"):].split("}")[0]
    stated = "device" in _DEVICE_PROPS.get("latency", ())
    assert ("\n  latency = " in device_block) == stated
    assert ("// latency = " in device_block) != stated
    # Every measured statement says how, with the spread of its runs.
    for line_number, line in enumerate(text.splitlines()):
        if line.lstrip().startswith(("latency =", "bandwidth =", 'op("fma"')):
            comment = " ".join(" ".join(text.splitlines()[line_number:line_number + 8]).split())
            assert "measured" in comment and re.search(r"best of \d+; median", comment), line


def _rate(value: float, how: str = "test figure") -> Rate:
    return Rate(value, value * 0.9, value * 0.8, 5, how)


def test_a_figure_far_from_the_nominal_one_is_warned_about(tmp_path: Path) -> None:
    """The recorded H100 with an FMA peak at half its nominal rate and an L2 latency of
    twice hopper's figure: both warned about, in the description and by the command's
    result; a copy 10% off the nominal bandwidth is not."""
    q = json.loads((DATA / "h100_query.json").read_text())
    nominal_copy = (q["cuda"]["MEMORY_CLOCK_RATE"] * 1e3 * 2
                    * q["cuda"]["GLOBAL_MEMORY_BUS_WIDTH"] / 8)
    clock = q["cuda"]["CLOCK_RATE"] * 1e3
    rates = {"fma": _rate(33e12), "copy": _rate(0.9 * nominal_copy),
             "latency_l2": Rate(400 / clock, 410 / clock, 420 / clock, 5, "chase")}
    measured = Measurements(copy_bytes_per_s=0.9 * nominal_copy, fma_flops=33e12,
                            rates=rates)
    generated = generate(q, "detected", measured)
    assert len(generated.warnings) == 2
    assert any(w.startswith("float32 FMA peak") for w in generated.warnings)
    assert any(w.startswith("L2 load latency") and "200" in w for w in generated.warnings)
    assert "// Warnings of the measurement" in generated.hdl
    assert "latency = 400 cycles;" in generated.hdl
    (tmp_path / "detected.hdl").write_text(generated.hdl)
    (tmp_path / "detected.opencl.toml").write_text(generated.mapping)
    (tmp_path / "detected_feedback.py").write_text(generated.feedback or "")
    assert "detected" not in library_with([str(tmp_path)]).failed


def test_a_spent_budget_leaves_the_rest_out(pocl: tuple[object, dict]) -> None:
    device, q = pocl
    m = measure(device, q, sizes=SMALL, budget_s=0)
    assert not m.rates and m.fma_flops is None and m.copy_bytes_per_s is None
    assert "budget" in m.notes["compute"]


@pytest.mark.slow
@pytest.mark.usefixtures("whole_lines")  # reads a warning whole
def test_measure_keeps_to_a_minute_and_reports_in_json(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """The whole command at its default sizes: its JSON names every measured figure with
    its spread, and it finishes within the minute docs/hdl.md promises (a bound far above
    what it takes, not a timing)."""
    start = time.perf_counter()
    assert main(["hwd", "detect", "--measure", "-o", str(tmp_path), "--name", "here",
                 "--format", "json"]) == 0
    assert time.perf_counter() - start < 60
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    jsonschema.validate(document, load_schema("hwd-detect"))
    assert document["measured"] is True
    assert {"fma", "gemm", "copy", "library_copy", "launch"} <= set(document["measurements"])
    assert "measured in" in captured.err
    for warning in document["warnings"]:
        assert f"warning: {warning}" in captured.err


def test_the_gpu_kernels_run_on_pocl_too(pocl: tuple[object, dict]) -> None:
    """The GPU side of the benchmarks -- coalesced float4 walks over the grid, groups of
    256, a unit count that divides no power of two (an H100 has 132 SMs), scalar FMA
    chains, L2 slices rotating over the groups -- run as they would on a GPU, here on
    PoCL, so that a GPU run meets no untried path."""
    import pyopencl as cl

    from mcl.detect.bench_compute import interleaved, peak_kernel
    from mcl.detect.bench_memory import MemoryBench

    device, _ = pocl
    ctx = cl.Context([device])
    queue = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    bench = MemoryBench(cl, ctx, queue, "gpu", 3, 2)
    swept = bench.device_memory(3 << 20)
    for name in ("read", "write", "copy"):
        assert swept[name].rate.value >= swept[name].rate.worst > 0
        assert swept[name].groups % 3 == 0
    assert bench.cache(1 << 20, False, 0.002, "rotating").value > 0
    assert bench.local_memory(16 << 10, 0.002).value > 0
    assert bench.latency(64 << 10, 128, 0.002).value > 0
    peak = peak_kernel(cl, ctx, queue, "gpu", 1, 1, 16, 0.005)
    assert peak.candidate.width == 1 and peak.candidate.spelling == "fma"
    fma, gemm = interleaved(peak, None, 2)
    assert fma.value > 0 and gemm is None


def test_a_blas_call_leaves_the_cores_idle_before_the_next_run() -> None:
    """numpy's SGEMM peer reports only the call's own time, and returns after the BLAS
    threads' spin is over (`BLAS_IDLE_S`), so that the peak kernel's run that follows it
    in `interleaved` does not share the cores with them."""
    import time

    from mcl.detect.bench_compute import BLAS_IDLE_S, numpy_gemm

    library = numpy_gemm(0.0)  # the smallest size it takes, 1024
    start = time.perf_counter()
    seconds = library.run()
    wall = time.perf_counter() - start
    assert wall >= BLAS_IDLE_S
    assert 0 < seconds <= wall - BLAS_IDLE_S
    assert library.flops == 2.0 * 1024 ** 3
