"""A warp-uniform read of a cached read-only space is not sent to shared memory (the
fermi feedback told convolution fermi (v1) to undo its step), nor a filter that the l1
serves."""

from __future__ import annotations

from conftest import KERNELS, by_code, feedback

SIZES = {"h": 4096, "w": 4096, "fh": 9, "fw": 9}


def test_constant_filter_read_by_a_whole_warp_is_a_broadcast_not_a_shared_proposal() -> None:
    messages = feedback(KERNELS / "convolution" / "fermi_v1.mcpl", values=SIZES)
    on_f = [m for m in messages if "f[y, x]" in m.text]
    assert not [m for m in on_f if m.code == "memory-faster-space"]
    (broadcast,) = by_code(messages, "memory-broadcast")
    assert "f[y, x]" in broadcast.text and "constant_cache" in broadcast.text


def test_the_same_filter_in_global_memory_is_served_by_the_l1() -> None:
    """perfect at fermi: the filter in global memory (cached, but not read-only) is no
    broadcast of a cache of its own; its 324 B lie in fermi's 16 kB l1, which serves the
    reuse between the threads of a block: a fact, not a proposal for shared."""
    messages = feedback(KERNELS / "convolution" / "perfect.mcpl", level="fermi",
                        values=SIZES)
    assert not [m for m in by_code(messages, "memory-faster-space") if m.text.startswith("f[")]
    (served,) = [m for m in by_code(messages, "memory-cache-serves") if m.text.startswith("f[")]
    assert "l1 already serves" in served.text
    assert not by_code(messages, "memory-broadcast")


def test_a_filter_larger_than_the_l1_is_still_proposed_for_shared() -> None:
    """A 65 x 65 filter, 16,900 B, does not fit fermi's 16 kB l1: the proposal stays."""
    messages = feedback(KERNELS / "convolution" / "perfect.mcpl", level="fermi",
                        values={**SIZES, "fh": 65, "fw": 65})
    assert [m for m in by_code(messages, "memory-faster-space") if m.text.startswith("f[")]
    assert not [m for m in by_code(messages, "memory-cache-serves") if m.text.startswith("f[")]
