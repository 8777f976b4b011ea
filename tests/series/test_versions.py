"""Every version of the matmul series checks clean at its level, translates to the leaves
below it, and computes c = a * b — in the interpreter on small sizes (whole tiles, and
primes that divide no tile) and as OpenCL from its leaf on PoCL (two tiles, and two
tiles plus a partial one)."""

from __future__ import annotations

import pytest

from mcl import pipeline
from mcl.interp import run_function
from mcl.mcpl.check import check_program
from mcl.report.measure import measure_program, prepare_session
from mcl.report.series import change_of
from mcl.translate import translate_program
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .series_support import (
    MATMUL,
    SMALL_REMAINDER,
    TILES,
    divisible_sizes,
    hand_written,
    level_of,
    library,
    path_of,
    program,
    remainder_sizes,
    series,
)

VERSIONS = hand_written()
REFERENCE = load_reference(MATMUL / "reference.py")
LEAVES = ("fermi", "hopper", "xeon_phi", "x86_avx512")


def _leaves_below(level: str) -> list[str]:
    lib = library()
    return [leaf for leaf in LEAVES if leaf == level or level in lib.ancestors(leaf)]


def _matches(results: dict, args: dict) -> list:
    checks = verify(REFERENCE, expected_outputs(REFERENCE, args), results, args)
    return [c for c in checks if not c.ok]


def test_every_version_has_tiles_and_is_in_the_series() -> None:
    files = {p.stem for p in MATMUL.glob("*.mcpl")}
    assert files == set(VERSIONS) == set(TILES)


@pytest.mark.parametrize("name", VERSIONS)
def test_header_comment_states_the_change(name: str) -> None:
    """The report reads the first line; perfect is the start and has none."""
    first = path_of(name).read_text().splitlines()[0]
    if name == "perfect":
        assert change_of(path_of(name)) is None
        return
    assert first.startswith("// change: ")
    assert len(change_of(path_of(name)) or "") > 20


@pytest.mark.parametrize("name", VERSIONS)
def test_tile_sizes_are_named_constants(name: str) -> None:
    """A tuner varies the ALL_CAPS top-level constants; the tiles are among them."""
    constants = {c.name for c in program(name).main.constants} if name != "perfect" else set()
    assert name == "perfect" or constants
    assert all(c.isupper() for c in constants)


@pytest.mark.parametrize("name", VERSIONS)
def test_checks_clean_at_its_level(name: str) -> None:
    """No errors and no warnings; a version named LEVEL_vN is written for LEVEL."""
    assert check_program(program(name), library()) == []
    assert level_of(name) == name.rsplit("_v", 1)[0]


@pytest.mark.parametrize("name", VERSIONS)
def test_translates_to_every_leaf_below_it(name: str) -> None:
    leaves = _leaves_below(level_of(name))
    assert leaves, f"{name} reaches no leaf"
    for leaf in leaves:
        translated = translate_program(program(name), leaf, library()).program
        assert translated.main.function("matmul").hwd == leaf
        errors = [d for d in check_program(translated, library()) if d.severity.value == "error"]
        assert errors == [], (leaf, errors)


@pytest.mark.parametrize("name", VERSIONS)
@pytest.mark.parametrize("case", ["whole tiles", "primes"])
def test_interpreter_matches_numpy(name: str, case: str) -> None:
    sizes = divisible_sizes(name) if case == "whole tiles" else SMALL_REMAINDER
    _, args = make_inputs(REFERENCE, sizes, seed=3)
    results = run_function(pipeline.check(program(name), library()), "matmul", args, library())
    assert _matches(results, args) == []


@pytest.mark.parametrize("name", VERSIONS)
@pytest.mark.parametrize("case", ["two tiles", "two tiles and a partial one"])
def test_opencl_from_its_leaf_matches_numpy(name: str, case: str) -> None:
    """Generated from the leaf series.toml names for the PoCL CPU device."""
    from mcl.backends.opencl.runner import select_device

    sizes = divisible_sizes(name, 2) if case == "two tiles" else remainder_sizes(name)
    leaf = series().version(name).leaf_for("cpu")
    assert leaf in _leaves_below(level_of(name))
    _, args = make_inputs(REFERENCE, sizes, seed=5)
    measured = measure_program(program(name), "matmul", leaf, library(), args,
                               select_device(None), repeat=1, reference=REFERENCE,
                               expected=expected_outputs(REFERENCE, args),
                               work=REFERENCE.work(sizes))
    assert measured.problem is None
    assert measured.verified is True
    assert measured.rate is not None and measured.rate > 0


def test_a_version_above_the_leaf_cannot_run_on_another_branch() -> None:
    """fermi_v1 is written for fermi: it cannot be translated to hopper (a sibling)."""
    session, problem = prepare_session(program("fermi_v1"), "matmul", "hopper", library(),
                                       None)
    assert session is None and "fermi is not above hopper" in (problem or "")


def test_a_device_that_refuses_a_version_is_a_table_entry_not_a_crash(monkeypatch) -> None:
    """E.g. gpu_v3 at 4096 wants 64 kB of local memory, more than NVIDIA's 48 kB."""
    import pyopencl as cl

    from mcl.backends.opencl.runner import OpenCLSession

    def refuse(*_args, **_kwargs):
        raise cl.RuntimeError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")

    monkeypatch.setattr(OpenCLSession, "run", refuse)
    _, args = make_inputs(REFERENCE, SMALL_REMAINDER, seed=1)
    measured = measure_program(program("gpu_v3"), "matmul", "hopper", library(), args, None)
    assert measured.rate is None and "OUT_OF_RESOURCES" in (measured.problem or "")
    assert measured.text.startswith("(the device refused to run it")
