"""interchange: two perfectly nested for-loops swapped so that the inner one walks the
arrays' last index; the next version checks at x86_avx512, verifies at three sizes and
loses the cache verdict it answered; each precondition refuses where it must
(docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import LoopLineFetches
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import changed_lines
from mcl.refine.offers import list_offers, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED

COLSUM = Path(__file__).parent / "kernels" / "colsum.mcpl"
SIZES = {"n": 512, "m": 512, "p": 1024}
BODY = "        b[t, j] += a[t, i, j];\n"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _variant(tmp_path: Path, old: str, new: str) -> Path:
    text = COLSUM.read_text()
    assert old in text
    out = tmp_path / COLSUM.name
    out.write_text(text.replace(old, new))
    return out


def _refused(path: Path, library: HwdLibrary, reason: str) -> None:
    kernel = open_kernel(path, None, library, values=SIZES)
    with pytest.raises(Refused, match=reason):
        proposal_for(kernel, "interchange:line=6")


def test_interchanging_the_loops_lets_the_inner_one_walk_a_row(library: HwdLibrary) -> None:
    kernel = open_kernel(COLSUM, "x86_avx512", library, values=SIZES)
    offers, refused = list_offers(kernel)
    assert not refused
    [offer] = offers
    assert offer.proposal.invocation == "interchange:line=6"
    lines = offer.text.splitlines()
    assert lines[5] == "    for (int i = 0; i < n; i++) {"
    assert lines[6] == "      for (int j = 0; j < m; j++) {"
    assert changed_lines(kernel.text, offer.text) == 4
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # the verdict over loop j answered (j was not the innermost) is gone: a[t, i, j]
    # in loop j now benefits from the caches
    answered = offer.proposal.answers
    assert isinstance(answered, LoopLineFetches) and answered.loop is not None
    assert answered.loop.name == "j"
    after = next_version(kernel, offer.proposal).kernel
    over_j = [f for f in after.findings if isinstance(f, LoopLineFetches)
              and f.loop is not None and f.loop.name == "j"]
    assert over_j and all(f.code == "cache-benefits" for f in over_j)
    # by name, the same edits, answering a verdict over j about an access it helps
    again = proposal_for(kernel, "interchange:line=6")
    assert again.edits == offer.proposal.edits
    assert isinstance(again.answers, LoopLineFetches) and again.answers.loop is not None
    assert again.answers.loop.name == "j"


def test_loops_not_perfectly_nested_are_refused(library: HwdLibrary, tmp_path: Path) -> None:
    _refused(_variant(tmp_path, "      for (int i", "      float z = 0.0;\n      for (int i"),
             library, "not perfectly nested")


def test_a_bound_that_reads_the_outer_variable_is_refused(library: HwdLibrary,
                                                          tmp_path: Path) -> None:
    _refused(_variant(tmp_path, "i < n;", "i < j;"), library,
             "header of for-loop i reads j")


def test_a_value_carried_between_iterations_is_refused(library: HwdLibrary,
                                                      tmp_path: Path) -> None:
    path = _variant(tmp_path, BODY, "        b[t, j] += a[t, i, j] * last;\n"
                    "        last = a[t, i, j];\n")
    path.write_text(path.read_text().replace("    for (int j", "    float last = 1.0;\n"
                                             "    for (int j"))
    kernel = open_kernel(path, None, library, values=SIZES)
    line = next(n for n, row in enumerate(kernel.text.splitlines(), 1) if "int j" in row)
    with pytest.raises(Refused, match="assign last, declared outside them"):
        proposal_for(kernel, f"interchange:line={line}")


def test_an_element_written_at_two_indices_is_refused(library: HwdLibrary,
                                                      tmp_path: Path) -> None:
    _refused(_variant(tmp_path, BODY, "        b[t, j] = b[t, i] + a[t, i, j];\n"),
             library, "access it at several indices")


def test_an_index_that_mixes_the_loop_variables_is_refused(library: HwdLibrary,
                                                           tmp_path: Path) -> None:
    path = _variant(tmp_path, BODY, "        a[t, i, (i + j) % m] = a[t, i, (i + j) % m] "
                    "* 2.0;\n")
    _refused(path, library, "does not name each loop variable it reads on its own")


def test_a_swap_that_makes_as_many_accesses_stride_is_refused(library: HwdLibrary,
                                                              tmp_path: Path) -> None:
    _refused(_variant(tmp_path, BODY, "        b[t, j] += a[t, j, i];\n"), library,
             "no fewer accesses stride")
