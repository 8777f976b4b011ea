"""Verification on an OpenCL device beside the interpreter (docs/refinements.md,
"Verified before offered"): at a leaf, the original and the next version run as OpenCL
on the PoCL CPU device at the interpreter's sizes and must match too; a device result
that differs fails the check; without a device or a leaf the interpreter verifies alone
and the verification says why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine import device_check
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.offers import make_offer, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

TRANSPOSE = kernels_dir() / "transpose" / "gpu_v1.mcpl"
PAD = "pad-shared:array=tile,pad=1"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _transpose(library: HwdLibrary, level: str) -> KernelAtLevel:
    return open_kernel(TRANSPOSE, level, library, values={"n": 8192, "m": 8192})


def test_at_a_leaf_the_pocl_device_runs_both_versions(library: HwdLibrary) -> None:
    kernel = _transpose(library, "hopper")
    verifier = Verifier.of(kernel)
    assert verifier.device.unavailable is None
    assert "Portable Computing Language" in verifier.device.device
    offer = make_offer(kernel, proposal_for(kernel, PAD), verifier)
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert offer.verification.runs_on == \
        f"the interpreter and OpenCL on {verifier.device.device}"
    # the original's program and the next version's, each built once for the three sizes
    assert len(verifier.device._programs) == 2


def test_a_device_result_that_differs_fails_the_check(library: HwdLibrary,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = _transpose(library, "hopper")
    verifier = Verifier.of(kernel)
    original_run = verifier.device.run

    def wrong_on_the_next_version(version: KernelAtLevel, args: Mapping[str, Any]
                                  ) -> dict[str, np.ndarray]:
        out = original_run(version, args)
        if version is not kernel:
            out["b"][0, 0] += 1.0
        return out

    monkeypatch.setattr(verifier.device, "run", wrong_on_the_next_version)
    with pytest.raises(Refused, match="does not verify .* b on .*Portable Computing"):
        make_offer(kernel, proposal_for(kernel, PAD), verifier)


def test_above_the_leaves_the_interpreter_verifies_alone(library: HwdLibrary) -> None:
    """gpu is no leaf: no OpenCL is generated for it, so nothing runs on a device."""
    kernel = _transpose(library, "gpu")
    verifier = Verifier.of(kernel)
    assert verifier.runs_on == ("the interpreter only (gpu is not a leaf, so no OpenCL is "
                                "generated to run on a device)")
    assert len(verifier.cases) == SIZES_WANTED


def test_without_an_opencl_device_the_verification_says_so(
        library: HwdLibrary, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_check, "_shared_queue", [])
    monkeypatch.setenv("MCL_DEVICE", "no such device")
    kernel = _transpose(library, "hopper")
    offer = make_offer(kernel, proposal_for(kernel, PAD))
    assert offer.verification.ok
    assert offer.verification.runs_on.startswith(
        "the interpreter only (no OpenCL run at hopper: no OpenCL device matches "
        "'no such device'")
