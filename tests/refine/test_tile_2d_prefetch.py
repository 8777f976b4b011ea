"""tile-2d-prefetch: the translation of matmul's perfect version (its counts named)
becomes tile-2d-shared's staged tile with double-buffered tiles, the next phase's
operands loaded into registers, unconditionally at clamped addresses, before the
current phase's compute (hopper_v2's pipelining with hopper_v4's loads); it verifies
at three sizes that divide no tile on the interpreter and the OpenCL device, the
verifier catches the versions without the second buffer or the clamps, and it is
offered only to a search that measures, which reaches it (docs/refinements.md).
With `vector_reads` and `lanes_i` it takes hopper_v4's layout: groups of 4 rows and
columns read as 128-bit vectors from tiles stored along k, and warp tiles; NVRTC makes
the same 48 LDS.128 per phase as hopper_v4's without a spill."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends.cuda import line_instructions
from mcl.backends.cuda.cubin import register_counts
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, proposal_for
from mcl.refine.refinement import Proposal
from mcl.refine.search import Measured, SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.tile_2d_prefetch import Tile2DPrefetch
from mcl.refine.tile_layout import transposing_pad, warp_lanes
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

SIZES = {"n": 4096, "m": 4096, "p": 4096}
TILE = "line=21,elems_i=8,elems_j=8,threads_i=16,threads=256"
# hopper_v4's: a 16 x 8 tile per thread, 128 threads, groups of 4, warp tiles of 64 x 64
V4 = "line=21,elems_i=16,elems_j=8,threads_i=8,threads=128"
V4_LAYOUT = f"{V4},tile_k=8,vector_reads=4,lanes_i=4"


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
                         f"tile-2d-prefetch:{V4},tile_k=8",
                         f"tile-2d-prefetch:{V4_LAYOUT}"]
    offers, refused = list_offers(named)
    assert not any(o.proposal.refinement == "tile-2d-prefetch" for o in offers)
    assert {r.what for r in refused if r.reason == Tile2DPrefetch.measured_only} \
        == set(proposals)


@pytest.fixture(scope="module")
def grouped(named: KernelAtLevel) -> str:
    return next_version(named, proposal_for(named, f"tile-2d-prefetch:{V4_LAYOUT}")).text


@pytest.fixture(scope="module")
def across_warps(named: KernelAtLevel, tmp_path_factory: pytest.TempPathFactory
                 ) -> Verifier:
    """The numpy reference at sizes past a 64 x 64 warp tile and a 128 x 128 block tile:
    at matmul's own (19 x 23, and primes near) only the first warp of the first block
    stores elements of c, and a layout's other warps would go unchecked. 131 x 139 x 11,
    83 x 89 x 7 and 137 x 149 x 13: none divides a tile, two phases of k at the first."""
    folder = tmp_path_factory.mktemp("across_warps")
    text = named.reference.read_text()
    assert 'SIZES = {"n": 19, "m": 23, "p": 13}' in text
    (folder / "reference.py").write_text(
        text.replace('SIZES = {"n": 19, "m": 23, "p": 13}',
                     'SIZES = {"n": 131, "m": 139, "p": 11}'))
    verifier = Verifier.of(named, folder / "reference.py")
    assert [c.sizes["n"] for c in verifier.cases] == [131, 83, 137]
    return verifier


def _checked(named: KernelAtLevel, library: HwdLibrary, text: str) -> KernelAtLevel:
    return load_kernel(named.path, named.level, library, named.include_dirs, named.values,
                       text=text, reference=named.reference)


def test_hopper_v4s_layout_reads_groups_of_a_warp_tile(named: KernelAtLevel,
                                                       grouped: str) -> None:
    offer = make_offer(named, proposal_for(named, f"tile-2d-prefetch:{V4_LAYOUT}"))
    assert offer.text == grouped
    # a's tile transposed (k first) and its rows padded; b's stored as b is
    assert ("            shared float[2][TILE_K][TILE_I + TILE_A_PAD] tile_a;\n"
            "            shared float[2][TILE_K][TILE_J] tile_b;\n") in grouped
    assert "const int TILE_A_PAD = 4;" in grouped
    assert "tile_a[cur][e % TILE_K][e / TILE_K] = next_a[r];" in grouped
    assert "tile_b[cur][e / TILE_J][e % TILE_J] = next_b[r];" in grouped
    # the warp's place and the lane's in its warp tile
    for line in ("int wi = wtj / WARPS_J;", "int wj = wtj % WARPS_J;",
                 "int li = ttj / LANES_J;", "int lj = ttj % LANES_J;",
                 "const int LANES_I = 4;", "const int WARP_TILE_I = LANES_I * ELEMS_I;"):
        assert line in grouped
    # each group of 4 operands one loop over v with every other term a multiple of VEC
    assert ("for (int v = 0; v < VEC; v++) {\n" + " " * 36 + "r_a[g * VEC + v] = "
            "tile_a[cur][kk][wi * WARP_TILE_I + g * LANES_I * VEC + li * VEC + v];") in grouped
    assert ("r_b[g * VEC + v] = tile_b[cur][kk][wj * WARP_TILE_J + g * LANES_J * VEC + "
            "lj * VEC + v];") in grouped
    # the tail stores the elements the reads computed
    assert ("int i = bi * TILE_I + wi * WARP_TILE_I + (ei / VEC) * LANES_I * VEC + "
            "li * VEC + ei % VEC;") in grouped
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")


def test_every_warp_of_the_layout_verifies(named: KernelAtLevel, library: HwdLibrary,
                                           grouped: str, across_warps: Verifier) -> None:
    verification = across_warps.check(_checked(named, library, grouped))
    assert verification.ok, verification
    assert verification.runs_on.startswith("the interpreter and OpenCL on ")


@pytest.mark.parametrize("option", ["vector_reads=4", "lanes_i=4", "vector_reads=2,lanes_i=2"])
def test_each_option_alone_verifies(named: KernelAtLevel, library: HwdLibrary,
                                    across_warps: Verifier, option: str) -> None:
    text = next_version(named, proposal_for(named, f"tile-2d-prefetch:{V4},{option}")).text
    if "lanes_i" not in option:
        assert "int ui = unit / THREADS_J;" in text
        assert "(ei / VEC) * THREADS_I * VEC + ui * VEC + ei % VEC" in text
    verification = across_warps.check(_checked(named, library, text))
    assert verification.ok, verification


@pytest.mark.parametrize("changes", [
    # every warp on the diagonal of the warp tiles: half the block's tile is computed
    # twice, the other half never
    [("int wi = wtj / WARPS_J;", "int wi = wtj % WARPS_J;")],
    # a's groups read with the lanes one word apart instead of a group apart
    [("g * LANES_I * VEC + li * VEC + v]", "g * LANES_I * VEC + li + v]")],
    # the a tile stored untransposed into the transposed one
    [("tile_a[cur][e % TILE_K][e / TILE_K] = next_a[r];",
      "tile_a[cur][e / TILE_K % TILE_K][e % TILE_K] = next_a[r];")],
])
def test_the_verifier_catches_a_layout_that_does_not_match(
        named: KernelAtLevel, library: HwdLibrary, grouped: str, across_warps: Verifier,
        changes: list[tuple[str, str]]) -> None:
    text = grouped
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    assert not across_warps.check(_checked(named, library, text)).ok


def test_nvrtc_makes_hopper_v4s_shared_reads(named: KernelAtLevel, library: HwdLibrary,
                                             grouped: str, tmp_path: Path) -> None:
    """The CUDA of the grouped version, compiled for sm_90: per phase 8 steps of 4 + 2
    LDS.128 (48, as hopper_v4's), no scalar shared read, no spill, at most 255
    registers; the version without the options issues twice as many shared reads or
    more (NVRTC makes 64 LDS and 32 LDS.128 of its 192 words)."""
    tool = line_instructions._nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not installed")
    counts = {}
    for name, text in (("grouped", grouped),
                       ("plain", next_version(named, proposal_for(
                           named, f"tile-2d-prefetch:{V4}")).text)):
        path = tmp_path / f"{name}.mcpl"
        path.write_text(text)
        checked = pipeline.check_source(str(path), [], library).checked()
        assert checked is not None and not checked.errors
        cubin = compile_cuda(pipeline.generate(checked, "hopper", library,
                                               language="cuda").source,
                             str(path), "sm_90").cubin
        sass = line_instructions._disassemble(tool, cubin)
        counts[name] = (Counter(re.findall(r"\b(LDS(?:\.\w+)?|LDL|STL)\b", sass)),
                        register_counts(cubin)["matmul"])
    (grouped_kinds, registers), (plain_kinds, _) = counts["grouped"], counts["plain"]
    assert grouped_kinds == Counter({"LDS.128": 48}) and registers <= 255
    assert sum(plain_kinds.values()) >= 2 * 48


def test_the_pad_and_the_warp_tile_chosen() -> None:
    # a 128 x 8 block of a, consecutive lanes along k: rows of 128 words put 8 lanes in
    # one bank; 4 more spread all 32
    assert transposing_pad(128, 8, 4) == 4
    assert transposing_pad(128, 8, 1) == 4
    # 32 steps of k: a warp's stores one per row; a multiple of 4 spreads them over 8
    # banks at best, the least such pad kept
    assert transposing_pad(64, 32, 4) == 4
    # hopper_v4's 64 x 64 warp tile of 4 x 8 lanes; 8 x 8 elements at 256 threads in 16
    # rows: 32 x 64 and 64 x 32 tie, the fewer rows kept
    assert warp_lanes(32, 8, 128, 16, 8) == 4
    assert warp_lanes(32, 16, 256, 8, 8) == 4
    assert warp_lanes(32, 3, 48, 4, 4) is None  # 16 columns of threads: no warp fits


@pytest.mark.slow  # about 3 minutes: the search, each candidate verified at three sizes
def test_the_measuring_search_times_and_keeps_it(library: HwdLibrary) -> None:
    """From matmul's perfect version, a search that measures (here a timer that finds
    the prefetching versions 25% faster than the model's estimate, hopper_v4's layout
    35%, the others at it) reaches tile-2d-prefetch in two steps: name-counts, then the
    prefetching tile in hopper_v4's layout."""
    start = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                         values=SIZES).kernel

    def timer(kernel: KernelAtLevel) -> Measured:
        seconds = kernel.model_seconds or 1.0
        share = 0.65 if "WARP_TILE_I" in kernel.text else \
            0.75 if "tile-2d-prefetch:" in kernel.text else 1.0
        return Measured(seconds * share, "fake")

    found = search(start, SearchLimits(steps=2, beam=2), timer)
    steps = [v.invocation.split(":")[0] for v in found.series]
    assert steps == ["", "name-counts", "tile-2d-prefetch"]
    assert found.series[-1].invocation == f"tile-2d-prefetch:{V4_LAYOUT}"
    assert all(v.verification is not None and v.verification.ok
               for v in found.series if v.offer is not None)
