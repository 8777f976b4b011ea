"""The time model on kernels it had not seen (mcl.feedback.analyses.timemodel;
docs/feedback.md, "Time estimate"): every kernel pays its launch, so a kernel of a few
microseconds is not promised a gain that its launch alone rules out; a load inside a
constant-trip loop the compiler unrolls is one load in flight per copy; a warp whose
lanes take both paths of a branch runs both."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.feedback.analyses import timemodel
from mcl.feedback.analyses.timemodel import LAUNCH, LAUNCH_SECONDS, Figures, Phase
from mcl.feedback.messages import Message
from mcl.feedback.registry import analyse
from mcl.hdl.library import hwdescs_dir, load_library
from mcl.mcpl.loader import load_program


def _messages(tmp_path: Path, library, source: str, sizes: dict) -> list[Message]:
    path = tmp_path / "k.mcpl"
    path.write_text(source)
    program = load_program(path, (), library)
    function = program.main.functions[0]
    return analyse(function, pipeline.check(program, library), library.get(function.hwd),
                   sizes)


def _estimate(messages: list[Message]) -> dict:
    (found,) = [m for m in messages if m.code == "time-estimate"]
    return {k: v.numeric for k, v in found.values}


# One warp per block: 32 warps per SM where 64 fit, so occupancy suggests larger blocks.
SCALE = """
hopper void scale(int n, global float[n] a, global float[n] b) {
  foreach (int bi in n / 32 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        int i = bi * 32 + w * 32 + t;
        b[i] = 2.0 * a[i];
      }
    }
  }
}
"""


def test_the_estimate_adds_the_launch_the_description_states(tmp_path, library) -> None:
    hopper = library.get("hopper")
    launch = timemodel.launch_seconds(hopper, 1.98e9)
    assert launch == pytest.approx(4000 / 1.98e9)  # hopper.hdl: 4,000 cycles
    # a description that states none: the nominal figure for an NVIDIA GPU
    assert timemodel.launch_seconds(library.get("fermi"), 1.15e9) == LAUNCH_SECONDS
    figures = _estimate(_messages(tmp_path, library, SCALE, {"n": 132 * 32 * 32 * 64}))
    assert figures["seconds_launch"] == pytest.approx(launch)
    work = max(figures["seconds_device_memory"],
               figures["seconds_compute"] + figures["seconds_on_chip_memory"],
               figures["seconds_latency"])
    assert figures["estimated_seconds"] == pytest.approx(launch + work)


# Each unit walks a small table the L2 holds: latency-bound, one warp per block.
WALK = """
hopper void walk(int n, int m, global float[m] a, global float[n] b) {
  foreach (int bi in n / 32 blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        float s = 0.0;
        for (int k = 0; k < m; k++) {
          s += a[k];
        }
        b[bi * 32 + w * 32 + t] = s;
      }
    }
  }
}
"""


def test_a_short_kernel_is_not_promised_a_gain_its_launch_rules_out(tmp_path, library
                                                                     ) -> None:
    """One wave of 32-thread blocks, latency-bound for about a microsecond: more warps per
    SM shorten the work's time in proportion, but the kernel also pays its 2 us launch,
    which no occupancy shortens: the gain stays far from the work's alone."""
    messages = _messages(tmp_path, library, WALK, {"n": 132 * 32 * 32, "m": 8})
    (occupancy,) = [m for m in messages if m.code == "occupancy"]
    figures = _estimate(messages)
    launch = figures["seconds_launch"]
    work = figures["estimated_seconds"] - launch
    after = occupancy.value_map["estimated_seconds_after"].numeric
    warps = occupancy.value_map["warps_per_sm"].numeric
    # too few warps to hide their waits: each waits, and issues its share of the SM's
    # work on one of hopper's 4 schedulers besides (Figures.latency_bound)
    issue = figures["seconds_compute"] + figures["seconds_on_chip_memory"]
    assert work == pytest.approx(figures["seconds_latency"] + issue * 4 / warps)
    more = occupancy.value_map["warps_per_sm_after"].numeric
    assert more >= 1.5 * warps  # the work alone would gain 1.5x or more
    assert after - launch == pytest.approx(work * warps / more)
    gain = occupancy.value_map["estimated_gain"].numeric
    assert gain == pytest.approx(figures["estimated_seconds"] / after) and gain < 1.3


def test_the_launch_is_the_limit_of_a_kernel_that_does_almost_nothing() -> None:
    phase = Phase(device_seconds=1e-7, on_chip_bytes=0.0, flops=0.0, loads_per_sm=0.0)
    f = Figures(multiprocessors=2, clock_hz=1e9, warps_per_sm=4, peak_flops=1e12,
                on_chip_bandwidth=1e12, loads_in_flight=1, latency_s=1e-6,
                phases=(phase,), launch_s=2.5e-6)
    assert f.limit == LAUNCH
    assert f.seconds == pytest.approx(2.5e-6 + 1e-7 / timemodel.ACHIEVED_BANDWIDTH)
    assert replace(f, launch_s=0.0).limit != LAUNCH


