"""A fixed grid of units that walks a foreach's elements (mcl.refine.grid_walk), as
privatise makes it for the translated histogram (the hand-written gpu (v1)'s fixed grid
of blocks, paper section 7): the next version checks and verifies at three sizes, its
walk has a constant stride, and the compiler's schedule of it issues several loads
before their atomic updates where several-elements' guarded iterations issue one at a
time (docs/refinements.md, *privatise*)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcl.feedback.findings import TimeEstimate, first
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import apply_edits
from mcl.refine.grid_walk import grid_walk
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import make_offer, next_version, open_kernel, proposal_for
from mcl.refine.privatise import Privatise
from mcl.refine.refinement import Proposal, Refused
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
SHARED_DEV = HERE / "histogram_gpu_shared_dev.mcpl"
HISTOGRAM = kernels_dir() / "histogram"
GPU_SIZES = {"h": 16384, "w": 16384}  # benchmarks/apps/histogram.py, on a GPU
GRID = "privatise:array=hist,owner=7,space=shared,units=16,merged=6"


@contextmanager
def _machine_code() -> Iterator[None]:
    """The time model's issue term and loads in flight from NVRTC's machine code per
    line, as `mcl refine` has them (mcl.cli; the tests' default leaves it out)."""
    from mcl.backends import line_instructions
    from mcl.feedback.compiler_instructions import use_counter

    use_counter(line_instructions)
    try:
        yield
    finally:
        use_counter(None)


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    """kernels/histogram/perfect.mcpl translated to hopper, a block per 1024 pixels."""
    with _machine_code():
        return search_start(HISTOGRAM / "perfect.mcpl", "hopper", library,
                            values=GPU_SIZES).kernel


def test_privatise_weighs_grids_where_the_rows_are_a_number(
        translated: KernelAtLevel) -> None:
    """At 16384 rows the factors 4 ... 1024 of privatise.ELEMENTS are grids of
    16384 / F blocks; the guarded several-elements loop is no longer among them."""
    made = [p.invocation for p in Privatise().proposals(translated)
            if isinstance(p, Proposal)]
    grids = [m for m in made if ",units=" in m]
    assert [g.split("units=")[1].split(",")[0] for g in grids] == \
        ["4096", "1024", "256", "64", "16"]
    assert GRID in grids
    assert not any("elements=" in m for m in made)


def test_a_count_the_sizes_do_not_give_keeps_the_guarded_loops(library: HwdLibrary) -> None:
    """The test kernel's blocks are `nrBlocks = min(NR_BLOCKS, h)`, a local: no number
    of units to fix, so the factors stay several-elements' loops."""
    kernel = open_kernel(SHARED_DEV, "hopper", library, values={"h": 8192, "w": 8192})
    made = [p.invocation for p in Privatise().proposals(kernel) if isinstance(p, Proposal)]
    assert [m.split("elements=")[1].split(",")[0] for m in made if "elements=" in m] == \
        ["4", "16", "64", "256", "1024"]
    assert not any("units=" in m for m in made)


def test_the_grid_walks_the_rows_with_a_constant_stride(translated: KernelAtLevel) -> None:
    proposal = proposal_for(translated, "privatise:array=hist,units=16")
    assert proposal.invocation == GRID
    offer = make_offer(translated, proposal)
    text = offer.text
    assert "const int NR_BI0 = 16;\n\nhopper void histogram(" in text
    assert "    foreach (int bi0 in NR_BI0 blocks) {\n" in text
    # the body as written, one level deeper, between the copy's clearing and adding
    assert ("                    for (int bi = bi0; bi < h; bi += NR_BI0) {\n"
            "                        int tj = wtj * nrThreadsTj + ttj;\n") in text
    assert text.index("s_hist[e] = 0;") < text.index("bi += NR_BI0") \
        < text.index("atomicAdd(hist[e], s_hist[e]);")
    # verified at three sizes, two of them with fewer rows than the grid has blocks
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED


def test_the_compiler_issues_several_loads_before_the_updates(
        translated: KernelAtLevel) -> None:
    """The guarded loop of F iterations puts each load behind a branch of its own: one
    load in flight per warp, each waiting for the update of the one before. The
    constant stride lets NVRTC unroll the walk and issue four loads, then four updates
    (gpu (v1)'s column loop of stride NR_THREADS gets the same schedule). The model's
    total stays bound by device memory (no gain it could defend); the loads in flight
    are the machine code's."""
    in_flight = {}
    with _machine_code():
        for spec in ("privatise:array=hist,elements=1024", "privatise:array=hist,units=16"):
            after = next_version(translated, proposal_for(translated, spec)).kernel
            estimate = first(after.findings, TimeEstimate, after.function)
            assert estimate is not None
            in_flight[spec.rsplit(",", 1)[1]] = estimate.loads_in_flight
    assert in_flight["elements=1024"] <= 1.0
    assert in_flight["units=16"] >= 2.0


@pytest.mark.parametrize(("spec", "why"), [
    ("privatise:array=hist,units=16,elements=4", "give elements= or units=, not both"),
    ("privatise:array=hist,units=0", "units=0: at least one unit"),
])
def test_a_grid_is_refused_where_it_cannot_be_made(translated: KernelAtLevel, spec: str,
                                                   why: str) -> None:
    with pytest.raises(Refused, match=why):
        proposal_for(translated, spec)


def test_a_grid_keeps_each_element_between_the_bodys_barriers(library: HwdLibrary) -> None:
    """matmul's gpu (v1): each block stages tiles of a between barriers; as a grid of 64
    blocks walking the rows, every block meets its barriers once per row it takes (the
    same count for all of its threads), and each row ends at one more barrier."""
    kernel = open_kernel(kernels_dir() / "matmul" / "gpu_v1.mcpl", "hopper", library,
                         values={"n": 8192, "m": 8192, "p": 8192})
    text = apply_edits(kernel.text, grid_walk(kernel, 23, 64))
    assert "for (int bi = bi0; bi < n; bi += NR_BI0) {" in text
    assert text.count("barrier(local);") == kernel.text.count("barrier(local);") + 1
    after = load_kernel(kernel.path, kernel.level, library, kernel.include_dirs,
                        kernel.values, text=text, reference=kernel.reference)
    assert Verifier.of(kernel).check(after).ok
