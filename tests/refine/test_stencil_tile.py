"""stencil-tile: the translation of convolution's perfect version (its counts named)
becomes one whose threads each compute ROWS x COLS outputs from the block's input tile
with its halo in shared memory and a chunk of the filter in registers (the form of
kernels/convolution/hopper_v3.mcpl); the next version checks at hopper, verifies at three
sizes (primes, tiles that do not divide them) on the interpreter and the OpenCL device,
the model weighs it, and the search takes it; the preconditions refuse where they must
(docs/refinements.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.hdl.library import HwdLibrary, default_library
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import make_offer, next_version, open_kernel, proposal_for
from mcl.refine.refinement import Refused
from mcl.refine.search import SearchLimits, search
from mcl.refine.search_start import search_start
from mcl.refine.verification import SIZES_WANTED, Verifier
from mcl.resources import kernels_dir

SIZES = {"h": 4096, "w": 4096, "fh": 9, "fw": 9}
LOOP = "stencil-tile:line=21"


@pytest.fixture(scope="module")
def library() -> HwdLibrary:
    return default_library()


@pytest.fixture(scope="module")
def translated(library: HwdLibrary) -> KernelAtLevel:
    return search_start(kernels_dir() / "convolution" / "perfect.mcpl", "hopper", library,
                        values=SIZES).kernel


@pytest.fixture(scope="module")
def named(translated: KernelAtLevel) -> KernelAtLevel:
    return next_version(translated, proposal_for(translated, "name-counts")).kernel


def _written(tmp_path: Path, kernel: KernelAtLevel, old: str, new: str) -> Path:
    assert old in kernel.text
    path = tmp_path / "convolution.mcpl"
    path.write_text(kernel.text.replace(old, new))
    shutil.copy(kernels_dir() / "convolution" / "reference.py", tmp_path / "reference.py")
    return path


def test_each_thread_computes_rows_of_columns_from_a_shared_tile(
        named: KernelAtLevel) -> None:
    proposal = proposal_for(named, LOOP)
    # the window's 9 x 9 at the model's sizes is one chunk
    assert dict(proposal.args) == {"line": "21", "rows": "8", "cols": "2", "warps": "4",
                                   "chunk_h": "9", "chunk_w": "9"}
    offer = make_offer(named, proposal)
    text = offer.text
    # the tile's shape in named constants, tunable; the block size name-counts named,
    # which nothing reads any more, is gone with its tune line
    assert "// tune: 2, 4, 8\nconst int NR_WARPS = 4;\n" in text
    # not the wider column tiles an H100 ran slower (the model estimates them faster)
    assert "// tune: 1, 2\nconst int COLS = 2;\n" in text
    assert "const int TILE_W = NR_THREADS_TJ * COLS;\n" in text
    assert "NR_THREADS_W" not in text and "NR_WARPS_TJ" not in text
    assert "    int nrBlocksH = (h + TILE_H - 1) / TILE_H;\n" in text
    # the input tile with its halo in shared memory, zero outside what the kernel reads
    assert "            shared float[IN_H][IN_W] l_a;\n" in text
    assert ("                                        if (ia < h + fh - 1 && ja < w + fw - 1) {\n"
            "                                            l_a[ii][jj] = a[ia, ja];\n") in text
    # the filter's chunk in registers, zero beyond the filter
    assert ("                                    if (y0 + y < fh && x0 + x < fw) {\n"
            "                                        regF[y][x] = f[y0 + y, x0 + x];\n") in text
    # every value read from shared memory serves the sums whose window meets it
    assert "sums[r][c] += regF[ir - r][x] * regRow[c + x];" in text
    assert text.count("barrier(shared);") == 2
    # the tail as written, for each element of the thread's
    assert ("                            if (i < h && j < w) {\n"
            "                                float sum = sums[r][c];\n"
            "                                b[i, j] = sum / (fh * fw);\n") in text
    assert offer.verification.ok and len(offer.verification.checks) == SIZES_WANTED
    assert "reference.py" in offer.verification.against
    # by the model: a shared load per 4.5 multiply-adds instead of two loads per one
    assert offer.gain is not None and offer.gain > 2.5


def test_a_window_larger_than_its_chunk_runs_in_chunks(named: KernelAtLevel) -> None:
    """Chunks of 2 x 3: the verification's windows (3 x 5, 2 x 3, 5 x 7) take up to 3 x 3
    chunks, the last ones partly beyond the filter."""
    offer = make_offer(named, proposal_for(named, f"{LOOP},chunk_h=2,chunk_w=3"))
    assert "const int CHUNK_H = 2;\nconst int CHUNK_W = 3;\n" in offer.text
    assert offer.verification.ok
    sizes = [check.sizes for check in offer.verification.checks]
    assert any(s["fh"] > 2 and s["fw"] > 3 for s in sizes)


def test_the_verifier_catches_a_halo_one_column_short(named: KernelAtLevel,
                                                      library: HwdLibrary) -> None:
    good = next_version(named, proposal_for(named, LOOP)).text
    wrong = good.replace("const int IN_W = TILE_W + CHUNK_W - 1;",
                         "const int IN_W = TILE_W + CHUNK_W - 2;")
    assert wrong != good
    broken = load_kernel(named.path, named.level, library, named.include_dirs,
                         named.values, text=wrong, reference=named.reference)
    assert not Verifier.of(named).check(broken).ok


def test_the_translation_before_name_counts_is_refused(translated: KernelAtLevel) -> None:
    with pytest.raises(Refused, match="count of foreach wtj is not a constant"):
        proposal_for(translated, "stencil-tile:line=16")


def test_a_sum_that_is_not_a_window_refuses(named: KernelAtLevel, library: HwdLibrary,
                                            tmp_path: Path) -> None:
    path = _written(tmp_path, named, "a[i + y, j + x]", "a[i + x, j + y]")
    with pytest.raises(Refused, match=r"not the one statement `sum \+= W\[y, x\]"):
        proposal_for(open_kernel(path, None, library, values=SIZES), LOOP)


def test_a_window_bound_read_from_the_element_refuses(named: KernelAtLevel,
                                                      library: HwdLibrary,
                                                      tmp_path: Path) -> None:
    path = _written(tmp_path, named, "x < fw;", "x < fw + j - j;")
    with pytest.raises(Refused, match="the bound of the loop over x reads more than parameters"):
        proposal_for(open_kernel(path, None, library, values=SIZES), LOOP)


def test_matmul_is_no_stencil(library: HwdLibrary) -> None:
    start = search_start(kernels_dir() / "matmul" / "perfect.mcpl", "hopper", library,
                         values={"n": 4096, "m": 4096, "p": 4096})
    named = next_version(start.kernel, proposal_for(start.kernel, "name-counts")).kernel
    with pytest.raises(Refused, match="not one accumulator over two loops"):
        proposal_for(named, "stencil-tile:line=21")


@pytest.mark.slow  # about 30 s: name-counts, then every offer one step past it
def test_the_search_takes_it_one_step_past_name_counts(translated: KernelAtLevel) -> None:
    result = search(translated, SearchLimits(steps=2))
    steps = [v.offer.proposal.refinement for v in result.series if v.offer is not None]
    assert steps == ["name-counts", "stencil-tile"]
    assert result.best.verification is not None and result.best.verification.ok
    assert result.best.seconds is not None and translated.model_seconds is not None
    assert translated.model_seconds / result.best.seconds > 2.5
