"""A warp-uniform read of a cached read-only space is not sent to shared memory
(issue 11: the fermi feedback told convolution fermi (v1) to undo its step)."""

from __future__ import annotations

from conftest import KERNELS, by_code, feedback

SIZES = {"h": 4096, "w": 4096, "fh": 9, "fw": 9}


def test_constant_filter_read_by_a_whole_warp_is_a_broadcast_not_a_shared_proposal() -> None:
    messages = feedback(KERNELS / "convolution" / "fermi_v1.mcpl", values=SIZES)
    on_f = [m for m in messages if "f[y, x]" in m.text]
    assert not [m for m in on_f if m.code == "memory-faster-space"]
    (broadcast,) = by_code(messages, "memory-broadcast")
    assert "f[y, x]" in broadcast.text and "constant_cache" in broadcast.text


def test_the_same_filter_in_global_memory_is_still_proposed_for_shared() -> None:
    """perfect at fermi: the filter in global memory (cached, but not read-only) — the
    proposal to share it in shared memory stays."""
    messages = feedback(KERNELS / "convolution" / "perfect.mcpl", level="fermi",
                        values=SIZES)
    assert [m for m in by_code(messages, "memory-faster-space") if m.text.startswith("f[")]
    assert not by_code(messages, "memory-broadcast")
