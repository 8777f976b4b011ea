"""Verification on an OpenCL device beside the interpreter (docs/refinements.md,
"Verified before offered"): at a leaf, the original and the next version run as OpenCL
on the PoCL CPU device at the interpreter's sizes and must match too; a device result
that differs fails the check; without a device or a leaf the interpreter verifies alone
and the verification says why."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine import device_check
from mcl.refine.kernel import KernelAtLevel, load_kernel
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


PHASES = """
hopper void phases(int n, global float[n] out) {
  foreach (int b in 1 blocks) {
    shared float[32] part;
    foreach (int w in 1 warps) {
      foreach (int t in 32 threads) {
        for (int e = 0; e < 8; e++) {
          part[t] = e * 1.0;
          barrier(shared);
          if (t == 0 && e < n) {
            out[e] = part[31];
          }
          barrier(shared);
        }
      }
    }
  }
}
"""


def test_the_device_builds_a_loop_around_a_barrier_without_the_unroll_pragma(
        library: HwdLibrary, tmp_path: Path) -> None:
    """PoCL builds such a loop unrolled in minutes (8 steps of a barrier under a
    condition: spmv's row-per-warp version with several-elements), so the check's build
    leaves the hint out; the kernel still runs and computes what it should."""
    path = tmp_path / "phases.mcpl"
    path.write_text(PHASES, encoding="utf-8")
    kernel = load_kernel(path, "hopper", library, (), {"n": 8})
    check = device_check.OpenCLCheck.of(kernel)
    assert check.unavailable is None
    out = check.run(kernel, {"n": 7, "out": np.zeros(7, dtype=np.float32)})
    assert out["out"].tolist() == [float(e) for e in range(7)]
    (built,) = check._programs
    assert "for (int e = 0; e < 8; e++)" in built and "#pragma unroll" not in built


def test_a_verified_next_version_takes_the_cases_only_of_a_reference(
        library: HwdLibrary, tmp_path: Path) -> None:
    """With the reference's cases the padded version, which passed them, gets them as
    its own; on random inputs (the expected outputs are the original's) it does not."""
    kernel = _transpose(library, "hopper")
    verifier = Verifier.of(kernel)
    offer = make_offer(kernel, proposal_for(kernel, PAD), verifier)
    assert offer.kernel is not None and offer.verifier is verifier
    inherited = verifier.passed_by(offer.kernel, offer.verification)
    assert inherited is not None and inherited.kernel is offer.kernel
    assert [c.sizes for c in inherited.cases] == [c.sizes for c in verifier.cases]
    random = Verifier.of(kernel, reference=tmp_path / "none.py")
    assert random.reference is None and len(random.cases) == SIZES_WANTED
    assert random.passed_by(offer.kernel, make_offer(kernel, proposal_for(kernel, PAD),
                                                     random).verification) is None