def test_a_device_may_state_its_launch_latency(tmp_path) -> None:
    """`latency` on a device is what one launch costs (docs/hdl.md); hopper.hdl with
    another figure gives that figure."""
    text = (hwdescs_dir() / "hopper.hdl").read_text()
    assert "latency = 4000 cycles;" in text
    (tmp_path / "hopper.hdl").write_text(text.replace("latency = 4000 cycles;",
                                                      "latency = 2000 cycles;"))
    library = load_library([tmp_path], use_env=False)
    assert not library.failed
    assert timemodel.launch_seconds(library.get("hopper"), 2e9) == pytest.approx(1e-6)


# A sum of K loads a constant apart per unit: the compiler unrolls K <= 16 fully.
SUM = """
const int K = STEPS;
hopper void sums(int n, int m, global float[n] b, global float[K * n] a) {
  foreach (int bi in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int t in 32 threads) {
        int i = bi * 256 + w * 32 + t;
        float s = 0.0;
        for (int k = 0; k < BOUND; k++) {
          s += a[k * n + i];
        }
        b[i] = s;
      }
    }
  }
}
"""


def test_the_unroll_limit_is_code_generation_s() -> None:
    from mcl.codegen.mapping import DEFAULT_UNROLL

    assert timemodel.UNROLLED_STEPS == DEFAULT_UNROLL


@pytest.mark.parametrize(("steps", "bound", "in_flight"), [
    ("4", "K", 4),  # unrolled: the four loads of a unit are independent
    ("8", "K", 8),
    ("32", "K", 1),  # past the unroll limit: a loop, one load per iteration
    ("4", "m", 1),  # a trip count known only from the sizes (m = 4): a loop
])
def test_a_constant_trip_loop_keeps_one_load_in_flight_per_copy(
        tmp_path, library, steps: str, bound: str, in_flight: int) -> None:
    source = SUM.replace("STEPS", steps).replace("BOUND", bound)
    figures = _estimate(_messages(tmp_path, library, source, {"n": 132 * 8 * 256, "m": 4}))
    assert figures["loads_in_flight"] == in_flight


# Each thread runs one of two equal multiply-add loops: chosen by its lane (every warp
# runs both), or by its warp (each warp runs one).
PATHS = """
hopper void paths(int n, int m, global float[n] a, global float[n] b) {
  foreach (int bi in n / 256 blocks) {
    foreach (int w in 8 warps) {
      foreach (int l in 32 threads) {
        int i = bi * 256 + w * 32 + l;
        float s = a[i];
        if (COND) {
          for (int k = 0; k < m; k++) { s = s * 1.0001 + 0.5; }
        } else {
          for (int k = 0; k < m; k++) { s = s * 0.9999 - 0.5; }
        }
        b[i] = s;
      }
    }
  }
}
"""


@pytest.mark.parametrize(("cond", "factor"), [
    ("l % 2 == 0", 2.0),  # half the lanes of every warp each way: both paths
    ("l < 8", 2.0),  # a quarter and three quarters: still both paths, each whole
    ("w % 2 == 0", 1.0),  # a warp goes one way: one path
    ("bi % 2 == 0", 1.0),  # a block goes one way
])
def test_a_warp_divided_between_two_paths_runs_both(tmp_path, library, cond: str,
                                                    factor: float) -> None:
    """The flops per thread are the same in every case; the compute term is the warps'
    issue, twice that where every warp runs both loops."""
    sizes = {"n": 132 * 8 * 256 * 16, "m": 64}
    figures = _estimate(_messages(tmp_path, library, PATHS.replace("COND", cond), sizes))
    threads = sizes["n"]
    flops = threads * sizes["m"] * 2
    peak = timemodel.peak_flops(library.get("hopper"))
    assert figures["seconds_compute"] == pytest.approx(factor * flops / peak, rel=0.02)


# A 2.5-D march (benchmarks/unseen_corpus/stencil3d_march, reduced): one block per 32
# columns, each thread walks the d planes of its column, a barrier in every step; the
# neighbour's element comes from the cache (another block loaded it), so the mean
# latency of the loads is below device memory's. With `BARRIER` empty the warps need not
# wait for each other.
MARCH = """
hopper void march(int d, int w, global float[d, w] b, global float[d, w] a) {
  foreach (int bj in w / 32 blocks) {
    shared float[32] plane;
    foreach (int t in 32 threads) {
      int j = bj * 32 + t;
      for (int k = 0; k < d; k++) {
        plane[t] = a[k, j] + a[k, (j + 1) % w];
        BARRIER
        b[k, j] = plane[31 - t];
        BARRIER
      }
    }
  }
}
"""


