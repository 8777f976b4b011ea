"""fermi's occupancy function: the grid check (4 blocks on the GTX480's 15 SMs) and the
blocks per SM from its slots (8 blocks, 48 warps), registers (32768, allocated per warp
in units of 64) and shared memory (48 kB in units of 128 B), computed here by hand."""

from __future__ import annotations

import math

import pytest

from mcl import pipeline
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

KERNEL = """
fermi void small(int n, global float[n] out, global float[n] src) {
  foreach (int b in n / (WARPS * 32) blocks) {
    shared float[SHARED] tile;
    foreach (int w in WARPS warps) {
      foreach (int t in 32 threads) {
        int i = (b * WARPS + w) * 32 + t;
        tile[w * 32 + t] = src[i];
        barrier(shared);
        out[i] = tile[w * 32 + t] * 2.0;
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def library():
    return default_library()


def _occupancy(tmp_path, library, warps, shared, n):
    path = tmp_path / "small.mcpl"
    path.write_text(KERNEL.replace("WARPS", str(warps)).replace("SHARED", str(shared)))
    program = load_program(path, (), library)
    function = program.main.functions[0]
    checked = pipeline.check(program, library)
    (message,) = [m for m in analyse(function, checked, library.get("fermi"), {"n": n},
                                     only=["functions"]) if m.code == "occupancy"]
    return message, {k: v.numeric for k, v in message.values}


def test_four_blocks_on_fifteen_sms_are_flagged(tmp_path, library):
    message, values = _occupancy(tmp_path, library, 8, 256, 4 * 256)
    assert message.severity.value == "suggestion"
    assert "limited by the grid of 4 blocks for 15 SMs" in message.text
    assert values["grid_blocks"] == 4 and values["blocks_per_sm"] == 1


@pytest.mark.parametrize(("warps", "shared"), [(8, 256), (2, 256), (4, 6144), (16, 12000)])
def test_blocks_per_sm_follow_the_slots_and_shared_memory(tmp_path, library, warps, shared):
    _, values = _occupancy(tmp_path, library, warps, shared, 1 << 22)
    shared_bytes = -(-shared * 4 // 128) * 128
    expected = min(8, 48 // warps, 48 * 1024 // shared_bytes)
    registers = values["registers_per_thread_estimate"]
    per_warp = -(-registers * 32 // 64) * 64
    expected = min(expected, 32768 // (per_warp * warps))
    assert values["blocks_per_sm"] == expected
    assert values["warps_per_sm"] == expected * warps
    assert values["warp_slots"] == 48
    assert not any(isinstance(v, float) and math.isnan(v) for v in values.values())
