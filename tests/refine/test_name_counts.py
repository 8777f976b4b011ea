"""name-counts and the search's look ahead: the counts a translation declares become named
constants (the block size with tune values), the program stays the same and verifies,
and the search takes that neutral step because set-constant then gains one step later
(gesummv from perfect.mcpl at hopper: a grid of 4 blocks of 1024 threads for n = 4096)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search import SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

GESUMMV = kernels_dir() / "gesummv" / "perfect.mcpl"
SIZES = {"n": 4096}

CONSTANTS = """\
// At most gpu.hierarchy.blocks.block.threads.max_nr_units; a smaller count is a choice.
// tune: 32, 64, 128, 256, 512, 1024
// require: NR_THREADS_N % NR_THREADS_TI == 0
const int NR_THREADS_N = 1024;
// hopper.hierarchy.blocks.block.warps.warp.threads.nr_units, fixed by the level.
const int NR_THREADS_TI = 32;
const int NR_WARPS_TI = NR_THREADS_N / NR_THREADS_TI;

hopper void gesummv("""


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(GESUMMV, "hopper", library, values=SIZES).kernel


def _written(tmp_path: Path, kernel: KernelAtLevel, old: str, new: str) -> Path:
    """The translation written beside a copy of the reference, `old` replaced by `new`."""
    assert old in kernel.text
    out = tmp_path / "gesummv.mcpl"
    out.write_text(kernel.text.replace(old, new))
    (tmp_path / "reference.py").write_text(kernel.reference.read_text())
    return out


def test_the_translations_counts_become_named_constants(translated: KernelAtLevel) -> None:
    assert "int nrThreadsN = gpu.hierarchy.blocks.block.threads.max_nr_units;" in translated.text
    offer = make_offer(translated, proposal_for(translated, "name-counts"))
    assert CONSTANTS in offer.text
    body = offer.text[offer.text.index("hopper void"):]
    # the locals are gone, every use reads the constants; the count of blocks, which
    # reads the parameter n, stays a local
    assert "nrThreadsN" not in body and "nrWarpsTi" not in body and "nrThreadsTi" not in body
    assert "int nrBlocksN = (n + NR_THREADS_N - 1) / NR_THREADS_N;" in body
    assert "foreach (int wti in NR_WARPS_TI warps) {" in body
    assert "int ti = wti * NR_THREADS_TI + tti;" in body
    # the same program: verified, and the model's estimate does not change
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert offer.gain == pytest.approx(1.0)


def test_named_the_block_size_is_set_to_a_faster_value(translated: KernelAtLevel) -> None:
    named = next_version(translated, proposal_for(translated, "name-counts")).kernel
    offers, _ = list_offers(named)
    # a warp per row is the best offer (tests/refine/test_row_per_warp.py); the block
    # size is offered beside it
    assert offers[0].proposal.invocation == "row-per-warp:line=20"
    best = next(o for o in offers if o.proposal.refinement == "set-constant")
    assert best.proposal.invocation == "set-constant:name=NR_THREADS_N,value=512"
    # 4 blocks of 1024 threads for 132 SMs -> 8 of 512
    assert best.gain is not None and best.gain > 1.4


def test_it_is_offered_only_as_a_neutral_step(translated: KernelAtLevel) -> None:
    offers, _ = list_offers(translated)
    assert not any(o.proposal.refinement == "name-counts" for o in offers)
    offers, _ = list_offers(translated, neutral=True)
    named = next(o for o in offers if o.proposal.refinement == "name-counts")
    assert named.gain == pytest.approx(1.0)


def test_a_function_without_counts_is_refused(library: HwdLibrary) -> None:
    kernel = open_kernel(GESUMMV, None, library, values=SIZES)
    with pytest.raises(Refused, match="declares no count before its foreach loops"):
        proposal_for(kernel, "name-counts")


def test_a_name_taken_in_the_file_is_refused(translated: KernelAtLevel, tmp_path: Path,
                                            library: HwdLibrary) -> None:
    path = _written(tmp_path, translated, "hopper void gesummv(",
                    "const int NR_THREADS_TI = 7;\n\nhopper void gesummv(")
    kernel = open_kernel(path, "hopper", library, values=SIZES)
    with pytest.raises(Refused, match="NR_THREADS_TI are taken in the file"):
        proposal_for(kernel, "name-counts")


def test_a_count_assigned_again_stays_a_local(translated: KernelAtLevel, tmp_path: Path,
                                             library: HwdLibrary) -> None:
    path = _written(tmp_path, translated, "    int nrBlocksN",
                    "    nrThreadsN = nrThreadsN / 2;\n    int nrBlocksN")
    kernel = open_kernel(path, "hopper", library, values=SIZES)
    proposal = proposal_for(kernel, "name-counts")
    # only the warp's threads, fixed by the level: the block size and the warps of it
    # (read from the block size) may change after their declarations
    assert proposal.summary == "the counts named constants (nrThreadsTi -> NR_THREADS_TI)"
    assert make_offer(kernel, proposal).verification.ok


def test_the_search_takes_a_neutral_step_that_enables_a_gain(
        translated: KernelAtLevel) -> None:
    progress: list[str] = []
    result = search(translated, SearchLimits(steps=3, beam=2), progress=progress.append)
    assert [v.invocation for v in result.series[1:]] == ["name-counts", "row-per-warp:line=20"]
    first, named, faster = result.series
    assert named.estimated_gain == pytest.approx(1.0)
    assert first.seconds is not None and faster.seconds is not None
    assert first.seconds / faster.seconds > 20
    assert any("looking one step past 1 neutral version: version 1 (name-counts)" in line
               for line in progress)
    # without the look ahead the search stops where it started
    alone = search(translated, SearchLimits(steps=3, beam=2, lookahead=1))
    assert alone.series == [alone.start] and alone.candidates == 0
