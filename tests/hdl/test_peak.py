"""Peak arithmetic throughput and bandwidths derived from the bundled descriptions equal
the hand computations of docs/hardware.md (issue 17)."""

from __future__ import annotations

import math
import textwrap

import pytest

from mcl.hdl.library import default_library, load_library
from mcl.hdl.peak import bandwidth, bandwidths, compute_peaks, peak_flops


@pytest.fixture(scope="module")
def lib():
    return default_library()


# (description, SMs or cores x lanes, clock in Hz, float32 flop/cycle, float64 flop/cycle)
HAND = [
    ("hopper", 132 * 4 * 32, 1980e6, 2, 1),      # 66.9 TFLOP/s, 33.5 float64
    ("fermi", 15 * 32, 1401e6, 2, 2 / 8),        # 1345 GFLOP/s, 168 float64
    ("xeon_phi", 60 * 16, 1053e6, 2, 1),         # 2022 GFLOP/s, 1011 float64
    ("x86_avx512", 1 * 2 * 16, 3700e6, 2, 1),    # 236.8 GFLOP/s
]


@pytest.mark.parametrize(("name", "lanes", "clock", "f32", "f64"), HAND)
def test_peak_equals_hand_computation(lib, name, lanes, clock, f32, f64):
    hwd = lib.get(name)
    assert peak_flops(hwd) == pytest.approx(lanes * clock * f32)
    assert peak_flops(hwd, "double") == pytest.approx(lanes * clock * f64)
    (peak,) = compute_peaks(hwd)
    assert (peak.units, peak.clock_hz, peak.ops_per_cycle) == (lanes, clock, f32)


def test_h100_fp32_peak_is_the_published_67_tflops(lib):
    assert peak_flops(lib.get("hopper")) / 1e12 == pytest.approx(66.9, abs=0.05)


@pytest.mark.parametrize("name", ["perfect", "accelerator", "gpu", "nvidia", "mic", "cpu"])
def test_no_peak_without_a_clock(lib, name):
    assert peak_flops(lib.get(name)) is None


def test_bandwidths_by_memory_level(lib):
    hopper = lib.get("hopper")
    assert bandwidth(hopper, "global").bytes_per_s == pytest.approx(3350e9)
    shared = bandwidth(hopper, "shared")
    assert (shared.instances, shared.per_instance) == (132, pytest.approx(128 * 1980e6))
    assert bandwidth(hopper, "reg") is None  # registers: not a memory level
    fermi = lib.get("fermi")
    assert bandwidth(fermi, "global").bytes_per_s == pytest.approx(384 * 3696e6 / 8)
    assert bandwidth(fermi, "shared").bytes_per_s == pytest.approx(15 * 64 * 1401e6)
    assert bandwidth(lib.get("perfect"), "main").bytes_per_s == math.inf
    assert [b.space for b in bandwidths(lib.get("xeon_phi"))] == ["dev"]


def test_a_users_description_states_its_own_peak(tmp_path):
    (tmp_path / "tiny.hdl").write_text(textwrap.dedent("""\
        hardware_description tiny;
        specializes perfect;
        parallelism hierarchy { perfect.hierarchy.main; perfect.hierarchy.threads; }
        device tiny { mem; ic; cores; }
        memory mem { space(main); }
        interconnect ic { connects(mem, cores.core[*]); bandwidth = 10 GB/s; }
        execution_group cores {
          nr_units = 3;
          clock_frequency = 2 GHz;
          execution_unit core {
            slots(thread, 1);
            simd_group lanes { nr_units = 4; simd_unit lane { slots(thread, 1); mul; } }
            load_store_unit lsu { slots(thread, 1); perfect.memory_ops; }
          }
        }
        instructions mul { op((*), 1); op("fma", 4); }
        """))
    tiny = load_library([str(tmp_path)]).get("tiny")
    # (*) at cost 1 (1 flop/cycle) beats an fma every 4 cycles (0.5 flop/cycle)
    assert peak_flops(tiny) == pytest.approx(3 * 4 * 2e9 * 1)
    assert peak_flops(tiny, "double") is None
    assert bandwidth(tiny, "main").bytes_per_s == pytest.approx(10e9)
