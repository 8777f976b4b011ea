"""tile-2d: the translation of matmul's perfect version (its counts named) becomes one
whose threads each compute a 2-D tile of c, the row's and column's operands loaded once
into registers; the next version checks at hopper, verifies at three sizes on the
interpreter and the OpenCL device, and the model weighs it; the preconditions refuse
where they must (docs/refinements.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import list_offers, make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

SIZES = {"n": 4096, "m": 4096, "p": 4096}
LOOP = "tile-2d:line=21"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                        values=SIZES).kernel


@pytest.fixture(scope="module")
def named(translated: KernelAtLevel) -> KernelAtLevel:
    return next_version(translated, proposal_for(translated, "name-counts")).kernel


def _written(tmp_path: Path, kernel: KernelAtLevel, old: str = "", new: str = "") -> Path:
    assert old in kernel.text
    path = tmp_path / "matmul.mcpl"
    path.write_text(kernel.text.replace(old, new))
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    return path


def test_each_thread_computes_a_tile_of_c(named: KernelAtLevel) -> None:
    proposal = proposal_for(named, f"{LOOP},elems_i=8,elems_j=4")
    assert dict(proposal.args) == {"line": "21", "elems_i": "8", "elems_j": "4",
                                   "threads_i": "32"}
    offer = make_offer(named, proposal)
    text = offer.text
    # named constants of the tile's shape, tunable, with the rule that keeps it whole
    assert ("// require: (NR_WARPS_TJ * NR_THREADS_TJ) % THREADS_I == 0\n"
            "const int THREADS_I = 32;\n"
            "const int THREADS_J = NR_WARPS_TJ * NR_THREADS_TJ / THREADS_I;\n") in text
    assert "// tune: 1, 2, 4, 8\nconst int ELEMS_I = 8;\n" in text
    # and the rule that keeps the tile in registers: 65536 over the block's threads
    assert ("// require: ELEMS_I * ELEMS_J + ELEMS_I + ELEMS_J + 16 <= 65536 / "
            "(NR_WARPS_TJ * NR_THREADS_TJ)\n") in text
    # a block per tile along both dimensions
    assert "    int nrBlocksM = (m + TILE_J - 1) / TILE_J;\n" in text
    assert "    foreach (int bi in (n + TILE_I - 1) / TILE_I blocks) {\n" in text
    # a's row and b's column loaded once per k into registers, guarded at the edges
    assert "reg float[ELEMS_I] r_a;" in text and "reg float[ELEMS_J] r_b;" in text
    assert ("                            if (i < n) {\n"
            "                                r_a[ei] = a[i, k];\n"
            "                            } else {\n"
            "                                r_a[ei] = 0.0;\n") in text
    assert "                                sum_tile[ei][ej] += r_a[ei] * r_b[ej];\n" in text
    # the tail as written, for each element of the tile
    assert ("                            if (i < n && j < m) {\n"
            "                                float sum = sum_tile[ei][ej];\n"
            "                                c[i, j] = sum;\n") in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    assert offer.verification.runs_on.startswith("the interpreter and OpenCL on ")
    # by the model: fewer loads per multiply-add (25.9 ms -> 5.3 ms)
    assert offer.gain is not None and offer.gain > 4


@pytest.mark.slow  # about 40 s: four tiles weighed, the fastest verified
def test_the_list_offers_the_fastest_tile(named: KernelAtLevel) -> None:
    offers, _ = list_offers(named)
    best = next(o for o in offers if o.proposal.refinement == "tile-2d")
    # 8 x 8 does not fit the registers of a block of 1024 threads; it is weighed at
    # 512, and by the model fastest (25.9 ms -> 4.24 ms; 8 x 4 at 1024: 5.3 ms)
    assert best.proposal.invocation == \
        f"{LOOP},elems_i=8,elems_j=8,threads_i=16,threads=512"
    assert best.gain is not None and best.gain > 6


def test_a_smaller_block_holds_a_larger_tile(named: KernelAtLevel) -> None:
    """A block of 512 threads leaves each thread 128 registers: the 8 x 8 tile that
    1024 threads cannot hold (the test below) fits, and the block's named constant is
    set as `set-constant` sets it."""
    proposal = proposal_for(named, f"{LOOP},elems_i=8,elems_j=8,threads=512")
    assert dict(proposal.args) == {"line": "21", "elems_i": "8", "elems_j": "8",
                                   "threads_i": "16", "threads": "512"}
    offer = make_offer(named, proposal)
    assert "const int NR_THREADS_M = 512;\n" in offer.text
    assert "const int THREADS_I = 16;\n" in offer.text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    # by the model: 8 + 8 loads for 64 multiply-adds (25.9 ms -> 4.24 ms), against
    # 8 + 4 for 32 of the 8 x 4 tile at 1024 threads (5.3 ms)
    assert offer.gain is not None and offer.gain > 6


def test_the_verifier_catches_a_block_that_covers_half_its_tile(
        named: KernelAtLevel, library: HwdLibrary) -> None:
    """The block shrinks, but a tile shape still computed from the old block's 1024
    threads leaves half the block's rows to no thread: the interpreter's outputs differ."""
    proposal = proposal_for(named, f"{LOOP},elems_i=8,elems_j=8,threads=512")
    good = next_version(named, proposal).text
    wrong = good.replace("const int THREADS_J = NR_WARPS_TJ * NR_THREADS_TJ / THREADS_I;",
                         "const int THREADS_J = 1024 / THREADS_I;")
    assert wrong != good
    broken = load_kernel(named.path, named.level, library, named.include_dirs,
                         named.values, text=wrong, reference=named.reference)
    assert not Verifier.of(named).check(broken).ok


def test_a_block_size_the_constant_cannot_make_refuses(named: KernelAtLevel) -> None:
    with pytest.raises(Refused, match="threads=384: no value of NR_THREADS_M"):
        proposal_for(named, f"{LOOP},elems_i=8,elems_j=8,threads=384")


def test_convolution_keeps_its_window_load_under_the_guard(library: HwdLibrary) -> None:
    start = search_start(kernels_dir() / "convolution" / "perfect.mcpl", "hopper", library)
    named = next_version(start.kernel, proposal_for(start.kernel, "name-counts")).kernel
    proposal = proposal_for(named, "tile-2d:line=21,elems_i=4,elems_j=4")
    text = next_version(named, proposal).text
    # the filter's element, the same for every element of the tile, loaded once per
    # (y, x); the window's element read by each element, under the edges' guard
    assert "                            float r_f = f[y, x];\n" in text
    assert ("                                    if (i < h && j < w) {\n"
            "                                        sum_tile[ei][ej] += r_f * "
            "a[i + y, j + x];\n") in text
    assert "b[i, j] = sum / (fh * fw);" in text


def test_the_translation_before_name_counts_is_refused(translated: KernelAtLevel) -> None:
    with pytest.raises(Refused, match="count of foreach wtj is not a constant"):
        proposal_for(translated, "tile-2d:line=16")


def test_a_tail_that_reads_a_lane_refuses(named: KernelAtLevel, library: HwdLibrary,
                                          tmp_path: Path) -> None:
    path = _written(tmp_path, named, "c[i, j] = sum;", "c[i, j] = sum + ttj;")
    with pytest.raises(Refused, match="the `if` reads ttj"):
        proposal_for(open_kernel(path, None, library, values=SIZES), LOOP)


def test_a_row_that_is_not_the_blocks_variable_refuses(named: KernelAtLevel,
                                                       library: HwdLibrary,
                                                       tmp_path: Path) -> None:
    path = _written(tmp_path, named, "int i = bi;", "int i = bi * 1;")
    with pytest.raises(Refused, match="no `int I = bi;` before the `if`"):
        proposal_for(open_kernel(path, None, library, values=SIZES), LOOP)


def test_a_loop_bound_that_reads_the_element_refuses(named: KernelAtLevel,
                                                     library: HwdLibrary,
                                                     tmp_path: Path) -> None:
    path = _written(tmp_path, named, "k < p;", "k < p + i - i;")
    with pytest.raises(Refused, match="the bounds of the loop over k read i"):
        proposal_for(open_kernel(path, None, library, values=SIZES), LOOP)


def test_a_threads_i_that_does_not_divide_the_block_refuses(named: KernelAtLevel) -> None:
    with pytest.raises(Refused, match="threads_i divides the block's 1024 threads"):
        proposal_for(named, f"{LOOP},threads_i=3")


def test_a_tile_the_registers_do_not_hold_refuses(named: KernelAtLevel) -> None:
    """8 x 8 sums, 8 + 8 operands and the reserve do not fit the 64 registers a thread
    of a block of 1024 may have (ptxas spills it)."""
    with pytest.raises(Refused, match="a tile of 8 x 8 needs about 96 registers per "
                                      "thread, more than the 64"):
        proposal_for(named, f"{LOOP},elems_i=8,elems_j=8")


def test_a_guarded_add_keeps_its_loads_under_its_guard(named: KernelAtLevel,
                                                       library: HwdLibrary,
                                                       tmp_path: Path) -> None:
    """An add under an `if` of the loop's body: its loads may be kept inside the arrays
    by the guard, so they are not loaded ahead of it into registers."""
    path = _written(tmp_path, named, "sum += a[i, k] * b[k, j];",
                    "if (k < p) {\n                            sum += a[i, k] * b[k, j];\n"
                    "                        }")
    kernel = open_kernel(path, None, library, values=SIZES)
    offer = make_offer(kernel, proposal_for(kernel, f"{LOOP},elems_i=4,elems_j=4"))
    assert "r_a" not in offer.text and "r_b" not in offer.text
    assert "sum_tile[ei][ej] += a[i, k] * b[k, j];" in offer.text
    assert offer.verification.ok
