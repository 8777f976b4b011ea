"""The histogram and spmv series (issue 14, the paper's section 7): every hand-written
version checks clean at its level, translates to the leaves below it, computes what
reference.py says in the interpreter and as OpenCL on PoCL (small sizes and sizes that
divide no tile), and the feedback of each version says what its change acts on."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from mcl import pipeline
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.registry import analyse
from mcl.interp import run_function
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.report.measure import measure_program
from mcl.report.series import Series, change_of, load_series
from mcl.resources import kernels_dir
from mcl.translate import translate_program
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .series_support import library

APPS = ("histogram", "spmv")
LEAVES = ("fermi", "hopper", "xeon_phi", "x86_avx512")
# Small sizes, and uneven ones (primes, more than one grid-stride round where cheap).
SIZES = {
    "histogram": [{"h": 3, "w": 40}, {"h": 37, "w": 301}],
    "spmv": [{"nrows": 29, "ncols": 23, "nnz": 97}, {"nrows": 613, "ncols": 97, "nnz": 3001}],
}


@cache
def series(app: str) -> Series:
    return load_series(kernels_dir() / app, library())


@cache
def program(app: str, name: str) -> Any:
    spec = series(app).version(name)
    assert spec is not None and spec.path is not None
    return load_program(spec.path, (), library())


def hand_written() -> list[tuple[str, str]]:
    return [(app, v.name) for app in APPS for v in series(app).versions if not v.translated]


CASES = hand_written()
IDS = [f"{a}-{n}" for a, n in CASES]


def _level(app: str, name: str) -> str:
    return program(app, name).main.function(app).hwd


def _leaves_below(level: str) -> list[str]:
    lib = library()
    return [leaf for leaf in LEAVES if leaf == level or level in lib.ancestors(leaf)]


def test_every_file_is_in_its_series() -> None:
    for app in APPS:
        files = {p.stem for p in (kernels_dir() / app).glob("*.mcpl")}
        assert files == {v.name for v in series(app).versions if not v.translated}


@pytest.mark.parametrize(("app", "name"), CASES, ids=IDS)
def test_checks_clean_translates_and_states_its_change(app: str, name: str) -> None:
    prog = program(app, name)
    assert check_program(prog, library()) == []
    level = _level(app, name)
    assert level == name.rsplit("_v", 1)[0]
    if name != "perfect":
        assert len(change_of(series(app).version(name).path) or "") > 20  # type: ignore[arg-type]
    leaves = _leaves_below(level)
    assert leaves
    for leaf in leaves:
        translated = translate_program(prog, leaf, library()).program
        errors = [d for d in check_program(translated, library()) if d.severity.value == "error"]
        assert errors == [], (leaf, errors)


@pytest.mark.parametrize(("app", "name"), CASES, ids=IDS)
@pytest.mark.parametrize("case", [0, 1], ids=["small", "uneven"])
def test_interpreter_and_pocl_match_numpy(app: str, name: str, case: int) -> None:
    from mcl.backends.opencl.runner import select_device

    reference = load_reference(kernels_dir() / app / "reference.py")
    sizes = SIZES[app][case]
    _, args = make_inputs(reference, sizes, seed=11 + case)
    expected = expected_outputs(reference, args)
    if case == 0:
        _, fresh = make_inputs(reference, sizes, seed=11 + case)  # the interpreter updates hist
        results = run_function(pipeline.check(program(app, name), library()), app, fresh, library())
        assert [c for c in verify(reference, expected, results, args) if not c.ok] == []
    leaf = series(app).version(name).leaf_for("cpu")  # type: ignore[union-attr]
    assert leaf is not None
    measured = measure_program(program(app, name), app, leaf, library(), args,
                               select_device(None), repeat=1, reference=reference,
                               expected=expected, work=reference.work(sizes))
    assert measured.problem is None and measured.verified is True


# ----------------------------------------------------------------------------- feedback

H = {"h": 16384, "w": 16384}
S = {"nrows": 1_000_000, "ncols": 1_000_000, "nnz": 20_000_000, "iters_k": 20,
     "max_iters_k": 60}


@cache
def codes(app: str, name: str, level: str | None = None) -> dict[str, list[Any]]:
    prog = program(app, name)
    if level is not None:
        prog = translate_program(prog, level, library()).program
    function = prog.main.function(app)
    out: dict[str, list[Any]] = {}
    checked = pipeline.check(prog, library())
    values = H if app == "histogram" else S
    for msg in analyse(function, checked, library().get(function.hwd), values):
        out.setdefault(msg.code, []).append(msg)
    return out


def test_histogram_gpu_v1_acts_on_the_privatisation_and_the_unit_limit() -> None:
    before = codes("histogram", "perfect", "gpu")
    # 16,384 x 16 blocks: each grid dimension within gpu's 65,535, so no unit limit (the
    # product was taken for the bound before it held per dimension)
    assert "store-privatise" in before and "units-over-limit" not in before
    after = codes("histogram", "gpu_v1")
    assert "store-privatise" not in after and "units-over-limit" not in after
    (c,) = after["store-contention"]
    assert c.value_map["writers"].numeric == 256  # the block's threads, not h * w


def test_histogram_nvidia_v1_fills_the_block_slots() -> None:
    (before,) = codes("histogram", "gpu_v1", "nvidia")["shared-mem-parallelism"]
    (after,) = codes("histogram", "nvidia_v1")["shared-mem-parallelism"]
    assert before.value_map["blocks_per_smp"].numeric < 8
    assert after.value_map["blocks_per_smp"].numeric == 8
    # but 4 blocks of 256 threads already used all 1,024 thread slots (issue 11): the
    # feedback no longer suggests the change, it states the fact
    assert before.severity == FeedbackSeverity.INFO and "nothing to gain" in before.text


def test_histogram_hopper_v1_takes_the_per_warp_copies() -> None:
    (before,) = codes("histogram", "nvidia_v1", "hopper")["store-privatise"]
    assert "copy per warp in shared" in before.text
    assert "store-privatise" not in codes("histogram", "hopper_v1")
    (c,) = codes("histogram", "hopper_v1")["store-contention"]
    assert c.value_map["writers"].numeric == 32


def test_histogram_cpu_versions_act_on_contention_and_privatisation() -> None:
    # The scatter is atomic contention, not one element per unit (issue 11): the
    # privatisation message asks for several elements per unit first.
    perfect = codes("histogram", "perfect", "mic")
    assert "elements-several-per-unit" not in perfect
    (contention,) = perfect["store-contention"]
    assert contention.text.startswith("atomic contention: ")
    (privatise,) = perfect["store-privatise"]
    assert "let each vector handle several elements first" in privatise.text
    assert "elements-several-per-unit" not in codes("histogram", "mic_v1")
    assert "store-privatise" in codes("histogram", "mic_v1")  # a copy per thread: next step
    v1 = codes("histogram", "x86_avx512_v1")
    assert "store-contention" not in v1 and "store-privatise" not in v1  # private copies


def test_spmv_versions_and_the_irregular_feedback() -> None:
    assert "elements-several-per-unit" in codes("spmv", "perfect", "gpu")
    assert "elements-several-per-unit" not in codes("spmv", "gpu_v1")
    (imbalance,) = codes("spmv", "gpu_v1")["loop-data-bounds-imbalance"]
    assert imbalance.value_map["imbalance"].numeric == 3
    strides = codes("spmv", "gpu_v2")["loop-data-bounds-stride"]
    assert {m.value_map["stride_bytes"].numeric for m in strides} == {128}  # GROUP * 4 B
    lanes = codes("spmv", "perfect", "x86_avx512")["loop-data-bounds-stride"]
    assert all("data-dependent positions" in m.text for m in lanes)
    v1 = codes("spmv", "x86_avx512_v1")["loop-data-bounds-stride"]
    assert all("lock-step" not in m.text for m in v1)  # one lane per thread


@pytest.mark.parametrize("name", [n for a, n in CASES if a == "spmv"])
def test_spmv_on_the_power_law_matrix_on_pocl(name: str) -> None:
    """The realistic input (reference.py's `powerlaw`: a few very long rows in a band)."""
    from mcl.backends.opencl.runner import select_device

    reference = load_reference(kernels_dir() / "spmv" / "reference.py")
    sizes = {"nrows": 613, "ncols": 601, "nnz": 9001}
    _, args = make_inputs(reference, sizes, seed=5, kind="powerlaw")
    leaf = series("spmv").version(name).leaf_for("cpu")  # type: ignore[union-attr]
    assert leaf is not None
    measured = measure_program(program("spmv", name), "spmv", leaf, library(), args,
                               select_device(None), repeat=1, reference=reference,
                               expected=expected_outputs(reference, args),
                               work=reference.work(sizes))
    assert measured.problem is None and measured.verified is True



def _csr_args(lengths: list[int], ncols: int) -> dict[str, Any]:
    """A CSR matrix with the given row lengths (columns 0, 1, ... of each row)."""
    import numpy as np

    rng = np.random.default_rng(7)
    rowptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    cols = np.concatenate([np.arange(n) for n in lengths] or [[]]).astype(np.int32)
    scratch = load_reference(kernels_dir() / "spmv" / "reference.py").module.scratch()
    return {"nrows": len(lengths), "ncols": ncols, "nnz": int(rowptr[-1]),
            "y": np.full(len(lengths), 9.0, dtype=np.float32),  # not 0: the kernel clears y
            "rowptr": rowptr, "cols": cols,
            "vals": rng.uniform(-1.0, 1.0, int(rowptr[-1])).astype(np.float32),
            "x": rng.uniform(-1.0, 1.0, ncols).astype(np.float32), **scratch}


@pytest.mark.parametrize("lengths", [
    [0, 0, 0, 5000, 1, 0, 2, 1999, 0, 0],  # empty rows around a row of several tiles
    [0] * 7,  # no non-zeros at all
    [1] * 1800 + [0] * 5 + [3000] + [7] * 300,  # one-element rows, then a long one
], ids=["long-rows-and-empty-ones", "no-non-zeros", "short-then-long"])
@pytest.mark.parametrize("name", ["hopper_v2", "hopper_v3", "hopper_v4", "hopper_v5",
                                  "hopper_v6", "hopper_v7", "hopper_v8",
                                  "hopper_v9", "hopper_v17", "hopper_v20"])
def test_spmv_rows_across_threads_chunks_and_tiles(lengths: list[int], name: str) -> None:
    """hopper_v2 and v5 cut the work by non-zeros: a row may cross threads (joined by the
    segmented scan) and tiles (atomicAdd into y, which the kernel clears first); v5's
    window of rowptr overflows on the 1,800 one-element rows (its search falls back to
    global memory). hopper_v3 and v4 take row blocks: the long rows need several chunks
    of the staging buffer, and v4 joins their pieces across threads. Empty rows belong to
    no thread and store 0."""
    from mcl.backends.opencl.runner import select_device

    reference = load_reference(kernels_dir() / "spmv" / "reference.py")
    args = _csr_args(lengths, 5000)
    sizes = {k: args[k] for k in ("nrows", "ncols", "nnz")}
    measured = measure_program(program("spmv", name), "spmv", "hopper", library(), args,
                               select_device(None), repeat=2, reference=reference,
                               expected=expected_outputs(reference, args),
                               work=reference.work(sizes))
    assert measured.problem is None and measured.verified is True


@pytest.mark.parametrize("lengths", [
    [0, 0, 0, 5000, 1, 0, 2, 1999, 0, 0],
    [1] * 1800 + [0] * 5 + [3000] + [7] * 300,
    [3] * 1000 + [0] * 50 + [2] * 77 + [5001],  # nnz = 8,155: not a multiple of 4
], ids=["long-rows-and-empty-ones", "short-then-long", "uneven-nnz"])
@pytest.mark.parametrize("name", ["hopper_v7", "hopper_v8", "hopper_v9", "hopper_v17",
                                  "hopper_v20"])
def test_spmv_blocks_of_several_tiles(lengths: list[int], name: str) -> None:
    """hopper_v7 to v9 launch at most NR_BLOCKS blocks, each a range of several tiles
    that takes the next tile's first row from the last one (v9 also its loads): at the
    sizes above, one tile per block would leave that path untested, so the grid is cut
    to 2 blocks of one warp (tiles of 32 * PER non-zeros)."""
    from mcl.backends.opencl.runner import select_device
    from mcl.report.measure import prepare_session

    reference = load_reference(kernels_dir() / "spmv" / "reference.py")
    args = _csr_args(lengths, 5001)
    sizes = {k: args[k] for k in ("nrows", "ncols", "nnz")}
    session, problem = prepare_session(program("spmv", name), "spmv", "hopper", library(),
                                       select_device(None), {"NR_BLOCKS": 2, "NR_WARPS": 1})
    assert session is not None, problem
    run = session.run("spmv", dict(args), 1)
    checks = verify(reference, expected_outputs(reference, args), run.outputs, sizes)
    assert checks and all(c.ok for c in checks)


@pytest.mark.parametrize("lengths", [
    [0, 0, 0, 5000, 1, 0, 2, 1999, 0, 0],  # a row over six blocks
    [0] * 7,  # no non-zeros at all
    [0, 0] + [876] * 8 + [0, 0],  # every row ends where a block ends
    [0, 0, 876, 0, 0, 876, 0, 1752, 0, 3504, 0, 0],  # empty rows where blocks begin
    [3] * 1000 + [0] * 50 + [2] * 77 + [5001],  # nnz = 8,155
    [20] * 300 + [0] * 3 + [13] * 200 + [1] * 40,  # windows of one half and of two
], ids=["row-over-six-blocks", "no-non-zeros", "rows-end-with-blocks",
        "empty-rows-at-block-starts", "uneven-nnz", "short-and-long-windows"])
@pytest.mark.parametrize("name", ["hopper_v17", "hopper_v20"])
def test_spmv_stores_every_row_once(lengths: list[int], name: str) -> None:
    """hopper_v17 and v20 (from hopper_v16, in the history) clear nothing: every row is
    stored once, a row that crosses blocks by the second kernel from the blocks' partial
    sums (y starts as 9 and the scratch arrays as NaN and -7). 8 blocks of one warp: 876
    non-zeros a block (nnz = 7,008), two tiles of 480 each (tiles on whole groups of 4, and
    the 16-byte staging where 512 non-zeros from a tile's start lie in whole groups; v20's
    window of rowptr: rows of 20 and 13 in the first half of a 64-entry window, rows of 1
    in both)."""
    from mcl.backends.opencl.runner import select_device
    from mcl.report.measure import prepare_session

    reference = load_reference(kernels_dir() / "spmv" / "reference.py")
    args = _csr_args(lengths, 5001)
    sizes = {k: args[k] for k in ("nrows", "ncols", "nnz")}
    session, problem = prepare_session(program("spmv", name), "spmv", "hopper",
                                       library(), select_device(None),
                                       {"NR_BLOCKS": 8, "NR_WARPS": 1})
    assert session is not None, problem
    run = session.run("spmv", dict(args), 1)
    checks = verify(reference, expected_outputs(reference, args), run.outputs, sizes)
    assert checks and all(c.ok for c in checks)


def test_spmv_hopper_v2_acts_on_the_imbalance_of_power_law_rows() -> None:
    """With the power-law matrix's row statistics (its longest row of 10^6 has 30,039
    non-zeros) the feedback on hopper_v1 names the imbalance its change removes."""
    stats = {**S, "iters_k": 20, "max_iters_k": 30039}
    for name, present in (("hopper_v1", True), ("hopper_v2", False)):
        prog = program("spmv", name)
        function = prog.main.function("spmv")
        checked = pipeline.check(prog, library())
        found = [m for m in analyse(function, checked, library().get(function.hwd), stats)
                 if m.code == "loop-data-bounds-imbalance"]
        assert bool(found) == present, name
        if present:
            assert found[0].value_map["imbalance"].numeric > 1000

# Codes each row of `mcl report` shows (at the paper's sizes), and codes it must not:
# the change of a version removes what it acts on.
REPORT_ROWS = {
    "histogram": {
        "gpu": ({"store-privatise", "store-contention"},
                {"elements-several-per-unit", "units-over-limit"}),
        "gpu_v1": ({"store-contention"}, {"store-privatise", "units-over-limit"}),
        "nvidia": ({"shared-mem-parallelism"}, set()),
        "hopper": ({"store-privatise"}, set()),
        "hopper_v1": ({"store-contention"}, {"store-privatise"}),
        "mic": ({"store-contention", "store-privatise"}, {"elements-several-per-unit"}),
        "mic_v1": ({"store-privatise"}, {"elements-several-per-unit"}),
        "x86_avx512_v1": (set(), {"store-contention", "store-privatise"}),
    },
    "spmv": {
        "gpu": ({"elements-several-per-unit", "loop-data-bounds-imbalance"}, set()),
        "gpu_v1": ({"loop-data-bounds-imbalance", "loop-data-bounds-stride"},
                   {"elements-several-per-unit"}),
        "hopper": ({"loop-data-bounds-stride"}, set()),
        "x86_avx512": ({"loop-data-bounds-stride", "loop-data-bounds-imbalance"}, set()),
        "x86_avx512_v1": ({"loop-data-bounds-stride"}, set()),
    },
}


@pytest.mark.parametrize("app", APPS)
def test_mcl_report_rows_carry_the_irregular_feedback(app: str, tmp_path: Any) -> None:
    import json

    from mcl.cli import main

    out = tmp_path / "report.json"
    values = H if app == "histogram" else S
    defines = [x for k, v in values.items() for x in ("-D", f"{k}={v}")]
    # translated rows need the row they translate
    sources = {"gpu_v1", "nvidia_v1"} if app == "histogram" else {"gpu_v2"}
    versions = ",".join(sorted({"perfect", *sources, *REPORT_ROWS[app]}))
    assert main(["report", str(kernels_dir() / app), *defines, "--all", "--versions", versions,
                 "--format", "json", "-o", str(out)]) == 0
    rows = {row["name"]: set(row["codes"]) for row in json.loads(out.read_text())["rows"]}
    for name, (present, absent) in REPORT_ROWS[app].items():
        assert present <= rows[name], (name, present - rows[name])
        assert not absent & rows[name], (name, absent & rows[name])
