"""row-per-warp: a row reduction with a thread per row becomes one with a warp per row,
its lanes reading consecutive columns and adding their partial sums in shared memory;
the next version checks at hopper, verifies at three sizes (rows and columns differing,
primes among them) on the interpreter and the OpenCL device, and loses the
`uncoalesced` findings; the preconditions refuse where they must
(docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.analyses.timemodel import MIN_GAIN
from mcl.feedback.findings import UncoalescedAccess
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

KERNELS = Path(__file__).parent / "kernels"
ROWSTATS = KERNELS / "rowstats_hopper.mcpl"
REFERENCE = KERNELS / "rowstats_reference.py"
SIZES = {"n": 4096, "m": 4096}
LOOP = "row-per-warp:line=19"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = ROWSTATS.read_text()
    assert old in text
    out = tmp_path / ROWSTATS.name
    out.write_text(text.replace(old, new))
    return out


def test_a_warp_per_row_coalesces_the_row_and_verifies(library: HwdLibrary) -> None:
    kernel = open_kernel(ROWSTATS, None, library, values=SIZES, reference=REFERENCE)
    found = [f for f in kernel.findings if isinstance(f, UncoalescedAccess)]
    assert [f.access.text for f in found] == ["a[i, j]"]
    # swap-mapping answers the finding first and refuses (warps and threads are two
    # par_groups); row-per-warp makes the proposal
    proposal = proposal_for(kernel, f"uncoalesced@{found[0].access.span.line}")
    assert proposal.invocation == LOOP
    offer = make_offer(kernel, proposal)
    text = offer.text
    # one block per NR_WARPS rows, an array of partial sums per accumulator
    assert "  int nrBlocks = (n + NR_WARPS - 1) / NR_WARPS;\n" in text
    assert "    shared float[NR_WARPS][LANES] sum_parts;\n" in text
    assert "    shared float[NR_WARPS][LANES] squares_parts;\n" in text
    # the row of the warp, the accumulators before the guard, the lane's iterations;
    # the loop's body, its comment included, as written
    assert ("        int i = b * NR_WARPS + w;\n        float sum = 0.0;\n"
            "        float squares = 0.0;\n        if (i < n) {\n"
            "          for (int j = t; j < m; j += LANES) {\n"
            "            // one element of the row, used twice\n") in text
    assert ("        barrier(shared);\n        if (t == 0 && i < n) {\n"
            "          for (int u_2 = 1; u_2 < LANES; u_2++) {\n"
            "            sum += sum_parts[w][u_2];\n") in text
    assert "          s[i] = sum;\n          q[i] = squares;\n        }\n" in text
    assert "int u = w * LANES + t;" not in text  # the thread's flat index is gone
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert offer.verification.checks[0].sizes == {"n": 19, "m": 31}
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, UncoalescedAccess) for f in after.findings)
    assert offer.gain is not None and offer.gain > 10


def test_the_list_offers_it_with_its_gain(library: HwdLibrary) -> None:
    kernel = open_kernel(ROWSTATS, None, library, values=SIZES, reference=REFERENCE)
    offers, _ = list_offers(kernel)
    assert [o.proposal.invocation for o in offers] == [LOOP]
    assert offers[0].gain is not None and offers[0].gain >= MIN_GAIN


def test_a_row_not_numbered_in_order_refuses(library: HwdLibrary, tmp_path: Path) -> None:
    path = _variant(tmp_path, "int u = w * LANES + t;", "int u = t * NR_WARPS + w;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match=r"i is not \(b \* 8 \+ w\) \* 32 \+ t"):
        proposal_for(kernel, LOOP)


def test_a_block_count_that_leaves_rows_refuses(library: HwdLibrary, tmp_path: Path) -> None:
    path = _variant(tmp_path, "(n + NR_THREADS - 1) / NR_THREADS;", "n / NR_THREADS;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="not every row below n is shown to have a unit"):
        proposal_for(kernel, LOOP)


def test_a_loop_that_reads_its_sum_refuses(library: HwdLibrary, tmp_path: Path) -> None:
    path = _variant(tmp_path, "squares += v * v;", "squares += v * sum;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="reads an accumulator other than to add to it"):
        proposal_for(kernel, LOOP)


def test_a_loop_that_writes_more_than_its_sums_refuses(library: HwdLibrary,
                                                       tmp_path: Path) -> None:
    path = _variant(tmp_path, "squares += v * v;", "squares += v * v;\n            s[i] = v;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="writes s, not only its accumulators"):
        proposal_for(kernel, LOOP)


def test_a_tail_that_reads_a_lane_refuses(library: HwdLibrary, tmp_path: Path) -> None:
    path = _variant(tmp_path, "s[i] = sum;", "s[i] = sum + t;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="the `if` reads t: only the element.s indices may tell"):
        proposal_for(kernel, LOOP)


def test_an_accumulator_not_set_to_zero_refuses(library: HwdLibrary, tmp_path: Path) -> None:
    path = _variant(tmp_path, "float sum = 0.0;", "float sum = 1.0;")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="other than accumulators declared with the value 0"):
        proposal_for(kernel, LOOP)


def test_the_translated_perfect_kernel_is_refused_before_its_counts_are_named(
        library: HwdLibrary) -> None:
    """The translation leaves the warps' count a local variable; name-counts enables."""
    start = search_start(kernels_dir() / "gesummv" / "perfect.mcpl", "hopper", library,
                         values={"n": 4096})
    with pytest.raises(Refused, match="count of foreach wti is not a constant"):
        proposal_for(start.kernel, "row-per-warp:line=15")


