"""The transpose series (kernels/transpose, a Table IV row against the copy bandwidth):
every hand-written version checks clean at its level, translates to the GPU leaves below
it, computes b = a^T in the interpreter and as OpenCL on PoCL at sizes that divide no
tile, and the feedback of the version before each step says what the step acts on."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from mcl import pipeline
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

FOLDER = kernels_dir() / "transpose"
# The paper's size (benchmarks/paper_sizes.py), at which the feedback is read.
PAPER = {"n": 8192, "m": 8192}
# Sizes that divide no 32 x 32 tile: a partial tile at both edges; a single row.
UNEVEN = [{"n": 1000, "m": 777}, {"n": 1, "m": 45}]


@cache
def series() -> Series:
    return load_series(FOLDER, library())


@cache
def program(name: str) -> Any:
    spec = series().version(name)
    assert spec is not None and spec.path is not None, name
    return load_program(spec.path, (), library())


HAND_WRITTEN = [v.name for v in series().versions if not v.translated]


@cache
def messages(name: str, level: str | None = None) -> list[Any]:
    prog = program(name)
    if level is not None:
        prog = translate_program(prog, level, library()).program
    function = prog.main.function("transpose")
    checked = pipeline.check(prog, library())
    return list(analyse(function, checked, library().get(function.hwd), PAPER))


def texts(found: list[Any], code: str) -> list[str]:
    return [m.text for m in found if m.code == code]


def test_every_file_is_in_the_series_and_runs_on_the_gpu() -> None:
    assert {p.stem for p in FOLDER.glob("*.mcpl")} == set(HAND_WRITTEN)
    assert HAND_WRITTEN == ["perfect", "gpu_v1", "hopper_v1"]
    for name in ("gpu_v1", "hopper_v1"):
        assert series().version(name).leaf_for("gpu") == "hopper"  # type: ignore[union-attr]


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_checks_clean_translates_and_states_its_change(name: str) -> None:
    prog = program(name)
    assert check_program(prog, library()) == []
    level = prog.main.function("transpose").hwd
    assert level == name.rsplit("_v", 1)[0]
    if name != "perfect":
        assert "acts on" in (change_of(series().version(name).path) or "")  # type: ignore[union-attr, arg-type]
    for leaf in ("fermi", "hopper"):
        if leaf == level or level in library().ancestors(leaf):
            translated = translate_program(prog, leaf, library()).program
            assert [d for d in check_program(translated, library())
                    if d.severity.value == "error"] == []


@pytest.mark.parametrize("name", HAND_WRITTEN)
def test_interpreter_matches_numpy(name: str) -> None:
    reference = load_reference(FOLDER / "reference.py")
    _, args = make_inputs(reference, {"n": 37, "m": 45}, seed=3)
    results = run_function(pipeline.check(program(name), library()), "transpose", args, library())
    assert [c for c in verify(reference, expected_outputs(reference, args), results, args)
            if not c.ok] == []


@pytest.mark.parametrize("name", ["gpu_v1", "hopper_v1"])
@pytest.mark.parametrize("sizes", UNEVEN, ids=["1000x777", "1x45"])
def test_opencl_at_hopper_on_pocl_matches_numpy(name: str, sizes: dict[str, int]) -> None:
    from mcl.backends.opencl.runner import select_device

    reference = load_reference(FOLDER / "reference.py")
    _, args = make_inputs(reference, sizes, seed=5)
    measured = measure_program(program(name), "transpose", "hopper", library(), args,
                               select_device(None), repeat=1, reference=reference,
                               expected=expected_outputs(reference, args),
                               work=reference.work(sizes))
    assert measured.problem is None and measured.verified is True


def test_perfect_at_hopper_reports_the_column_store_and_gpu_does_not() -> None:
    """gpu (v1) acts on the hopper feedback on perfect; the generic gpu has no coalescing
    model, so its own feedback on perfect does not show the store (a finding, quoted in
    gpu_v1.mcpl's change line)."""
    (store,) = texts(messages("perfect", "hopper"), "uncoalesced")
    assert store.startswith("store of b[j, i] is not coalesced: the 32 threads of a warp "
                            "touch 32 sectors of 32 B where 4 would do")
    assert texts(messages("perfect", "gpu"), "uncoalesced") == []
    change = change_of(FOLDER / "gpu_v1.mcpl") or ""
    assert "store of b[j, i] is not coalesced" in change


def test_gpu_v1_at_hopper_is_coalesced_and_its_column_read_a_32_way_conflict() -> None:
    found = messages("gpu_v1", "hopper")
    assert texts(found, "uncoalesced") == []
    (conflict,) = [m for m in found if m.code == "bank-conflict"]
    assert "tile[jj][ii]" in conflict.text
    assert {k: v.numeric for k, v in conflict.values}["conflict_degree"] == 32
    assert "load of tile[jj][ii] in shared memory: 32-way bank conflict" in (
        change_of(FOLDER / "hopper_v1.mcpl") or "")


def test_hopper_v1_pads_the_conflict_away() -> None:
    found = messages("hopper_v1")
    assert [m for m in found if m.code in ("uncoalesced", "bank-conflict")] == []
    assert any(m.code == "memory-access-optimal" for m in found)
