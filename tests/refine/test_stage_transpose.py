"""stage-transpose: the translation of transpose's perfect version, whose store of b[j, i]
strides, becomes the shipped hopper (v1)'s structure (a padded tile in shared memory, a
barrier, both copies coalesced); the next version checks at hopper, verifies at three
sizes (primes that the tile does not divide among them), its uncoalesced finding and
any bank conflict gone, and the search picks it. A load that strides is staged the same
way; the preconditions refuse where they must (docs/refinements.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.feedback.findings import BankConflictFinding, UncoalescedAccess
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import (
    list_offers,
    make_offer,
    next_version,
    open_kernel,
    proposal_for,
)
from mcl.refine.refinement import Refused
from mcl.refine.search import SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.stage_transpose import StageTranspose
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
SIZES = {"n": 4096, "m": 4096}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(kernels_dir() / "transpose" / "perfect.mcpl", "hopper", library,
                        values=SIZES).kernel


def _store_line(kernel: KernelAtLevel) -> int:
    (finding,) = [f for f in kernel.findings if isinstance(f, UncoalescedAccess)]
    assert finding.access.text == "b[j, i]" and finding.access.span is not None
    return finding.access.span.line


def test_the_strided_store_is_staged_through_a_padded_shared_tile(
        translated: KernelAtLevel) -> None:
    line = _store_line(translated)
    (proposal,) = [p for p in StageTranspose().proposals(translated)
                   if not isinstance(p, Refused)]
    assert proposal.invocation == f"stage-transpose:line={line},rows=8"
    offer = make_offer(translated, proposal)
    text = offer.text
    # a tile of a warp's lanes per side, padded by the word the 32 banks ask for
    assert "const int TILE = 32;\n" in text and "const int PAD = 1;\n" in text
    assert "// require: TILE % ROWS == 0\nconst int ROWS = 8;\n" in text
    assert "shared float[TILE][TILE + PAD] tile_a;" in text
    # a block per tile along both dimensions, ROWS warps of TILE lanes
    assert "foreach (int bi in (n + TILE - 1) / TILE blocks) {" in text
    assert "foreach (int bj in (m + TILE - 1) / TILE blocks) {" in text
    assert "foreach (int wtj in ROWS warps) {" in text
    # a warp reads a row of a into a row of the tile, then writes a row of b from a
    # column of it; both copies guarded at the edges, a barrier between
    assert ("int i = bi * TILE + r * ROWS + wtj;\n"
            "                        int j = bj * TILE + ttj;\n"
            "                        if (i < n && j < m) {\n"
            "                            tile_a[r * ROWS + wtj][ttj] = a[i, j];\n") in text
    assert "                    barrier(shared);\n" in text
    assert ("int i = bi * TILE + ttj;\n"
            "                        int j = bj * TILE + r * ROWS + wtj;\n"
            "                        if (i < n && j < m) {\n"
            "                            b[j, i] = tile_a[ttj][r * ROWS + wtj];\n") in text
    # the translation's counts nothing reads any more are gone
    assert "nrBlocksM" not in text and "nrThreadsTj" not in text
    # verified against the numpy reference at three sizes, primes among them
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert any(c.sizes["n"] % 32 and c.sizes["m"] % 32 for c in offer.verification.checks)
    # the uncoalesced store is gone and the padding leaves no bank conflict
    after = next_version(translated, proposal).kernel
    assert not [f for f in after.findings
                if isinstance(f, UncoalescedAccess | BankConflictFinding)]
    assert offer.gain is not None and offer.gain > 1.03


def test_the_padding_is_what_the_conflict_analysis_asks_for(
        translated: KernelAtLevel) -> None:
    """Without the padding, the column read of the tile is the 32-way conflict that
    pad-shared answers with the same one word."""
    line = _store_line(translated)
    made = next_version(translated, proposal_for(translated, f"stage-transpose:line={line}"))
    unpadded = made.text.replace("const int PAD = 1;", "const int PAD = 0;")
    kernel = load_kernel(translated.path, "hopper", translated.library, (), SIZES,
                         text=unpadded, reference=translated.reference)
    conflicts = [f for f in kernel.findings if isinstance(f, BankConflictFinding)]
    assert conflicts and max(f.conflict.degree for f in conflicts) == 32
    pad = proposal_for(kernel, "pad-shared:array=tile_a")
    assert dict(pad.args)["pad"] == "1"


def test_it_applies_with_the_counts_named_and_not_above_the_level(
        translated: KernelAtLevel, library: HwdLibrary) -> None:
    named = next_version(translated, proposal_for(translated, "name-counts")).kernel
    offer = make_offer(named, proposal_for(named, f"stage-transpose:line={_store_line(named)}"))
    assert "shared float[TILE][TILE + PAD] tile_a;" in offer.text
    assert "nrBlocksM" not in offer.text and offer.verification.ok
    # perfect.mcpl itself, at hopper: two foreach loops, no blocks to own a tile
    perfect = open_kernel(kernels_dir() / "transpose" / "perfect.mcpl", "hopper", library,
                          values=SIZES)
    with pytest.raises(Refused, match="once translated"):
        proposal_for(perfect, "stage-transpose:line=5")


def test_the_search_picks_it(translated: KernelAtLevel) -> None:
    result = search(translated, SearchLimits(steps=1, beam=2))
    best = result.series[-1]
    assert best.invocation.startswith("stage-transpose:")
    assert best.verification is not None and best.verification.ok


def test_a_strided_load_is_staged_the_same_way(library: HwdLibrary, tmp_path: Path) -> None:
    path = tmp_path / "scaled_transpose_load.mcpl"
    shutil.copy(HERE / "scaled_transpose_load.mcpl", path)
    kernel = search_start(path, "hopper", library, values=SIZES).kernel
    offers, _ = list_offers(kernel)
    (offer,) = [o for o in offers if o.proposal.refinement == "stage-transpose"]
    assert offer.answered is not None and offer.answered.startswith("load of a[j, i]")
    # the load walks a's last dimension with the lanes, and so does the store b's
    assert "tile_a[r * ROWS + wtj][ttj] = a[j, i];" in offer.text
    assert "b[i, j] = 2.0 * tile_a[ttj][r * ROWS + wtj] + 1.0;" in offer.text
    assert "int i = bi * TILE + ttj;" in offer.text.split("barrier(shared);")[0]
    assert offer.verification.ok


@pytest.mark.parametrize(("old", "new", "why"), [
    ("b[j, i] = a[i, j];", "b[j, i] = a[i, j] + a[j, i];", "nothing else with i or j"),
    ("b[j, i] = a[i, j];", "b[j, i] = b[i, j];", "the array it writes"),
    ("b[j, i] = a[i, j];", "b[j, i] = a[i, j] * tj;", "reads tj"),
])
def test_the_preconditions_refuse(translated: KernelAtLevel, library: HwdLibrary,
                                  tmp_path: Path, old: str, new: str, why: str) -> None:
    path = tmp_path / "transpose.mcpl"
    text = translated.text.replace(old, new)
    assert text != translated.text
    path.write_text(text)
    shutil.copy(kernels_dir() / "transpose" / "reference.py", tmp_path / "reference.py")
    kernel = load_kernel(path, "hopper", library, (), SIZES, reference=tmp_path / "x.py")
    line = next(n for n, row in enumerate(text.splitlines(), 1) if new in row)
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, f"stage-transpose:line={line}")


def test_rows_must_divide_the_lanes(translated: KernelAtLevel) -> None:
    line = _store_line(translated)
    with pytest.raises(Refused, match="divides the 32 lanes"):
        proposal_for(translated, f"stage-transpose:line={line},rows=3")
