"""privatise on a histogram that every thread adds into one array: the next version
checks, verifies at three sizes and no longer has the store-privatise finding; on the
shipped mic histogram the copy is one per thread; each precondition refuses where it
must (docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import PrivatisationProposal, PrivatiseArray
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
SHARED_DEV = HERE / "histogram_gpu_shared_dev.mcpl"
HISTOGRAM = kernels_dir() / "histogram"
SIZES = {"h": 8192, "w": 8192}
GPU_SIZES = {"h": 16384, "w": 16384}  # benchmarks/apps/histogram.py, on a GPU


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


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    """kernels/histogram/perfect.mcpl translated to hopper: a block per 1024 pixels of
    a row, its units a foreach over warps and one over each warp's threads."""
    return search_start(HISTOGRAM / "perfect.mcpl", "hopper", library,
                        values=GPU_SIZES).kernel


def test_the_units_of_nested_foreach_loops_share_a_copy(translated: KernelAtLevel) -> None:
    proposal = proposal_for(translated, "privatise:array=hist")
    offer = make_offer(translated, proposal)
    text = offer.text
    # one copy per block, before the warps; the block's units numbered in order
    assert ("            shared int[256] s_hist;\n"
            "            foreach (int wtj in nrWarpsTj warps) {\n") in text
    assert ("                    for (int e = wtj * nrThreadsTj + ttj; e < 256; "
            "e += nrWarpsTj * nrThreadsTj) {\n"
            "                        s_hist[e] = 0;\n") in text
    assert "atomicAdd(s_hist[image[i, j]], 1);" in text
    assert text.count("barrier(shared);") == 2
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # by the model: the updates of one line of hist leave the L2 (33.9 ms -> 1.5 ms)
    assert offer.gain is not None and offer.gain > 10


def test_blocks_that_walk_several_rows_add_fewer_copies(translated: KernelAtLevel) -> None:
    """A block per row adds 262,144 copies into hist, which contend at the L2 as the
    pixels did; a block that walks 64 rows (several-elements, then privatise) adds 64
    times fewer (the paper's histogram, section 7: a fixed grid of blocks)."""
    plain = make_offer(translated, proposal_for(translated, "privatise:array=hist"))
    proposal = proposal_for(translated, "privatise:array=hist,elements=64")
    assert dict(proposal.args) == {"array": "hist", "owner": "7", "space": "shared",
                                   "elements": "64", "merged": "6"}
    offer = make_offer(translated, proposal)
    text = offer.text
    assert "    foreach (int bi0 in (h + 63) / 64 blocks) {\n" in text
    # the rows' loop indented as the file is, four spaces a level
    assert ("                    for (int ebi = 0; ebi < 64; ebi++) {\n"
            "                        int bi = ebi * ((h + 63) / 64) + bi0;\n"
            "                        if (bi < h) {\n"
            "                            int tj = wtj * nrThreadsTj + ttj;\n") in text
    assert text.index("s_hist[e] = 0;") < text.index("for (int ebi = 0; ebi < 64; ebi++)") \
        < text.index("atomicAdd(hist[e], s_hist[e]);")
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # by the model 33.9 ms -> 452 µs (hopper_v1, written by hand: 440 µs)
    assert offer.seconds_after is not None and plain.seconds_after is not None
    assert offer.seconds_after < plain.seconds_after / 2


def test_blocks_of_gpu_v1s_work_are_estimated_faster(translated: KernelAtLevel) -> None:
    """1024 rows per block at 16384 x 16384 gives 256 blocks of 1024 threads, each
    thread 1024 pixels as in the hand-written gpu (v1) (1024 blocks of 256 threads):
    4 and 16 times fewer copies to clear and add than with 256 and 64 rows, which the
    model estimates faster (the factors a list weighs, privatise.ELEMENTS)."""
    seconds = {}
    for factor in (64, 256, 1024):
        made = next_version(translated, proposal_for(
            translated, f"privatise:array=hist,elements={factor}"))
        seconds[factor] = made.kernel.model_seconds
    assert seconds[1024] is not None and seconds[256] is not None \
        and seconds[64] is not None
    assert seconds[1024] < seconds[256] < seconds[64]


@pytest.mark.slow  # about 60 s: the factors weighed, the fastest verified
def test_the_list_offers_the_fastest_factor(translated: KernelAtLevel) -> None:
    """At 16384 rows the factors are grids of 16384 / F blocks walking the rows
    (mcl.refine.grid_walk); the model's fastest is F = 1024's 16 blocks a column of
    blocks, as gpu (v1) gives each thread 1024 pixels."""
    offers, _ = list_offers(translated)
    assert [o.proposal.invocation for o in offers][:2] == [
        "privatise:array=hist,owner=7,space=shared,units=16,merged=6",
        "privatise:array=hist,owner=7,space=shared"]


@pytest.mark.parametrize("which", [0, 1])
def test_the_verifier_catches_a_barrier_removed(translated: KernelAtLevel,
                                                library: HwdLibrary, which: int) -> None:
    """Without the barrier after the clearing, a unit's updates may be cleared by a
    slower one; without the one before the adding, a unit may add the copy before the
    others' updates: the interpreter's outputs differ from the reference."""
    good = next_version(translated, proposal_for(translated,
                                                 "privatise:array=hist,elements=4")).text
    at = [n for n in range(len(good)) if good.startswith("barrier(shared);", n)][which]
    wrong = good[:at] + good[at + len("barrier(shared);"):]
    broken = load_kernel(translated.path, translated.level, library,
                         translated.include_dirs, translated.values, text=wrong,
                         reference=translated.reference)
    assert not Verifier.of(translated).check(broken).ok


def test_sharers_of_two_sibling_foreach_statements_refuse(library: HwdLibrary,
                                                           tmp_path: Path) -> None:
    """A sharer that holds two foreach statements: the copy's clearing and adding go
    into the innermost body, which is two bodies here."""
    text = SHARED_DEV.read_text()
    old = "    foreach (int t in NR_THREADS threads) {\n"
    assert old in text and text.endswith("    }\n  }\n}\n")
    nested = text.replace(old, "    foreach (int s in 1 threads) {\n"
                               "      foreach (int u in 1 threads) {\n"
                               "        atomicAdd(hist[0], 0);\n"
                               "      }\n" + old)
    text = nested[:-len("}\n")] + "  }\n}\n"
    path = tmp_path / SHARED_DEV.name
    path.write_text(text)
    kernel = open_kernel(path, "gpu", library, values=SIZES)
    with pytest.raises(Refused, match=r"the body of foreach s is not one foreach \(and "
                                      r"declarations\) of the units inside it"):
        proposal_for(kernel, "privatise:array=hist,owner=9,space=local")
