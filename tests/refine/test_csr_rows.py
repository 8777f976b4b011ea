"""row-per-warp on a row whose start and length the data give (CSR spmv, paper section
7): the thread-per-row translation of kernels/spmv/perfect.mcpl becomes a group of lanes
per row, each count of lanes an alternative; the model states no time for such a loop
(its trip count is data), so the list offers them only to a search that measures, and
that search takes name-counts and the row's group in one step, claiming no estimated
gain (docs/refinements.md, "row-per-warp")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl.commands.refine_series import series_rows
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search import Measured, SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

PERFECT = kernels_dir() / "spmv" / "perfect.mcpl"
SIZES = {"nrows": 1_000_000, "ncols": 1_000_000, "nnz": 20_000_000}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def named(library: HwdLibrary) -> KernelAtLevel:
    """The translation at hopper with its counts named (the step the search takes
    first, mcl.refine.search._enabled)."""
    start = search_start(PERFECT, "hopper", library, values=SIZES).kernel
    made = next_version(start, proposal_for(start, "name-counts"))
    return load_kernel(start.path, start.level, library, (), start.values, start.function,
                       text=made.text, reference=start.reference)


def _row_loop(kernel: KernelAtLevel) -> int:
    lines = kernel.text.split("\n")
    return next(n for n, row in enumerate(lines, 1) if "for (int k = rowptr[i];" in row)


def test_a_group_of_lanes_takes_a_csr_row_and_verifies(named: KernelAtLevel) -> None:
    line = _row_loop(named)
    assert named.model_seconds is None  # the row's trip count is data: no estimate
    offer = make_offer(named, proposal_for(named, f"row-per-warp:line={line},lanes=8"))
    text = offer.text
    assert "int i = (bi * NR_WARPS_TI + wti) * (NR_THREADS_TI / 8) + tti / 8;" in text
    assert "for (int k = rowptr[i] + tti % 8; k < rowptr[i + 1]; k += 8) {" in text
    assert re.search(r"if \(tti % 8 == 0 && i < nrows\) \{\s*for \(int u = 1; u < 8; u\+\+\) "
                     r"\{\s*sum \+= sum_parts\[wti\]\[tti \+ u\];", text)
    # a block takes NR_WARPS_TI * 4 rows: every row has a group of lanes
    assert ("(nrows + NR_WARPS_TI * (NR_THREADS_TI / 8) - 1) / (NR_WARPS_TI * "
            "(NR_THREADS_TI / 8))") in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert offer.gain is None  # no gain claimed where the model states no time


def test_a_count_of_lanes_that_does_not_divide_the_warp_refuses(
        named: KernelAtLevel) -> None:
    with pytest.raises(Refused, match="lanes=3 does not divide the 32 lanes of a warp"):
        proposal_for(named, f"row-per-warp:line={_row_loop(named)},lanes=3")


def test_the_counts_are_offered_to_a_search_that_measures_only(
        named: KernelAtLevel) -> None:
    line = _row_loop(named)
    offers, refused = list_offers(named)
    assert not [o for o in offers if o.proposal.refinement == "row-per-warp"]
    assert any(r.what == f"row-per-warp:line={line}" and "states no time" in r.reason
               for r in refused)
    offers, _ = list_offers(named, unweighed=True)
    assert sorted(o.proposal.invocation for o in offers
                  if o.proposal.refinement == "row-per-warp") == sorted(
        [f"row-per-warp:line={line},lanes={n}" for n in (4, 8, 16)]
        + [f"row-per-warp:line={line}"])


def test_a_measuring_search_reaches_the_group_through_name_counts(
        library: HwdLibrary) -> None:
    """A (fake) device that times 8 lanes per row fastest: the search names the counts
    and takes the group in its first step; the steps claim no estimated gain."""
    start = search_start(PERFECT, "hopper", library, values=SIZES).kernel

    def timer(kernel: KernelAtLevel) -> Measured:
        return Measured(2e-4 if "tti % 8" in kernel.text else 2.6e-4, "fake")

    result = search(start, SearchLimits(steps=1, beam=1), timer)
    steps = [v.invocation for v in result.series[1:]]
    assert steps[0] == "name-counts"
    assert steps[1].startswith("row-per-warp:") and steps[1].endswith(",lanes=8")
    assert result.best.measured_gain == pytest.approx(1.3)
    assert all(v.estimated_gain is None for v in result.series)
    rows = series_rows(result, Path(PERFECT), PERFECT.read_text(), "perfect", "hopper")
    assert "(not estimated, measured 1.30x)" in rows[-1].change
