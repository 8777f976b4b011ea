"""tile-2d-shared: the translation of matmul's perfect version (its counts named) becomes
one whose threads each compute a 2-D tile of c from tiles of a and b that the block
stages in shared memory phase by phase along k (the shape of kernels/matmul/hopper_v1);
the next version checks at hopper, verifies at three sizes on the interpreter and the
OpenCL device, the model weighs it faster than tile-2d's tile from the L1, and the
search takes it (docs/refinements.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import make_offer, next_version, proposal_for
from mcl.refine.refinement import Proposal, Refused
from mcl.refine.search import SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.tile_2d_shared import Tile2DShared
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

SIZES = {"n": 4096, "m": 4096, "p": 4096}
TILE = "line=21,elems_i=8,elems_j=8,threads_i=16,threads=256"


@contextmanager
def _machine_code() -> Iterator[None]:
    """The time model's issue term from NVRTC's machine code per line, as `mcl refine`
    and `mcl apply` have it (mcl.cli; the tests' default leaves it out, tests/conftest)."""
    from mcl.backends import line_instructions
    from mcl.feedback.compiler_instructions import use_counter

    use_counter(line_instructions)
    try:
        yield
    finally:
        use_counter(None)


@pytest.fixture(autouse=True)
def _issue_from_machine_code() -> Iterator[None]:
    with _machine_code():
        yield


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def named(library: HwdLibrary) -> KernelAtLevel:
    with _machine_code():
        start = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                             values=SIZES).kernel
        return next_version(start, proposal_for(start, "name-counts")).kernel


def test_the_block_stages_tiles_of_a_and_b(named: KernelAtLevel) -> None:
    proposal = proposal_for(named, f"tile-2d-shared:{TILE}")
    assert dict(proposal.args) == {"line": "21", "elems_i": "8", "elems_j": "8",
                                   "threads_i": "16", "threads": "256", "tile_k": "8"}
    offer = make_offer(named, proposal)
    text = offer.text
    # the phase's width a named constant, with the rule that keeps the fills whole
    assert ("// require: TILE_I * TILE_K % (NR_WARPS_TJ * NR_THREADS_TJ) == 0 && "
            "TILE_K * TILE_J % (NR_WARPS_TJ * NR_THREADS_TJ) == 0\n"
            "const int TILE_K = 8;\n") in text
    # the tiles in the block's memory, in the loads' index order
    assert ("            shared float[TILE_I][TILE_K] tile_a;\n"
            "            shared float[TILE_K][TILE_J] tile_b;\n"
            "            foreach (int wtj in NR_WARPS_TJ warps) {\n") in text
    # a phase: the block's threads fill the tiles (consecutive threads along the last
    # index, zeros outside a and b), a barrier, TILE_K steps from the tiles, a barrier
    assert ("                    for (int k0 = 0; k0 < p; k0 += TILE_K) {\n"
            "                        for (int r = 0; r < TILE_I * TILE_K / "
            "(NR_WARPS_TJ * NR_THREADS_TJ); r++) {\n"
            "                            int e = r * (NR_WARPS_TJ * NR_THREADS_TJ) + unit;\n"
            "                            int i = bi * TILE_I + e / TILE_K;\n"
            "                            int k = k0 + e % TILE_K;\n"
            "                            if (i < n && k < p) {\n"
            "                                tile_a[e / TILE_K][e % TILE_K] = a[i, k];\n"
            "                            } else {\n"
            "                                tile_a[e / TILE_K][e % TILE_K] = 0.0;\n") in text
    assert "                            int j = bj * TILE_J + e % TILE_J;\n" in text
    assert ("                        barrier(shared);\n"
            "                        for (int kk = 0; kk < TILE_K; kk++) {\n"
            "                            for (int ei = 0; ei < ELEMS_I; ei++) {\n"
            "                                r_a[ei] = tile_a[ei * THREADS_I + ui][kk];\n"
            ) in text
    assert "                                r_b[ej] = tile_b[kk][ej * THREADS_J + uj];\n" \
        in text
    assert text.count("barrier(shared);") == 2
    # no load of a or b from global memory is left in the phase's steps
    steps = text.split("for (int kk = 0;")[1].split("barrier(shared);")[0]
    assert not re.search(r"\b[ab]\[", steps)
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
    # by the model: 18.6 ms -> 4.69 ms
    assert offer.gain is not None and offer.gain > 3


