"""One rule for how many units a level runs at once (issue 11, item 5;
mcl/feedback/facts/resident.py): the several-elements advice compares the units a kernel
launches with the units the description keeps resident (the slots of its outermost
execution units), at every level, and is not given on a store whose address depends on
data (histogram's scatter), where the problem is atomic contention."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KERNELS, by_code, feedback

from mcl.feedback.facts.resident import resident_units
from mcl.hdl.library import default_library

HERE = Path(__file__).parent / "kernels"
LEVELS = ("gpu", "nvidia", "fermi", "hopper", "mic", "xeon_phi", "x86_avx512")

# The resident units of each level, worked out by hand from the comments of its .hdl
# (SMs x resident warps x warp size, cores x hardware threads x vector lanes, ...).
BY_HAND = {
    "gpu": 16 * 1 * 1024,  # 16 processors x 1 block slot x at most 1,024 threads per block
    "nvidia": 16 * 1024,  # 16 SMPs x 1,024 thread slots (Fig. 13)
    "fermi": 15 * 48 * 32,  # 15 SMs x 48 warp slots x 32 threads
    "hopper": 132 * 2048,  # 132 SMs x 2,048 thread slots (= 64 warps x 32)
    "mic": 60 * 4 * 16,  # 60 cores x 4 hardware threads x 16 vector lanes
    "xeon_phi": 60 * 4 * 16,
    "x86_avx512": 2 * 1 * 16,  # 2 cores x 1 thread x at most 16 lanes
}


@pytest.mark.parametrize("level", LEVELS)
def test_resident_units_follow_the_outermost_slots(level: str) -> None:
    resident = resident_units(default_library().get(level))
    assert resident.units == BY_HAND[level]
    assert f"{resident.nodes:,}" in resident.explain()


@pytest.mark.parametrize("level", ["perfect", "accelerator", "cpu"])
def test_unlimited_levels_have_no_resident_bound(level: str) -> None:
    assert resident_units(default_library().get(level)).units == float("inf")


@pytest.mark.parametrize("level", LEVELS)
def test_the_advice_appears_exactly_when_the_launch_exceeds_the_resident_units(
        level: str) -> None:
    resident = BY_HAND[level]
    # Half the resident units: the translation rounds up to whole blocks (at most 1,024
    # threads), which stays below the resident count at every level.
    assert not by_code(feedback(HERE / "scale.mcpl", level, values={"n": resident // 2}),
                       "elements-several-per-unit")
    (msg,) = by_code(feedback(HERE / "scale.mcpl", level, values={"n": 4 * resident}),
                     "elements-several-per-unit")
    assert msg.value_map["concurrent"].numeric == resident
    assert msg.value_map["units"].numeric >= 4 * resident
    assert f"keeps at most {resident:,} resident" in msg.text


def test_fermi_threads_beyond_the_alus_but_not_the_sms_get_no_advice() -> None:
    # Before issue 11 fermi compared with its 480 ALUs ("runs at most 480 at a time").
    messages = feedback(HERE / "fermi_4096_threads.mcpl")
    assert not by_code(messages, "elements-several-per-unit")


@pytest.mark.parametrize("level", ["gpu", "fermi", "hopper", "mic", "x86_avx512"])
def test_histogram_scatter_is_contention_not_elements_per_unit(level: str) -> None:
    messages = feedback(KERNELS / "histogram" / "perfect.mcpl", level,
                        values={"h": 4096, "w": 4096})
    assert not by_code(messages, "elements-several-per-unit")
    (contention,) = by_code(messages, "store-contention")
    assert contention.text.startswith("atomic contention: hist[image[i, j]]")
    assert contention.hint is not None and "privatise hist" in contention.hint
    (privatise,) = by_code(messages, "store-privatise")  # where the copies go
    # the suggestion, shown by default, names the problem as well
    assert privatise.text.startswith("atomic contention on the 256 addresses of hist: "
                                     "privatise hist: a copy per ")


def test_a_warp_that_reduces_one_element_is_not_one_element_per_thread() -> None:
    # gesummv fermi (v1): the 32 threads of a warp add up one row, thread 0 stores y[i];
    # 131,072 threads exceed the 23,040 resident, but no thread has an element of its own
    messages = feedback(KERNELS / "gesummv" / "fermi_v1.mcpl", values={"n": 4096})
    assert not by_code(messages, "elements-several-per-unit")