def test_each_pass_of_a_loop_around_a_barrier_waits_one_memory_latency(
        tmp_path, library) -> None:
    """No warp starts a pass's loads before the whole block has passed the barrier of the
    pass before, and each pass waits for data no unit has loaded yet: marching through
    1,000 planes waits 1,000 device-memory latencies, though half the loads are served by
    the cache (Little's law alone, at the loads' mean latency, counted less)."""
    hopper = library.get("hopper")
    sizes = {"d": 1000, "w": 132 * 32}  # one block per SM: one round
    figures = _estimate(_messages(tmp_path, library,
                                  MARCH.replace("BARRIER", "barrier(shared);"), sizes))
    clock = 1.98e9  # hopper.hdl's boost clock; device memory: 600 cycles
    memory_latency = 600 / clock
    assert figures["seconds_latency"] >= 1000 * memory_latency * 0.999
    assert figures["estimated_seconds"] >= 1000 * memory_latency
    # without the barriers Little's law stands alone, at the mean latency
    free = _estimate(_messages(tmp_path, library, MARCH.replace("BARRIER", ""), sizes))
    assert free["seconds_latency"] < 1000 * memory_latency * 0.9
    del hopper


def test_the_floor_counts_the_rounds_of_blocks_on_the_busiest_sm() -> None:
    phase = Phase(0.0, 0.0, 0.0, 0.0, passes=10)
    one = Figures(132, 1.98e9, 64, 1e12, 1e12, 1, 1e-7, (phase,), chain_latency_s=3e-7)
    assert one.phase_terms(phase)[timemodel.LATENCY] == pytest.approx(10 * 3e-7)
    three = replace(one, block_rounds=3.0)
    assert three.phase_terms(phase)[timemodel.LATENCY] == pytest.approx(30 * 3e-7)


# Every block adds its 64 counts into one global histogram (histogram_warp_locals's last
# step): UPDATE is the atomic, at an index decided per lane, by the data, or per warp.
BLOCK_ATOMICS = """
hopper void count(int n, global int[64] hist, global int[n] v) {
  foreach (int b in n / 64 blocks) {
    foreach (int w in 2 warps) {
      foreach (int t in 32 threads) {
        int i = b * 64 + w * 32 + t;
        UPDATE
      }
    }
  }
}
"""
ATOMIC_KEY = "seconds_" + timemodel.ATOMICS.replace(" ", "_")


@pytest.mark.parametrize("update, requests", [
    # lanes update distinct bins: each bin once per block, one request per update
    ("atomicAdd(hist[w * 32 + t], 1);", lambda n: n / 64),
    # the data decides: each warp's request may touch both lines of hist
    ("atomicAdd(hist[v[i] % 64], 1);", lambda n: n / 32),
    # every lane of a warp updates bin w: one request per warp, 32 updates in it
    ("atomicAdd(hist[w], 1);", lambda n: n / 32 / 64),
])
def test_atomic_updates_of_one_line_wait_for_each_other(tmp_path, library, update: str,
                                                        requests) -> None:
    """The L2 applies the atomic requests to one line one after another: the phase that
    makes them lasts at least the busiest line's requests times the l2's
    `atomic_interval` (hopper.hdl: 8 cycles, fitted on histogram_warp_locals: 645 us
    measured, 121 us without the term)."""
    n = 64 * 131072
    figures = _estimate(_messages(tmp_path, library, BLOCK_ATOMICS.replace("UPDATE", update),
                                  {"n": n}))
    interval = timemodel._atomic_interval(library.get("hopper"), "global", 1.98e9)
    assert interval == pytest.approx(8 / 1.98e9)
    expected = requests(n) * interval
    assert figures[ATOMIC_KEY] == pytest.approx(expected, rel=1e-6)
    assert figures["estimated_seconds"] >= expected


def test_a_kernel_without_atomics_states_no_atomic_term(tmp_path, library) -> None:
    figures = _estimate(_messages(tmp_path, library, SCALE, {"n": 132 * 32 * 32 * 64}))
    assert ATOMIC_KEY not in figures


def test_a_description_without_an_atomic_interval_has_no_atomic_term(tmp_path,
                                                                     library) -> None:
    """fermi states no `atomic_interval`: the model adds nothing for the updates rather
    than carry hopper's figure to another GPU."""
    source = BLOCK_ATOMICS.replace("UPDATE", "atomicAdd(hist[w * 32 + t], 1);")
    source = source.replace("hopper void", "fermi void")
    figures = _estimate(_messages(tmp_path, library, source, {"n": 64 * 131072}))
    assert ATOMIC_KEY not in figures
