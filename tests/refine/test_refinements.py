"""Each refinement on a shipped kernel and on small test kernels: the next version
checks at the level, verifies at three sizes, its diff is small and the finding it
answers is gone; the preconditions refuse where they must (docs/refinements.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.feedback.findings import BankConflictFinding, RegisterReload
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.edits import apply_edits, changed_lines
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.offers import (
    list_offers,
    make_offer,
    next_version,
    open_kernel,
    proposal_for,
)
from mcl.refine.pad_shared import PadShared
from mcl.refine.refinement import Refused
from mcl.refine.verification import SIZES_WANTED, primes_near, size_sets
from mcl.resources import kernels_dir

HERE = Path(__file__).parent / "kernels"
TRANSPOSE = kernels_dir() / "transpose" / "gpu_v1.mcpl"
UNIFORM = Path(__file__).parents[1] / "feedback" / "kernels" / "uniform_weight_hopper.mcpl"
UNIFORM_SIZES = {"n": 1 << 20, "rows": 16, "cols": 64}


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


def _open(path: Path, level: str | None, library: HwdLibrary,
          values: dict[str, int] | None = None) -> KernelAtLevel:
    return open_kernel(path, level, library, values=values)


def _variant(tmp_path: Path, source: Path, old: str, new: str) -> Path:
    text = source.read_text()
    assert old in text
    out = tmp_path / source.name
    out.write_text(text.replace(old, new))
    return out


# ----------------------------------------------------------------------------- pad-shared


def test_no_padding_is_offered_for_a_conflict_the_data_decide(library: HwdLibrary) -> None:
    """hopper_v1's per-warp histogram `l_hist[wp][image[r, c]]` conflicts (the data place
    the lanes; mcl.feedback.data_conflicts), but padding a row moves no lane of it to
    another bank: pad-shared proposes nothing for it."""
    kernel = _open(kernels_dir() / "histogram" / "hopper_v1.mcpl", "hopper", library,
                   {"h": 1024, "w": 1024})
    conflicts = [f for f in kernel.findings if isinstance(f, BankConflictFinding)]
    assert conflicts and all(f.conflict.data_spread == 256 for f in conflicts)
    assert PadShared().proposals(kernel) == []


def test_padding_the_transpose_tile_removes_its_bank_conflict(library: HwdLibrary) -> None:
    kernel = _open(TRANSPOSE, "hopper", library, {"n": 8192, "m": 8192})
    conflict = next(f for f in kernel.findings if isinstance(f, BankConflictFinding))
    assert conflict.conflict.degree == 32
    proposal = proposal_for(kernel, f"bank-conflict@{conflict.span.line}")
    assert proposal.refinement == "pad-shared" and dict(proposal.args)["pad"] == "1"
    offer = make_offer(kernel, proposal)
    # one line changed, as written: the comments and the layout stay
    assert "local float[TILE][TILE + 1] tile;" in offer.text
    assert changed_lines(kernel.text, offer.text) == 2
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    # the finding is gone and the model names both times: 373 µs -> 217 µs
    after = next_version(kernel, proposal).kernel
    assert not any(isinstance(f, BankConflictFinding) for f in after.findings)
    assert offer.gain is not None and offer.gain > 1.5
    assert offer.seconds_after == after.model_seconds


def test_a_flat_array_is_not_padded(library: HwdLibrary) -> None:
    kernel = _open(HERE / "flat_tile_fermi.mcpl", None, library, {"n": 4096})
    assert any(isinstance(f, BankConflictFinding) for f in kernel.findings)
    offers, refused = list_offers(kernel)
    assert not offers
    assert any("two or more dimensions" in r.reason for r in refused)


def test_a_padding_that_leaves_the_conflict_is_not_offered(library: HwdLibrary) -> None:
    """A pad of 32 words keeps every row in the bank it was in."""
    kernel = _open(TRANSPOSE, "hopper", library, {"n": 8192, "m": 8192})
    with pytest.raises(Refused, match="still there"):
        next_version(kernel, proposal_for(kernel, "pad-shared:array=tile,pad=32"))


# ----------------------------------------------------------------------------- hoist-load


def test_hoisting_the_uniform_weight_verifies_on_random_inputs(library: HwdLibrary) -> None:
    kernel = _open(UNIFORM, None, library, UNIFORM_SIZES)
    reload = next(f for f in kernel.findings if isinstance(f, RegisterReload))
    offer = make_offer(kernel, proposal_for(kernel, f"memory-register@{reload.span.line}"))
    assert "            float weight_r = weight[r];\n            for (int k = 0;" in offer.text
    assert "sum += weight_r * x[r, k, i];" in offer.text
    assert changed_lines(kernel.text, offer.text) == 3
    assert offer.verification.against == "the original on random inputs"
    assert offer.verification.ok
    after = next_version(kernel, offer.proposal).kernel
    assert not any(isinstance(f, RegisterReload) for f in after.findings)
    # the model: x streams from device memory either way (docs/feedback.md)
    assert offer.gain == pytest.approx(1.0, abs=0.03)


@pytest.mark.parametrize(("old", "new", "spec", "why"), [
    ("sum += weight[r] * x[r, k, i];", "sum += weight[r] * x[r, k, i];\n"
     "              weight[0] = sum;", "hoist-load:line=16,access=weight[r]", "writes weight"),
    ("k < cols", "k < cols - 1", "hoist-load:line=16,access=weight[r]", "zero times"),
    ("k < cols", "k < cols", "hoist-load:line=16,access=x[r, k, i]", "reads k"),
    ("k < cols", "k < cols", "hoist-load:line=16", "several loads"),
    ("sum += weight[r]", "if (k > 0) sum += weight[r]", "hoist-load:line=16,access=weight[r]",
     "under an if"),
])
def test_hoisting_is_refused_where_a_precondition_fails(
        tmp_path: Path, library: HwdLibrary, old: str, new: str, spec: str, why: str) -> None:
    kernel = _open(_variant(tmp_path, UNIFORM, old, new), None, library, UNIFORM_SIZES)
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, spec)


# ----------------------------------------------------------------------------- unroll


@pytest.mark.parametrize(("factor", "copies", "loops"), [(4, 4, 1), (3, 5, 1), (8, 8, 0)])
def test_unrolling_a_constant_trip_loop_verifies(library: HwdLibrary, factor: int,
                                                 copies: int, loops: int) -> None:
    kernel = _open(HERE / "window.mcpl", None, library, {"n": 1000})
    offer = make_offer(kernel, proposal_for(kernel, f"unroll:line=11,factor={factor}"))
    body = offer.text.split("// the taps, in order\n")[1].split("for (int j")[0]
    assert body.count("sum += w[k] * x[i, k];") == copies
    assert body.count("for (int k0") == loops
    assert offer.verification.ok
    # the remainder of 8 trips by 3: copies for k = 6 and 7 after the loop
    if factor == 3:
        assert "k0 < 6; k0 += 3" in body and "int k = 7;" in body


@pytest.mark.parametrize(("spec", "why"), [
    ("unroll:line=14,factor=2", "no constant trip count"),
    ("unroll:line=17,factor=2", "writes q"),
    ("unroll:line=11,factor=9", "between 2 and the trip count 8"),
    ("unroll:line=12,factor=2", "no for-loop starts at line 12"),
])
def test_unrolling_is_refused_where_a_precondition_fails(library: HwdLibrary, spec: str,
                                                        why: str) -> None:
    kernel = _open(HERE / "window.mcpl", None, library, {"n": 1000})
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, spec)


# ----------------------------------------------------------------------------- set-constant


def test_a_new_tile_shape_of_the_transpose_verifies(library: HwdLibrary) -> None:
    kernel = _open(TRANSPOSE, "hopper", library, {"n": 8192, "m": 8192})
    offer = make_offer(kernel, proposal_for(kernel, "set-constant:name=ROWS,value=4"))
    assert "const int ROWS = 4;" in offer.text
    assert changed_lines(kernel.text, offer.text) == 2
    assert offer.verification.ok and offer.seconds_after is not None


def test_a_constant_that_changes_the_result_does_not_verify(library: HwdLibrary) -> None:
    kernel = _open(HERE / "window.mcpl", None, library, {"n": 1000})
    with pytest.raises(Refused, match="does not verify against the original"):
        make_offer(kernel, proposal_for(kernel, "set-constant:SCALE,3"))


@pytest.mark.parametrize(("spec", "why"), [
    ("set-constant:name=NR_WARPS,value=2", "breaks `TILE_I \\* TILE_J <= 128 \\* NR_THREADS`"),
    ("set-constant:name=TILE_K,value=8.5", "not an integer"),
    ("set-constant:name=TILE_K,value=8", "is 8 already"),
    ("set-constant:name=NOPE,value=8", "no constant"),
])
def test_set_constant_is_refused_where_a_precondition_fails(library: HwdLibrary, spec: str,
                                                        why: str) -> None:
    kernel = _open(kernels_dir() / "matmul" / "hopper_v2.mcpl", None, library)
    with pytest.raises(Refused, match=why):
        proposal_for(kernel, spec)


def test_a_next_version_that_does_not_check_is_refused(library: HwdLibrary) -> None:
    kernel = _open(TRANSPOSE, "hopper", library)
    proposal = proposal_for(kernel, "set-constant:name=TILE,value=0")
    assert "const int TILE = 0;" in apply_edits(kernel.text, proposal.edits)
    with pytest.raises(Refused, match="does not check at hopper"):
        next_version(kernel, proposal)


# ----------------------------------------------------------------------------- verification


def test_the_sizes_include_primes() -> None:
    sets = size_sets({"n": 19, "m": 31})
    assert sets[:3] == [{"n": 19, "m": 31}, {"n": 11, "m": 19}, {"n": 23, "m": 37}]
    assert primes_near(1000, False) == 661 and primes_near(2, True) == 3


def test_an_unknown_refinement_names_the_known_ones(library: HwdLibrary) -> None:
    kernel = _open(TRANSPOSE, "hopper", library)
    with pytest.raises(Refused, match="pad-shared"):
        proposal_for(kernel, "pad-shard:array=tile")
    with pytest.raises(Refused, match="no bank-conflict finding at line 3"):
        proposal_for(kernel, "bank-conflict@3")


def test_a_finding_no_refinement_answers_says_so(library: HwdLibrary) -> None:
    kernel = _open(kernels_dir() / "transpose" / "perfect.mcpl", "hopper", library,
                   {"n": 8192, "m": 8192})
    cache = next(f for f in kernel.findings if f.code == "cache-no-benefit")
    with pytest.raises(Refused, match="no refinement answers cache-no-benefit findings yet"):
        proposal_for(kernel, f"cache-no-benefit@{cache.span.line}")
