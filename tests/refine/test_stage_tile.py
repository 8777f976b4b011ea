"""stage-tile: a tile of an array that a block's units all read, staged in a faster memory
with its barriers (docs/refinements.md). The next version checks at the level, verifies
at three sizes that the tile does not divide, loses the memory-faster-space finding and
is weighed by the time model; each precondition refuses where it fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl.feedback.findings import FasterMemoryProposal, ShareInFasterMemory
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import apply_edits
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
ROWS_GPU = HERE / "row_tile_gpu.mcpl"
ROWS_HOPPER = HERE / "row_tile_hopper.mcpl"
WINDOW = HERE / "window_gpu.mcpl"
# Sizes at which a row of `a` outgrows hopper's L1 (below them L1 serves the reuse and
# the feedback says so instead of proposing shared memory).
LARGE = {"n": 64, "m": 256, "p": 65536}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _proposal_line(kernel: KernelAtLevel, access: str) -> int:
    finding = next(f for f in kernel.findings if isinstance(f, FasterMemoryProposal)
                   and isinstance(f.change, ShareInFasterMemory)
                   and f.change.access.text == access)
    assert finding.span is not None
    return finding.span.line


def _variant(tmp_path: Path, source: Path, *changes: tuple[str, str]) -> Path:
    text = source.read_text()
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    out = tmp_path / source.name
    out.write_text(text)
    return out


def test_a_row_of_a_is_staged_in_local_tiles_at_gpu(library: HwdLibrary) -> None:
    kernel = open_kernel(ROWS_GPU, "gpu", library)
    line = _proposal_line(kernel, "a[i, k]")
    proposal = proposal_for(kernel, f"memory-faster-space@{line}")
    assert proposal.refinement == "stage-tile" and dict(proposal.args)["tile"] == "8"
    offer = make_offer(kernel, proposal)
    text = offer.text
    # the declaration in the block, the guarded fill, a barrier before and after the use
    assert "      local float[NR_THREADS] tile_a;\n      foreach (int tj" in text
    assert "for (int k0 = 0; k0 < p; k0 += NR_THREADS) {" in text
    # the load stands under `if (j < m)`: the fill keeps inside a as well
    assert "if (k0 + tj < p && i < n) {\n            tile_a[tj] = a[i, k0 + tj];" in text
    assert text.count("barrier(local);") == 2
    assert "for (int k = k0; k < min(k0 + NR_THREADS, p); k++) {" in text
    assert "sum += tile_a[k - k0] * b[k, j];" in text and "a[i, k] *" not in text
    # the rest stays as written: the header comment, the guarded store
    assert text.startswith(kernel.text.split("const int")[0])
    assert "        if (j < m) {\n          c[i, j] = sum;" in text
    # verified at 13, 7 and 17: none a multiple of the tile of 8
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert all(c.sizes["p"] % 8 for c in offer.verification.checks)
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, FasterMemoryProposal) for f in after.findings)


def test_warps_of_threads_fill_a_larger_tile_in_steps_at_hopper(library: HwdLibrary) -> None:
    kernel = open_kernel(ROWS_HOPPER, None, library, values=LARGE)
    line = _proposal_line(kernel, "a[i, k]")
    offer = make_offer(kernel, proposal_for(kernel, f"stage-tile:line={line},tile=96"))
    assert "shared float[96] tile_a;" in offer.text
    assert "for (int s = w * WARP_SIZE + t; s < 96; s += NR_WARPS * WARP_SIZE) {" \
        in offer.text
    assert offer.text.count("barrier(shared);") == 2
    assert offer.verification.ok
    # weighed by the model: a[i, k] is one element per warp, which a warp loads in one
    # transaction from global memory too, so the tile buys nothing here
    assert offer.seconds_before is not None and offer.seconds_after is not None
    assert offer.gain is not None and 0.9 < offer.gain < 1.03


def test_a_gpu_kernel_refined_at_hopper_declares_the_tile_in_gpu_terms(
        tmp_path: Path, library: HwdLibrary) -> None:
    """The edits go into the gpu source: its `local`, which hopper calls `shared` (a
    block of 256 threads, 8 whole warps; hopper runs a block of 8 threads as one warp of
    32 lanes, 8 of them past a guard, and the finding counts 32: refused)."""
    blocks = _variant(tmp_path, ROWS_GPU, ("NR_THREADS = 8;", "NR_THREADS = 256;"))
    kernel = open_kernel(blocks, "hopper", library, values=LARGE)
    offers, _ = list_offers(kernel)
    (offer,) = [o for o in offers if o.proposal.refinement == "stage-tile"]
    assert "local float[NR_THREADS] tile_a;" in offer.text
    assert "barrier(local);" in offer.text and "shared" not in offer.text
    assert offer.seconds_after is not None
    small = open_kernel(ROWS_GPU, "hopper", library, values=LARGE)
    assert [r.reason for r in list_offers(small)[1] if r.what == "stage-tile"] == [
        "the 8 units of the foreach loops around a[i, k] are not the 32 that share it at "
        "hopper"]


def test_a_block_past_the_last_row_loads_nothing(tmp_path: Path,
                                                library: HwdLibrary) -> None:
    """One more row of blocks than rows of a: their units skip every iteration, and the
    fill must not load a[n, k] for them (the interpreter's bounds check would fail)."""
    path = _variant(tmp_path, ROWS_GPU, ("foreach (int bi in n blocks)",
                                         "foreach (int bi in n + 1 blocks)"),
                    ("if (j < m) {", "if (j < m && i < n) {"))
    kernel = open_kernel(path, "gpu", library)
    offer = make_offer(kernel, proposal_for(kernel, "stage-tile:line=22"))
    assert "if (k0 + tj < p && i < n) {" in offer.text
    assert offer.verification.ok


def test_of_a_window_the_shared_weights_are_staged_not_the_input(library: HwdLibrary) -> None:
    kernel = open_kernel(WINDOW, None, library)
    offers, refused = list_offers(kernel)
    assert [dict(o.proposal.args)["access"] for o in offers] == ["w[x]"]
    assert "sum += tile_w[x - x0] * a[i + x];" in offers[0].text
    assert any("reads i, which differs between the units" in r.reason for r in refused)
    # the invocation the list prints makes the same next version
    again = proposal_for(kernel, offers[0].proposal.invocation)
    assert apply_edits(kernel.text, again.edits) == offers[0].text


@pytest.mark.parametrize(("changes", "why"), [
    # the paper's auto-translated shape: the loop under the guard on j
    ((("        for (int k = 0; k < p; k++) {\n          if (j < m) {\n"
       "            sum += a[i, k] * b[k, j];\n          }\n        }\n"
       "        if (j < m) {\n          c[i, j] = sum;\n        }\n",
       "        if (j < m) {\n          for (int k = 0; k < p; k++) {\n"
       "            sum += a[i, k] * b[k, j];\n          }\n          c[i, j] = sum;\n"
       "        }\n"),), r"stands under `if \(j < m\)`"),
    ((("            sum += a[i, k] * b[k, j];\n",
       "            sum += a[i, k] * b[k, j];\n            a[i, k] = sum;\n"),),
     "writes a: the tile would go stale"),
    ((("foreach (int tj in NR_THREADS threads)", "foreach (int tj in nrT threads)"),
      ("  int nrBlocksM", "  int nrT = NR_THREADS;\n  int nrBlocksM")),
     "not a constant"),
    ((("for (int k = 0; k < p; k++)", "for (int k = 0; k < p; k += 2)"),),
     "does not count up by one"),
])
def test_staging_is_refused_where_a_precondition_fails(
        tmp_path: Path, library: HwdLibrary, changes: tuple[tuple[str, str], ...],
        why: str) -> None:
    kernel = open_kernel(_variant(tmp_path, ROWS_GPU, *changes), "gpu", library)
    offers, refused = list_offers(kernel)
    assert not offers
    assert any(r.what == "stage-tile" and re.search(why, r.reason) for r in refused)


def test_without_the_finding_nothing_is_staged(library: HwdLibrary) -> None:
    kernel = open_kernel(ROWS_GPU, "gpu", library)
    with pytest.raises(Refused, match="no memory-faster-space finding at line 21"):
        proposal_for(kernel, "stage-tile:line=21,access=b[k, j]")


def test_a_perfect_kernel_translated_to_gpu_has_no_block_to_stage_in(
        library: HwdLibrary) -> None:
    """The auto-translated matmul at gpu has the finding, but its source, perfect, has no
    block and no local memory to write the tile in."""
    kernel = open_kernel(kernels_dir() / "matmul" / "perfect.mcpl", "gpu", library)
    assert any(isinstance(f, FasterMemoryProposal) for f in kernel.findings)
    offers, refused = list_offers(kernel)
    assert not offers
    assert [r.reason for r in refused if r.what == "stage-tile"] == [
        "perfect has no memory space that becomes local at gpu: the block whose units "
        "share the load exists only below perfect"]