@pytest.fixture(scope="module")
def reduction(library: HwdLibrary) -> tuple[KernelAtLevel, str]:
    """kernels/reduction/perfect.mcpl translated to hopper, its counts named, and the
    row-per-warp invocation for its loop over a chunk."""
    start = search_start(kernels_dir() / "reduction" / "perfect.mcpl", "hopper", library,
                         values={"n": 2**28, "chunk": 2**14})
    named = next_version(start.kernel, proposal_for(start.kernel, "name-counts")).kernel
    line = named.text[:named.text.index("for (int k = 0; k < chunk; k++)")].count("\n") + 1
    return named, f"row-per-warp:line={line}"


def test_a_chunk_of_the_reduction_per_warp(reduction: tuple[KernelAtLevel, str]) -> None:
    """kernels/reduction/perfect.mcpl translated: a thread per chunk, its adds guarded
    by `if (i < n)` (the last chunk may be short). A warp per chunk reads it coalesced
    and the lanes' partial sums give one partial per chunk, as gpu_v1's block does."""
    named, spec = reduction
    offer = make_offer(named, proposal_for(named, spec))
    text = offer.text
    # the blocks' count over a bound in brackets, kept whole
    assert ("    int nrBlocksC = (((n + chunk - 1) / chunk) + NR_WARPS_TC - 1) / "
            "NR_WARPS_TC;\n") in text
    assert ("                    for (int k = ttc; k < chunk; k += NR_THREADS_TC) {\n"
            "                        int i = c * chunk + k;\n"
            "                        if (i < n) {\n"
            "                            sum += x[i];\n") in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # by the model 8.51 ms -> 435 µs, device memory bound (gpu_v1 at hopper: 437 µs)
    assert offer.gain is not None and offer.gain > 15


def test_the_verifier_catches_the_barrier_removed(reduction: tuple[KernelAtLevel, str],
                                                  library: HwdLibrary) -> None:
    """Without the barrier, the first lane may add its warp's partial sums before the
    other lanes have stored them: the outputs differ from the reference."""
    named, spec = reduction
    good = next_version(named, proposal_for(named, spec)).text
    assert good.count("barrier(shared);\n") == 1
    wrong = good.replace("barrier(shared);\n", "\n")
    broken = load_kernel(named.path, named.level, library, named.include_dirs,
                         named.values, text=wrong, reference=named.reference)
    assert not Verifier.of(named).check(broken).ok
