"""privatise on a histogram that every thread adds into one array: the next version
checks, verifies at three sizes and no longer has the store-privatise finding; on the
shipped mic histogram the copy is one per thread; each precondition refuses where it
must (docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import PrivatisationProposal, PrivatiseArray
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
SHARED_DEV = HERE / "histogram_gpu_shared_dev.mcpl"
HISTOGRAM = kernels_dir() / "histogram"
SIZES = {"h": 8192, "w": 8192}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.mark.parametrize("leaf", ["hopper", "fermi"])
def test_a_copy_per_block_in_local_verifies_and_loses_the_finding(
        library: HwdLibrary, leaf: str) -> None:
    kernel = open_kernel(SHARED_DEV, leaf, library, values=SIZES)
    finding = next(f for f in kernel.findings if isinstance(f, PrivatisationProposal))
    assert finding.span is not None
    proposal = proposal_for(kernel, f"store-privatise@{finding.span.line}")
    # the leaf's shared memory, named as the kernel's level (gpu) names it
    assert dict(proposal.args) == {"array": "hist", "owner": "9", "space": "local"}
    offer = make_offer(kernel, proposal)
    text = offer.text
    assert "    local int[256] l_hist;\n    foreach (int t in NR_THREADS threads) {" in text
    assert "atomicAdd(l_hist[image[r, c]], 1);" in text
    assert "atomicAdd(hist[e], l_hist[e]);" in text and text.count("barrier(local);") == 2
    assert "      // rows to blocks, columns to threads\n" in text  # kept as written
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    after = next_version(kernel, proposal).kernel
    # (the copy's own contention among a block's warps is a finding of its own, at hopper)
    assert not any(isinstance(f.change, PrivatiseArray) and f.change.array == "hist"
                   for f in after.findings)
    # weighed by the model: at hopper the updates of one line of hist by every thread of
    # the grid wait for each other at the L2 (its `atomic_interval`, docs/feedback.md,
    # "Time estimate"), and a block's copy takes them off the device's memory; fermi
    # states no interval, so the model sees no gain there
    assert offer.seconds_before is not None and offer.seconds_after is not None
    if leaf == "hopper":
        assert offer.seconds_after < offer.seconds_before / 10


def test_the_mic_histogram_gets_a_copy_per_thread(library: HwdLibrary) -> None:
    kernel = open_kernel(HISTOGRAM / "mic_v1.mcpl", "xeon_phi", library)
    proposal = proposal_for(kernel, "privatise:array=hist")
    assert proposal.invocation == "privatise:array=hist,owner=20,space=dev"
    made = next_version(kernel, proposal)
    assert "    dev int[256] d_hist;\n    foreach (int v in NR_VECTORS vectors) {" \
        in made.text
    # The interpreter runs it right, but OpenCL has no per-work-item array shared by the
    # lanes of a vector (only __local memory is shared by a group's work-items), so the
    # device run refuses it and the list says why instead of offering it.
    offers, refused = list_offers(kernel)
    assert not any(o.proposal.refinement == "privatise" for o in offers)
    why = next(r for r in refused if r.what.startswith("privatise"))
    assert "does not verify" in why.reason and "__local memory" in why.reason


@pytest.mark.parametrize(("path", "leaf", "why"), [
    # at perfect, the blocks and threads the copy would sit between do not exist yet
    (HISTOGRAM / "perfect.mcpl", "hopper", "the copy has no place between the owners"),
    # the per-warp copy of gpu (v1)'s local histogram: gpu has no warps
    (HISTOGRAM / "gpu_v1.mcpl", "hopper", "l_hist is not a parameter"),
])
def test_privatise_on_the_shipped_histograms_says_why_not(
        library: HwdLibrary, path: Path, leaf: str, why: str) -> None:
    kernel = open_kernel(path, leaf, library)
    offers, refused = list_offers(kernel)
    assert not any(o.proposal.refinement == "privatise" for o in offers)
    assert any(r.what == "privatise" and why in r.reason for r in refused)


@pytest.mark.parametrize(("old", "new", "spec", "why"), [
    ("atomicAdd(hist[image[r, c]], 1);", "atomicAdd(hist[image[r, c]], hist[0]);",
     "privatise:hist", "accessed otherwise than by atomicAdd"),
    ("// rows to blocks", "if (t > 9999) { return; }\n      // rows to blocks",
     "privatise:hist", "holds a return"),
    ("dev int[256] hist", "dev int[h] hist",
     "privatise:array=hist,owner=9,space=local", "not a constant"),
    ("// rows to blocks", "// rows", "privatise:array=hist,owner=8,space=local",
     "no foreach starts at line 8"),
    ("// rows to blocks", "// rows", "privatise:array=hist,owner=9,space=shared",
     "gpu has no memory space shared"),
    ("// rows to blocks", "// rows", "privatise:array=image,owner=9,space=local",
     "not a parameter of histogram of one dimension"),
    ("// rows to blocks", "// rows", "privatise:array=image",
     "no store-privatise finding of image: give owner= and space="),
])
def test_privatise_is_refused_where_a_precondition_fails(
        library: HwdLibrary, tmp_path: Path, old: str, new: str, spec: str,
        why: str) -> None:
    text = SHARED_DEV.read_text()
    assert old in text
    path = tmp_path / SHARED_DEV.name
    path.write_text(text.replace(old, new))
    kernel = open_kernel(path, "hopper", library, values=SIZES)
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, spec)


def test_sharers_of_two_foreach_statements_are_refused(library: HwdLibrary,
                                                       tmp_path: Path) -> None:
    text = SHARED_DEV.read_text()
    old = "    foreach (int t in NR_THREADS threads) {\n"
    assert old in text and text.endswith("    }\n  }\n}\n")
    nested = text.replace(old, "    foreach (int s in 1 threads) {\n" + old)
    text = nested[:-len("}\n")] + "  }\n}\n"
    path = tmp_path / SHARED_DEV.name
    path.write_text(text)
    kernel = open_kernel(path, "gpu", library, values=SIZES)
    with pytest.raises(Refused, match="more than one foreach"):
        proposal_for(kernel, "privatise:array=hist,owner=9,space=local")
