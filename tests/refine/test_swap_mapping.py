"""swap-mapping: two nested foreach loops swapped so that the units side by side walk an
array's fastest dimension; the next version checks at hopper, verifies at three sizes
and loses the `uncoalesced` findings; the preconditions refuse where they must
(docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import UncoalescedAccess
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import changed_lines
from mcl.refine.offers import (
    list_offers,
    make_offer,
    next_version,
    open_kernel,
    proposal_for,
)
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

COLSCALE = Path(__file__).parent / "kernels" / "colscale.mcpl"
SIZES = {"n": 4096, "m": 4096}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = COLSCALE.read_text()
    assert old in text
    out = tmp_path / COLSCALE.name
    out.write_text(text.replace(old, new))
    return out


def test_swapping_the_loops_coalesces_both_accesses(library: HwdLibrary) -> None:
    kernel = open_kernel(COLSCALE, "hopper", library, values=SIZES)
    found = [f for f in kernel.findings if isinstance(f, UncoalescedAccess)]
    assert {f.access.text for f in found} == {"a[j, i]", "b[j, i]"}
    proposal = proposal_for(kernel, f"uncoalesced@{found[0].access.span.line}")
    assert proposal.refinement == "swap-mapping" and dict(proposal.args) == {"line": "5"}
    offer = make_offer(kernel, proposal)
    # the two headers change places; the comments, the body and the layout stay
    lines = offer.text.splitlines()
    assert lines[4] == "  foreach (int j in m threads) {"
    assert lines[5] == "    foreach (int i in n threads) {"
    assert changed_lines(kernel.text, offer.text) == 4
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # no access of the next version is uncoalesced, and the model weighed both versions
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, UncoalescedAccess) for f in after.findings)
    assert offer.seconds_before is not None and offer.seconds_after is not None


def test_the_list_offers_one_swap_for_both_accesses(library: HwdLibrary) -> None:
    kernel = open_kernel(COLSCALE, "hopper", library, values=SIZES)
    offers, refused = list_offers(kernel)
    assert [o.proposal.invocation for o in offers] == ["swap-mapping:line=5"]
    assert not [r for r in refused if r.what.startswith("swap-mapping")]
    # by name, the same next version
    again = proposal_for(kernel, "swap-mapping:line=5")
    assert again.edits == offers[0].proposal.edits


def test_a_transpose_is_not_swapped(library: HwdLibrary) -> None:
    """Either way one of its two accesses strides across the threads of a warp."""
    kernel = open_kernel(kernels_dir() / "transpose" / "perfect.mcpl", "hopper", library)
    offers, refused = list_offers(kernel)
    assert not [o for o in offers if o.proposal.refinement == "swap-mapping"]
    assert any("no fewer accesses stride" in r.reason and "a[i, j]" in r.reason
               for r in refused if r.what == "swap-mapping")


def test_one_foreach_has_nothing_to_swap_with(library: HwdLibrary) -> None:
    kernel = open_kernel(kernels_dir() / "gesummv" / "perfect.mcpl", "hopper", library)
    offers, refused = list_offers(kernel)
    assert not [o for o in offers if o.proposal.refinement == "swap-mapping"]
    reasons = [r.reason for r in refused if r.what == "swap-mapping"]
    assert reasons and all("inside one foreach only" in r for r in reasons)


def test_loops_not_perfectly_nested_are_not_swapped(library: HwdLibrary,
                                                    tmp_path: Path) -> None:
    path = _variant(tmp_path, "    foreach (int j in m threads) {\n",
                    "    float two = 2.0;\n    foreach (int j in m threads) {\n")
    # (translation below perfect splits only perfect nests: refused at the kernel's level)
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="not perfectly nested"):
        proposal_for(kernel, "swap-mapping:line=5")


def test_loops_of_two_par_groups_are_not_swapped(library: HwdLibrary,
                                                 tmp_path: Path) -> None:
    path = tmp_path / COLSCALE.name
    path.write_text(COLSCALE.read_text()
                    .replace("perfect void", "gpu void").replace("main float[m, n]",
                                                                 "dev float[32, n]")
                    .replace("int i in n threads", "int i in n blocks")
                    .replace("int j in m threads", "int j in 32 threads"))
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="over blocks and foreach j over threads"):
        proposal_for(kernel, "swap-mapping:line=5")


def test_a_barrier_among_the_swapped_units_refuses(library: HwdLibrary,
                                                  tmp_path: Path) -> None:
    path = _variant(tmp_path, "      b[j, i] = 2.0 * a[j, i];\n",
                    "      b[j, i] = 2.0 * a[j, i];\n      barrier(main);\n")
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match="holds a barrier among its threads"):
        proposal_for(kernel, "swap-mapping:line=5")


def test_a_line_without_a_foreach_is_refused(library: HwdLibrary) -> None:
    kernel = open_kernel(COLSCALE, "hopper", library, values=SIZES)
    with pytest.raises(Refused, match="no foreach starts at line 7"):
        proposal_for(kernel, "swap-mapping:line=7")
