"""cpu-blocks: the translation of matmul's perfect version to x86_avx512 (one element
of c per vector lane) becomes one whose threads compute strips of register tiles, b
packed per block of k (kernels/matmul/x86_avx512_v5's blocking); the next version checks
at x86_avx512 and verifies at three sizes on the interpreter and the OpenCL device; it
is offered only where a measurement (or a model) ranks it, and the preconditions refuse
where they must (docs/refinements.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.cpu_blocks import CpuBlocks
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search import Measured, SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

LOOP = "cpu-blocks:line=12"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(kernels_dir() / "matmul" / "perfect.mcpl", "x86_avx512",
                        library).kernel


def _written(tmp_path: Path, kernel: KernelAtLevel, old: str, new: str) -> Path:
    assert old in kernel.text
    path = tmp_path / "matmul.mcpl"
    path.write_text(kernel.text.replace(old, new))
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    return path


def _refusal(path: Path, library: HwdLibrary) -> str:
    kernel = open_kernel(path, "x86_avx512", library)
    (refused,) = CpuBlocks().proposals(kernel)
    assert isinstance(refused, Refused)
    return refused.reason


def test_each_thread_computes_strips_of_register_tiles(translated: KernelAtLevel) -> None:
    proposal = proposal_for(translated, LOOP)
    # v5's shape by default
    assert dict(proposal.args) == {"line": "12", "elems_i": "6", "nr_vecs": "4",
                                   "blocks_i": "32", "strips": "8", "block_k": "256"}
    offer = make_offer(translated, proposal)
    text = offer.text
    # the shape's named constants, tunable
    assert "// tune: 1, 2, 4, 8\nconst int STRIPS = 8;\n" in text
    assert "const int NR_VECTORS = 16;\n" in text
    assert "const int ROWS = ELEMS_I * BLOCKS_I;\n" in text
    # the translation's counts go with its loops; the threads over columns are outer
    assert "nrVectorsM" not in text
    assert ("    foreach (int tj in nrThreadsM threads) {\n"
            "        foreach (int ti in nrThreadsN threads) {\n"
            "            foreach (int vj in NR_VECTORS vectors) {\n") in text
    # b packed per block of k, a broadcast into the register tile's sums
    assert "bPack[kk][v] = b[k0 + kk, j];" in text
    assert "sums[ei][v] += aik * bPack[kk][v];" in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
    # x86_avx512 has no time model: no estimated gain
    assert offer.gain is None


def test_v4s_shape_is_one_strip(translated: KernelAtLevel) -> None:
    proposal = proposal_for(translated, f"{LOOP},strips=1,blocks_i=16,block_k=128")
    text = next_version(translated, proposal).text
    assert "const int STRIPS = 1;\n" in text and "const int BLOCK_K = 128;\n" in text
    assert "1 strip of 64 columns x 96 rows" in proposal.summary


def test_the_verifier_catches_a_row_clamped_one_too_far(
        translated: KernelAtLevel, library: HwdLibrary) -> None:
    """The last row of a read as the one before it: the interpreter's outputs differ."""
    good = next_version(translated, proposal_for(translated, LOOP)).text
    wrong = good.replace("ELEMS_I + ei,\n", "ELEMS_I + ei - 1,\n")
    assert wrong != good
    broken = load_kernel(translated.path, translated.level, library,
                         translated.include_dirs, translated.values, text=wrong,
                         reference=translated.reference)
    assert not Verifier.of(translated).check(broken).ok


def test_it_is_not_offered_without_a_measurement(translated: KernelAtLevel) -> None:
    """The level has no time model: a list that is not measured offers no shape, and
    says why; one that measures (unweighed) offers both."""
    offers, refused = list_offers(translated)
    assert not any(o.proposal.refinement == "cpu-blocks" for o in offers)
    reason = next(r.reason for r in refused if r.what == f"{LOOP}")
    assert "the time model states no time at x86_avx512" in reason


@pytest.mark.slow  # about 40 s: every step-1 candidate verified
def test_a_measured_search_takes_the_blocks(translated: KernelAtLevel) -> None:
    """A (fake) CPU that times the blocked versions ten times as fast as the others:
    the search from the translation keeps v5's shape, measured, verified."""

    def timer(kernel: KernelAtLevel) -> Measured:
        blocked = "STRIPS = 8;" in kernel.text
        return Measured(1e-3 * (0.1 if blocked else 1.0), "fake")

    result = search(translated, SearchLimits(steps=1, beam=2), timer)
    best = result.series[-1]
    assert best.invocation == (f"{LOOP},elems_i=6,nr_vecs=4,blocks_i=32,strips=8,"
                               "block_k=256")
    assert best.measured_gain == pytest.approx(10.0)
    assert best.verification is not None and best.verification.ok


def test_a_store_of_more_than_the_sum_refuses(translated: KernelAtLevel, library: HwdLibrary,
                                              tmp_path: Path) -> None:
    path = _written(tmp_path, translated, "c[i, j] = sum;", "c[i, j] = sum + 1.0;")
    assert "does not end with `OUT[i, j] = sum;`" in _refusal(path, library)


def test_a_row_that_is_not_the_threads_variable_refuses(
        translated: KernelAtLevel, library: HwdLibrary, tmp_path: Path) -> None:
    path = _written(tmp_path, translated, "int i = ti;", "int i = n - 1 - ti;")
    assert "is not `int I = ti;`" in _refusal(path, library)


def test_a_product_of_other_indices_refuses(translated: KernelAtLevel, library: HwdLibrary,
                                            tmp_path: Path) -> None:
    path = _written(tmp_path, translated, "a[i, k] * b[k, j]", "a[i, k] * b[j, k]")
    assert "is not `sum += X[i, k] * Y[k, j];`" in _refusal(path, library)


def test_a_gpu_level_has_nothing_to_block(library: HwdLibrary) -> None:
    """At hopper (blocks, warps, threads) the list neither proposes nor names a refusal
    (every kernel there would have one); by name it is refused."""
    kernel = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper",
                          library).kernel
    assert CpuBlocks().proposals(kernel) == []
    with pytest.raises(Refused):
        proposal_for(kernel, "cpu-blocks:line=12")
