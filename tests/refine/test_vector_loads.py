"""vector-loads: the lanes' runs of consecutive elements interleaved, so that the lanes
of one iteration access consecutive elements; applied to the shipped Black-Scholes mic
(v1) at xeon_phi (it makes the shipped xeon_phi (v1) step) and to a small kernel at
hopper; the preconditions refuse where they must (docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import LoopLineFetches, UncoalescedAccess
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import changed_lines
from mcl.refine.offers import list_offers, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

BLACKSCHOLES = kernels_dir() / "blackscholes"
RUNS = Path(__file__).parent / "kernels" / "runs.mcpl"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _lanes_apart(findings: object, line: int) -> list[LoopLineFetches]:
    """cache-no-benefit findings over the lanes' loop vi at `line`."""
    assert isinstance(findings, tuple)
    return [f for f in findings if isinstance(f, LoopLineFetches)
            and f.code == "cache-no-benefit" and f.loop is not None and f.loop.name == "vi"
            and f.span is not None and f.span.line == line]


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = RUNS.read_text()
    assert old in text
    out = tmp_path / RUNS.name
    out.write_text(text.replace(old, new))
    return out


def test_interleaving_the_mic_lanes_makes_the_shipped_xeon_phi_step(
        library: HwdLibrary) -> None:
    kernel = open_kernel(BLACKSCHOLES / "mic_v1.mcpl", "xeon_phi", library)
    load = next(n for n, row in enumerate(kernel.text.splitlines(), 1) if "= s[i];" in row)
    assert _lanes_apart(kernel.findings, load)
    offers, refused = list_offers(kernel)
    assert not refused
    [offer] = [o for o in offers if o.proposal.refinement == "vector-loads"]
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert changed_lines(kernel.text, offer.text) == 2
    # the index the paper's xeon_phi version uses, as the shipped file writes it
    shipped = (BLACKSCHOLES / "xeon_phi_v1.mcpl").read_text()
    new = next(row for row in offer.text.splitlines() if "int i = " in row)
    assert new.strip() == "int i = (ti * ELEMS + e) * NR_VECTORS + vi;"
    assert new.strip() in shipped
    # the lanes of a thread now load one line together
    after = next_version(kernel, offer.proposal).kernel
    assert not _lanes_apart(after.findings, load)


def test_interleaving_a_warps_runs_coalesces_them(library: HwdLibrary) -> None:
    kernel = open_kernel(RUNS, "hopper", library, values={"n": 1 << 20})
    assert any(isinstance(f, UncoalescedAccess) for f in kernel.findings)
    proposal = proposal_for(kernel, "vector-loads:line=12")
    assert isinstance(proposal.answers, UncoalescedAccess)
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, UncoalescedAccess) for f in after.findings)
    offers, _ = list_offers(kernel)
    assert [o.proposal.invocation for o in offers] == ["vector-loads:line=12"]
    assert offers[0].verification.ok


def test_lanes_that_do_not_load_together_are_refused(library: HwdLibrary) -> None:
    kernel = open_kernel(RUNS, None, library, values={"n": 1 << 20})
    with pytest.raises(Refused, match="do not execute one load together at perfect"):
        proposal_for(kernel, "vector-loads:line=12")
    assert list_offers(kernel) == ([], [])  # nothing asks for it at perfect


def test_a_lane_index_read_outside_the_index_is_refused(library: HwdLibrary,
                                                       tmp_path: Path) -> None:
    path = _variant(tmp_path, "b[i] = 2.0 * a[i];", "b[i] = 2.0 * a[i] + e;")
    kernel = open_kernel(path, "hopper", library, values={"n": 1 << 20})
    with pytest.raises(Refused, match="read outside the index i"):
        proposal_for(kernel, "vector-loads:line=12")
    _, refused = list_offers(kernel)
    assert any("read outside the index" in r.reason for r in refused)


def test_a_value_carried_between_iterations_is_refused(library: HwdLibrary,
                                                      tmp_path: Path) -> None:
    path = _variant(tmp_path, "      for (int e = 0; e < ELEMS; e++) {\n",
                    "      float last = 0.0;\n      for (int e = 0; e < ELEMS; e++) {\n")
    path.write_text(path.read_text().replace("b[i] = 2.0 * a[i];",
                                             "b[i] = 2.0 * a[i] + last;\n          last = a[i];"))
    kernel = open_kernel(path, "hopper", library, values={"n": 1 << 20})
    with pytest.raises(Refused, match="writes last, declared outside it"):
        proposal_for(kernel, "vector-loads:line=13")


def test_an_element_of_another_iteration_is_refused(library: HwdLibrary,
                                                   tmp_path: Path) -> None:
    path = _variant(tmp_path, "if (i < n) {", "if (i > 0 && i < n) {")
    path.write_text(path.read_text().replace("b[i] = 2.0 * a[i];", "b[i] = 2.0 * b[i - 1];"))
    kernel = open_kernel(path, "hopper", library, values={"n": 1 << 20})
    with pytest.raises(Refused, match=r"accesses b\[i - 1\]: each iteration must use"):
        proposal_for(kernel, "vector-loads:line=12")


def test_an_index_of_another_shape_is_refused(library: HwdLibrary) -> None:
    kernel = open_kernel(BLACKSCHOLES / "xeon_phi_v1.mcpl", None, library)
    line = next(n for n, row in enumerate(kernel.text.splitlines(), 1) if "int i = " in row)
    with pytest.raises(Refused, match="not in a for-loop over vi inside a foreach over e"):
        proposal_for(kernel, f"vector-loads:line={line}")
    with pytest.raises(Refused, match="declares no single local"):
        proposal_for(kernel, "vector-loads:line=1")
