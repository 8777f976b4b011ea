"""vector-groups: each unit of an elementwise foreach takes VEC consecutive elements,
loaded and stored as vector accesses (kernels/blackscholes/hopper_v2's form); the next
version checks at hopper, verifies at three sizes that VEC does not divide (the groups
past the bound element by element) on the interpreter and the OpenCL device, its
generated OpenCL and CUDA copy each array as `float4`; the model cannot weigh it, so it
is offered only to a search that measures; the preconditions refuse where they must
(docs/refinements.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import load_mapping
from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.offers import list_offers, make_offer, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search import Measured, SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.vector_groups import VectorGroups
from mcl.refine.verification import SIZES_WANTED
from mcl.resources import kernels_dir

BLACKSCHOLES = kernels_dir() / "blackscholes" / "perfect.mcpl"
SIZES = {"n": 4_000_000}
ARRAYS = ("t", "s", "x", "call", "put")


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(BLACKSCHOLES, "hopper", library, values=SIZES).kernel


def _guard_line(kernel: KernelAtLevel) -> int:
    return kernel.text.split("\n").index("                if (i < n) {") + 1


def _spec(kernel: KernelAtLevel) -> str:
    return f"vector-groups:line={_guard_line(kernel)}"


def test_groups_of_four_verify_and_become_float4_accesses(
        translated: KernelAtLevel, library: HwdLibrary) -> None:
    offer = make_offer(translated, proposal_for(translated, _spec(translated)))
    text = offer.text
    assert "const int VEC = 4;\n" in text
    assert "int nrBlocksN = (n + nrThreadsN * VEC - 1) / (nrThreadsN * VEC);" in text
    assert "int iGroup = bi * nrThreadsN + ti;" in text
    for array in ARRAYS:
        assert f"reg float[VEC] {array}Vec;" in text
    # the loads before the elements, the body as written reading the registers
    assert text.index("tVec[c] = t[iGroup * VEC + c];") \
        < text.index("int i = iGroup * VEC + c;") \
        < text.index("float sqrtT = sqrt(tVec[c]);") \
        < text.index("call[iGroup * VEC + c] = callVec[c];")
    assert "callVec[c] = sVec[c] * cndD1 - xVec[c] * expRT * cndD2;" in text
    assert not re.search(r"\b(s|x|t|call|put)\[i\]", text)
    # n = 101, 67, 103: none a multiple of 4, so the groups past n run element by element
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert all(c.sizes["n"] % 4 for c in offer.verification.checks)
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
    assert offer.kernel is not None
    for language, cast in (("opencl", "__global const float4*"), ("cuda", "const float4*")):
        mapping = load_mapping(library.get("hopper"), language=language)
        source = pipeline.generate(offer.kernel.source, "hopper", library, mapping=mapping,
                                   only={"blackscholes"}).source
        for array in ("t", "s", "x"):
            assert f"*(float4*)&{array}Vec[0] = *({cast})&{array}[iGroup * VEC];" in source
        for array in ("call", "put"):
            assert re.search(rf"\*\((__global )?float4\*\)&{array}\[iGroup \* VEC\] = "
                             rf"\*\(const float4\*\)&{array}Vec\[0\];", source), language


def test_offered_only_to_a_search_that_measures(translated: KernelAtLevel) -> None:
    offers, refused = list_offers(translated)
    assert not any(o.proposal.refinement == "vector-groups" for o in offers)
    why = [r for r in refused if r.what == _spec(translated)]
    assert [r.reason for r in why] == [VectorGroups.measured_only]
    offers, _ = list_offers(translated, measuring=True)
    assert [o.proposal.invocation for o in offers
            if o.proposal.refinement == "vector-groups"] == [_spec(translated)]


def test_the_measuring_search_times_and_keeps_it(translated: KernelAtLevel) -> None:
    def timer(kernel: KernelAtLevel) -> Measured:
        return Measured(3.3e-5 if "reg float[VEC]" in kernel.text else 4e-5, "fake")

    # a beam of one: name-counts, the model's best candidate of step 1, fills it, and
    # the version the model cannot weigh is timed all the same
    found = search(translated, SearchLimits(steps=2, beam=1), timer)
    first = {v.invocation: v for v in found.reached if v.step == 1}
    assert first["name-counts"].seconds == min(v.seconds or 1.0 for v in first.values())
    assert first[_spec(translated)].measured_seconds == 3.3e-5
    assert [v.invocation for v in found.series][:2] == ["", _spec(translated)]
    assert found.series[1].measured_gain == pytest.approx(4e-5 / 3.3e-5)
    # the model alone never takes it
    alone = search(translated, SearchLimits(steps=1, lookahead=1))
    assert all(v.invocation != _spec(translated) for v in alone.reached)


def _variant(tmp_path: Path, kernel: KernelAtLevel, old: str, new: str,
             library: HwdLibrary) -> KernelAtLevel:
    assert old in kernel.text
    path = tmp_path / "perfect.mcpl"
    path.write_text(kernel.text.replace(old, new))
    (tmp_path / "reference.py").write_text(kernel.reference.read_text())
    return search_start(path, "hopper", library, values=SIZES).kernel


@pytest.mark.parametrize(("old", "new", "reason", "said"), [
    ("call[i] = s[i] * cndD1", "call[i] = s[i + 0] * cndD1",
     r"s\[i \+ 0\] is not an access of a one-dimensional parameter array at \[i\]", False),
    ("call[i] = s[i] * cndD1 - x[i] * expRT * cndD2;",
     "if (d1 > 0.0) {\n call[i] = s[i] * cndD1 - x[i] * expRT * cndD2;\n }",
     "call is written under a condition and not read", True),
    ("float d2 = d1 - v * sqrtT;", "float d2 = d1 - v * sqrtT + ti;",
     "the `if` reads ti: only the element's index", False),
    ("int nrBlocksN = (n + nrThreadsN - 1) / nrThreadsN;",
     "int nrBlocksN = (n + nrThreadsN - 1) / nrThreadsN / 2;",
     "not every row below n is shown to have a unit", False),
])
def test_the_preconditions_refuse(tmp_path: Path, translated: KernelAtLevel,
                                  library: HwdLibrary, old: str, new: str,
                                  reason: str, said: bool) -> None:
    kernel = _variant(tmp_path, translated, old, new, library)
    with pytest.raises(Refused, match=reason):
        proposal_for(kernel, _spec(kernel))
    # listed: a foreach not shown elementwise is passed over in silence; an elementwise
    # one that cannot be rewritten says why
    listed = VectorGroups().proposals(kernel)
    assert [re.search(reason, p.reason) is not None for p in listed
            if isinstance(p, Refused)] == ([True] if said else [])
    assert not [p for p in listed if not isinstance(p, Refused)]


def test_a_leaf_without_vector_copies_is_refused(library: HwdLibrary) -> None:
    kernel = search_start(BLACKSCHOLES, "fermi", library, values=SIZES).kernel
    line = next(n for n, row in enumerate(kernel.text.split("\n"), 1)
                if row.strip() == "if (i < n) {")
    with pytest.raises(Refused, match="the mapping of fermi makes no vector accesses"):
        proposal_for(kernel, f"vector-groups:line={line}")


def test_an_array_read_and_written_is_loaded_and_stored(
        tmp_path: Path, translated: KernelAtLevel, library: HwdLibrary) -> None:
    kernel = _variant(tmp_path, translated, "put[i] = x[i] * expRT",
                      "put[i] += x[i] * expRT", library)
    offer = make_offer(kernel, proposal_for(kernel, _spec(kernel)))
    assert "putVec[c] = put[iGroup * VEC + c];" in offer.text  # loaded
    assert "put[iGroup * VEC + c] = putVec[c];" in offer.text  # and stored
    assert offer.verification.ok
