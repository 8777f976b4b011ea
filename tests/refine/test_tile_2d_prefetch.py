"""tile-2d-prefetch: the translation of matmul's perfect version (its counts named)
becomes tile-2d-shared's staged tile with double-buffered tiles, the next phase's
operands loaded into registers, unconditionally at clamped addresses, before the
current phase's compute (hopper_v2's pipelining with hopper_v4's loads); it verifies
at three sizes that divide no tile on the interpreter and the OpenCL device, the
verifier catches the versions without the second buffer or the clamps, and it is
offered only to a search that measures, which reaches it (docs/refinements.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, proposal_for
from mcl.refine.refinement import Proposal
from mcl.refine.search import Measured, SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.tile_2d_prefetch import Tile2DPrefetch
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

SIZES = {"n": 4096, "m": 4096, "p": 4096}
TILE = "line=21,elems_i=8,elems_j=8,threads_i=16,threads=256"


@contextmanager
def _machine_code() -> Iterator[None]:
    """The time model's issue term from NVRTC's machine code, as `mcl refine` has it."""
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


@pytest.fixture(scope="module")
def prefetched(named: KernelAtLevel) -> str:
    return next_version(named, proposal_for(named, f"tile-2d-prefetch:{TILE}")).text


def test_the_next_phase_is_loaded_before_the_compute(named: KernelAtLevel,
                                                      prefetched: str) -> None:
    offer = make_offer(named, proposal_for(named, f"tile-2d-prefetch:{TILE}"))
    assert offer.text == prefetched
    # two buffers of each tile, one barrier per phase
    assert ("            shared float[2][TILE_I][TILE_K] tile_a;\n"
            "            shared float[2][TILE_K][TILE_J] tile_b;\n") in prefetched
    assert prefetched.count("barrier(shared);") == 1
    phase = prefetched.split("for (int k0 = 0; k0 < p; k0 += TILE_K) {")[1]
    stores, after = phase.split("barrier(shared);")
    assert "int cur = k0 / TILE_K % 2;" in stores
    # the stores put the registers into the phase's buffer, zeros past p only
    assert ("                            if (k0 + e % TILE_K < p) {\n"
            "                                tile_a[cur][e / TILE_K][e % TILE_K] = next_a[r];\n"
            "                            } else {\n"
            "                                tile_a[cur][e / TILE_K][e % TILE_K] = 0.0;\n"
            ) in stores
    assert not re.search(r"\b[ab]\[", stores)
    # after the barrier: the next phase's loads, no test, clamped inside a and b, and
    # only then the steps, which read the phase's buffer and no global memory
    loads, steps = after.split("for (int kk = 0; kk < TILE_K; kk++) {")
    assert ("                            int i = min(bi * TILE_I + e / TILE_K, n - 1);\n"
            "                            int k = min(k0 + TILE_K + e % TILE_K, p - 1);\n"
            "                            next_a[r] = a[i, k];\n") in loads
    assert ("                            int k = min(k0 + TILE_K + e / TILE_J, p - 1);\n"
            "                            int j = min(bj * TILE_J + e % TILE_J, m - 1);\n"
            "                            next_b[r] = b[k, j];\n") in loads
    assert "if (" not in loads
    assert "r_a[ei] = tile_a[cur][ei * THREADS_I + ui][kk];" in steps
    assert not re.search(r"\b[ab]\[", steps.split("for (int ei = 0; ei < ELEMS_I; ei++) {\n"
                                                  "                        int i =")[0])
    # the first phase's loads before the loop, under the loop's own test (p may be 0)
    assert "                    if (0 < p) {\n" in prefetched
    assert "int k = min(e % TILE_K, p - 1);" in prefetched
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")


@pytest.mark.parametrize("changes", [
    # one buffer with one barrier: a thread stores the next phase over a tile that
    # slower threads still read
    [("int cur = k0 / TILE_K % 2;", "int cur = 0;")],
    # the last phase's prefetch unclamped reads past the last column of a
    [("int k = min(k0 + TILE_K + e % TILE_K, p - 1);", "int k = k0 + TILE_K + e % TILE_K;")],
    # no zeros past p: the clamped loads' values add to the sums (one operand's zeros
    # suffice, so both are left out)
    [("if (k0 + e % TILE_K < p) {", "if (k0 + e % TILE_K < p + TILE_K) {"),
     ("if (k0 + e / TILE_J < p) {", "if (k0 + e / TILE_J < p + TILE_K) {")],
])
def test_the_verifier_catches_what_each_part_prevents(
        named: KernelAtLevel, library: HwdLibrary, prefetched: str,
        changes: list[tuple[str, str]]) -> None:
    text = prefetched
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    broken = load_kernel(named.path, named.level, library, named.include_dirs,
                         named.values, text=text, reference=named.reference)
    assert not Verifier.of(named).check(broken).ok


def test_offered_only_to_a_search_that_measures(named: KernelAtLevel) -> None:
    """hopper_v2's 8 x 8 tile and hopper_v4's 16 x 8, each at half the largest block
    whose registers tile-2d's rule says it fits (256 and 128 threads: a 128 x 128 tile
    both), the model's word not asked: it counts the prefetch's instructions, not the
    latency they hide."""
    proposals = [p.invocation for p in Tile2DPrefetch().proposals(named)
                 if isinstance(p, Proposal)]
    assert proposals == [f"tile-2d-prefetch:{TILE},tile_k=8",
                         "tile-2d-prefetch:line=21,elems_i=16,elems_j=8,threads_i=8,"
                         "threads=128,tile_k=8"]
    offers, refused = list_offers(named)
    assert not any(o.proposal.refinement == "tile-2d-prefetch" for o in offers)
    assert {r.what for r in refused if r.reason == Tile2DPrefetch.measured_only} \
        == set(proposals)


@pytest.mark.slow  # about 3 minutes: the search, each candidate verified at three sizes
def test_the_measuring_search_times_and_keeps_it(library: HwdLibrary) -> None:
    """From matmul's perfect version, a search that measures (here a timer that finds
    the prefetching versions 25% faster than the model's estimate, the others at it)
    reaches tile-2d-prefetch in two steps: name-counts, then the prefetching tile."""
    start = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                         values=SIZES).kernel

    def timer(kernel: KernelAtLevel) -> Measured:
        seconds = kernel.model_seconds or 1.0
        return Measured(seconds * 0.75 if "tile-2d-prefetch:" in kernel.text else seconds,
                        "fake")

    found = search(start, SearchLimits(steps=2, beam=2), timer)
    steps = [v.invocation.split(":")[0] for v in found.series]
    assert steps == ["", "name-counts", "tile-2d-prefetch"]
    assert all(v.verification is not None and v.verification.ok
               for v in found.series if v.offer is not None)
