"""`mcl apply --list` on every shipped kernel at each of its leaves: every refinement it
lists applies, checks at the leaf, verifies at three sizes against the kernel's
reference in the interpreter and on the OpenCL device, and answers the finding it names
(slow: the whole corpus, a few minutes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.mcpl.parse import parse_file
from mcl.refine.edits import apply_edits
from mcl.refine.offers import list_offers, open_kernel, proposal_for
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

pytestmark = pytest.mark.slow

LIBRARY = default_library()


def _cases() -> list[tuple[Path, str]]:
    cases = []
    for path in sorted(kernels_dir().glob("*/*.mcpl")):
        level = parse_file(path).functions[-1].hwd
        cases += [(path, leaf) for leaf in LIBRARY.leaves()
                  if leaf == level or level in LIBRARY.ancestors(leaf)]
    return cases


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return LIBRARY


@pytest.mark.parametrize(("path", "leaf"), _cases(),
                         ids=lambda v: f"{v.parent.name}/{v.stem}" if isinstance(v, Path) else v)
def test_every_listed_refinement_applies_checks_and_verifies(path: Path, leaf: str,
                                                             library: HwdLibrary) -> None:
    kernel = open_kernel(path, leaf, library)
    offers, refused = list_offers(kernel)
    for offer in offers:
        # offered: checked at the leaf and verified at three sizes, primes among them
        assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
        assert "reference.py" in offer.verification.against
        # at a leaf, on the OpenCL device (PoCL) too
        assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
        # the listed invocation makes exactly this next version
        again = proposal_for(kernel, offer.proposal.invocation)
        assert apply_edits(kernel.text, again.edits) == offer.text
        assert offer.diff.startswith(f"--- {path.name}\n")
    # every refinement not offered says why
    assert all(r.reason for r in refused)


def test_the_corpus_has_offers_of_each_listed_kind(library: HwdLibrary) -> None:
    """Not an empty sweep: gesummv's hopper (v2) pads two shared arrays, matmul's hopper
    (v1) gets a new tile size the model estimates faster."""
    gesummv = open_kernel(kernels_dir() / "gesummv" / "hopper_v2.mcpl", "hopper", library)
    names = {o.proposal.refinement for o in list_offers(gesummv)[0]}
    assert "pad-shared" in names
    matmul = open_kernel(kernels_dir() / "matmul" / "hopper_v1.mcpl", "hopper", library)
    offers = list_offers(matmul)[0]
    assert any(o.proposal.refinement == "set-constant" and (o.gain or 0) > 1.03
               for o in offers)
