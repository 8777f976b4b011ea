"""several-elements on shipped kernels and small ones: the next version checks, verifies
at three sizes and no longer has the elements-several-per-unit finding; the model weighs
each factor; each precondition refuses where it must (docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import SeveralElementsProposal
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

MATMUL = kernels_dir() / "matmul" / "gpu_v1.mcpl"
MATMUL_SIZES = {"n": 8192, "m": 8192, "p": 8192}
VECTORADD = kernels_dir() / "vectoradd" / "perfect.mcpl"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def test_matmul_rows_per_thread_verify_and_lose_the_finding(library: HwdLibrary) -> None:
    """The paper's gpu (v1) -> gpu (v2): each block computes several rows of c."""
    kernel = open_kernel(MATMUL, "hopper", library, values=MATMUL_SIZES)
    finding = next(f for f in kernel.findings if isinstance(f, SeveralElementsProposal))
    assert finding.span is not None
    proposal = proposal_for(kernel, f"elements-several-per-unit@{finding.span.line}")
    assert proposal.refinement == "several-elements"
    assert dict(proposal.args) == {"line": "23", "factor": "4"}
    offer = make_offer(kernel, proposal)
    text = offer.text
    assert "foreach (int bi0 in (n + 3) / 4 blocks) {" in text
    assert "int bi = ebi * ((n + 3) / 4) + bi0;" in text and "if (bi < n) {" in text
    # the body's barrier stays; each element's iteration ends at one more
    assert text.count("barrier(local);") == 2
    # the body is copied as written, two levels deeper (in the for-loop and the guard)
    assert "        int i = bi;\n" in kernel.text and "            int i = bi;\n" in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, SeveralElementsProposal) for f in after.findings)
    # weighed by the model: as the paper says of gpu (v2), no faster by itself
    assert offer.seconds_after is not None and offer.gain is not None
    assert 0.9 < offer.gain < 1.03


def test_the_model_chooses_among_the_factors_and_offers_none_slower(
        library: HwdLibrary) -> None:
    kernel = open_kernel(MATMUL, "hopper", library, values=MATMUL_SIZES)
    offers, refused = list_offers(kernel)
    assert not any(o.proposal.refinement == "several-elements" for o in offers)
    why = next(r for r in refused if r.what == "several-elements:line=23")
    assert "no faster than the kernel" in why.reason


def test_without_a_time_model_it_is_applied_by_name_only(library: HwdLibrary) -> None:
    kernel = open_kernel(VECTORADD, "x86_avx512", library)
    assert any(isinstance(f, SeveralElementsProposal) for f in kernel.findings)
    offers, refused = list_offers(kernel)
    assert not any(o.proposal.refinement == "several-elements" for o in offers)
    assert any(r.what.startswith("several-elements") and "states no time" in r.reason
               for r in refused)
    offer = make_offer(kernel, proposal_for(kernel, "several-elements:line=3,factor=2"))
    assert "foreach (int i0 in (n + 1) / 2 threads) {" in offer.text
    assert offer.verification.ok and "reference.py" in offer.verification.against
    assert offer.gain is None


def test_a_count_the_factor_divides_needs_no_guard(library: HwdLibrary,
                                                  tmp_path: Path) -> None:
    path = tmp_path / "scale.mcpl"
    path.write_text("const int N = 12;\n"
                    "perfect void scale(float[N] y, float[N] x) {\n"
                    "  foreach (int i in N threads) {\n"
                    "    y[i] = 2.0 * x[i];\n"
                    "  }\n"
                    "}\n")
    kernel = open_kernel(path, None, library)
    offer = make_offer(kernel, proposal_for(kernel, "several-elements:line=3,factor=4"))
    assert "foreach (int i0 in N / 4 threads) {" in offer.text
    assert "int i = ei * (N / 4) + i0;" in offer.text and "if (" not in offer.text
    assert offer.verification.ok


ROWS = """perfect void rows(int n, int k, float[n, n] y, float[n, n] x) {
  foreach (int i in COUNT threads) {
    foreach (int j in n threads) {
      BODY
    }
  }
}
"""


@pytest.mark.parametrize(("spec", "count", "body", "why"), [
    ("several-elements:line=2,factor=1", "n", "y[i, j] = x[i, j];", "at least 2"),
    ("several-elements:line=9,factor=2", "n", "y[i, j] = x[i, j];", "no foreach starts"),
    ("several-elements:line=2,factor=2", "k", "y[i, j] = x[i, j]; k = 1;",
     "writes k, which its count reads"),
    ("several-elements:line=2,factor=2", "n", "int i = j; y[i, j] = x[i, j];",
     "declares or writes i"),
    ("several-elements:line=2,factor=2", "n", "if (j > 0) { return; } y[i, j] = 1.0;",
     "holds a return"),
])
def test_several_elements_is_refused_where_a_precondition_fails(
        library: HwdLibrary, tmp_path: Path, spec: str, count: str, body: str,
        why: str) -> None:
    path = tmp_path / "rows.mcpl"
    path.write_text(ROWS.replace("COUNT", count).replace("BODY", body))
    kernel = open_kernel(path, None, library)
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, spec)


def test_units_that_meet_at_a_barrier_are_not_merged(library: HwdLibrary) -> None:
    kernel = open_kernel(MATMUL, "hopper", library, values=MATMUL_SIZES)
    with pytest.raises(Refused, match="the units of foreach tj meet at it"):
        proposal_for(kernel, "several-elements:line=26,factor=2")


def test_a_body_not_laid_out_as_a_block_is_refused(library: HwdLibrary) -> None:
    # matmul's perfect closes its three blocks on one line: `} } }`
    kernel = open_kernel(kernels_dir() / "matmul" / "perfect.mcpl", "x86_avx512", library)
    with pytest.raises(Refused, match="not laid out"):
        proposal_for(kernel, "several-elements:line=7,factor=2")