def test_the_model_weighs_the_staged_tile_faster_than_the_l1s(named: KernelAtLevel) -> None:
    """The same 8 x 8 tile at 256 threads, its operands from the L1 (tile-2d: 5.77 ms)
    or from the staged tiles (4.69 ms): each line of a and b comes into the SM once per
    phase, and the steps issue fewer instructions."""
    plain = next_version(named, proposal_for(named, f"tile-2d:{TILE}")).kernel
    staged = next_version(named, proposal_for(named, f"tile-2d-shared:{TILE}")).kernel
    assert plain.model_seconds is not None and staged.model_seconds is not None
    assert plain.model_seconds / staged.model_seconds > 1.1


def test_the_verifier_catches_a_fill_that_leaves_the_edge_unguarded(
        named: KernelAtLevel, library: HwdLibrary) -> None:
    """Without the guard on k, the last phase at sizes TILE_K does not divide reads a
    past its last column: the interpreter's index check fails the version."""
    good = next_version(named, proposal_for(named, f"tile-2d-shared:{TILE}")).text
    wrong = good.replace("if (i < n && k < p) {", "if (i < n) {")
    assert wrong != good
    broken = load_kernel(named.path, named.level, library, named.include_dirs,
                         named.values, text=wrong, reference=named.reference)
    assert not Verifier.of(named).check(broken).ok


def test_the_list_weighs_each_tile_at_half_the_block_too(named: KernelAtLevel) -> None:
    """8 x 8 fits the registers of 512 threads, not 1024: the list weighs it at 512 and
    at 256 (hopper_v1's block), one group, so that the model's fastest is offered."""
    proposals = [p for p in Tile2DShared().proposals(named) if isinstance(p, Proposal)]
    eights = [dict(p.args).get("threads") for p in proposals
              if dict(p.args)["elems_i"] == dict(p.args)["elems_j"] == "8"]
    assert eights == ["512", "256"]
    assert {p.group for p in proposals} == {"tile-2d-shared:line=21"}


def test_a_sum_that_is_not_a_product_refuses(named: KernelAtLevel,
                                            library: HwdLibrary) -> None:
    """A phase past p stages zeros: a sum of the operands would add them (exp(0) = 1 of
    another body), so only products of staged loads are staged."""
    text = named.text.replace("sum += a[i, k] * b[k, j];", "sum += a[i, k] + b[k, j];")
    assert text != named.text
    other = load_kernel(named.path, named.level, library, named.include_dirs,
                        named.values, text=text, reference=named.reference)
    with pytest.raises(Refused, match="does more than add products of the staged loads"):
        proposal_for(other, f"tile-2d-shared:{TILE}")


def test_convolution_s_window_is_not_staged(library: HwdLibrary) -> None:
    """The window `a[i + y, j + x]` reads both the row and the column: refused (tile-2d
    keeps it a load per element)."""
    start = search_start(kernels_dir() / "convolution" / "perfect.mcpl", "hopper", library)
    named = next_version(start.kernel, proposal_for(start.kernel, "name-counts")).kernel
    with pytest.raises(Refused, match="nest of 2 loops"):
        proposal_for(named, "tile-2d-shared:line=21,elems_i=4,elems_j=4")


@pytest.mark.slow  # about 45 s: the search, each candidate verified at three sizes
def test_the_search_reaches_the_staged_tile(named: KernelAtLevel,
                                            library: HwdLibrary) -> None:
    """From matmul's perfect version at hopper (refine_apps.py's defaults, 4 steps and a
    beam of 2), the search's best version stages a and b in shared memory: name-counts,
    then tile-2d-shared at 256 threads a block (hopper_v1's shape)."""
    start = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                         values=SIZES).kernel
    result = search(start, SearchLimits(steps=4, beam=2))
    steps = [v.offer.proposal.refinement for v in result.series if v.offer is not None]
    assert "tile-2d-shared" in steps
    assert "shared float[TILE_I][TILE_K] tile_a;" in result.best.text
    assert "const int NR_THREADS_M = 256;" in result.best.text
    assert all(v.verification is not None and v.verification.ok
               for v in result.series if v.offer is not None)
    assert start.model_seconds is not None and result.best.seconds is not None
    assert start.model_seconds / result.best.seconds > 3.5
