"""Every version of the gesummv and Black-Scholes series (issue 13) checks clean at its
level, translates to the leaves below it, and computes what its numpy reference does —
in the interpreter on whole tiles and on a prime size, and as OpenCL from the leaf that
series.toml names for the CPU, on PoCL, on two tiles and on two tiles and a partial one."""

from __future__ import annotations

import pytest

from mcl import pipeline
from mcl.interp import run_function
from mcl.mcpl.check import check_program
from mcl.report.measure import measure_program
from mcl.report.series import change_of
from mcl.resources import kernels_dir
from mcl.translate import translate_program
from mcl.verify import expected_outputs, load_reference, make_inputs, verify

from .app_support import APPS, SMALL_PRIME, TILES, hand_written, program, remainder_size, series
from .series_support import library

CASES = [(app, name) for app in APPS for name in hand_written(app)]
LEAVES = ("fermi", "hopper", "xeon_phi", "x86_avx512")


def _level(app: str, name: str) -> str:
    return program(app, name).main.function(app).hwd


def _leaves_below(level: str) -> list[str]:
    lib = library()
    return [leaf for leaf in LEAVES if leaf == level or level in lib.ancestors(leaf)]


def _failures(app: str, results: dict, args: dict) -> list:
    reference = load_reference(kernels_dir() / app / "reference.py")
    return [c for c in verify(reference, expected_outputs(reference, args), results, args)
            if not c.ok]


@pytest.mark.parametrize("app", APPS)
def test_every_version_has_a_tile_and_is_in_the_series(app: str) -> None:
    files = {p.stem for p in (kernels_dir() / app).glob("*.mcpl")}
    assert files == set(hand_written(app)) == set(TILES[app])


@pytest.mark.parametrize(("app", "name"), CASES)
def test_header_states_the_change_and_checks_clean_at_its_level(app: str, name: str) -> None:
    path = series(app).version(name).path
    if name == "perfect":
        assert change_of(path) is None
    else:
        assert len(change_of(path) or "") > 40 and "acts on" in (change_of(path) or "")
        assert _level(app, name) == name.rsplit("_v", 1)[0]
    assert check_program(program(app, name), library()) == []


@pytest.mark.parametrize(("app", "name"), CASES)
def test_translates_to_every_leaf_below_it(app: str, name: str) -> None:
    leaves = _leaves_below(_level(app, name))
    assert leaves, f"{name} reaches no leaf"
    for leaf in leaves:
        translated = translate_program(program(app, name), leaf, library()).program
        assert translated.main.function(app).hwd == leaf
        errors = [d for d in check_program(translated, library()) if d.severity.value == "error"]
        assert errors == [], (leaf, errors)


@pytest.mark.parametrize(("app", "name"), CASES)
@pytest.mark.parametrize("case", ["whole tiles", "prime"])
def test_interpreter_matches_numpy(app: str, name: str, case: str) -> None:
    n = TILES[app][name] if case == "whole tiles" else SMALL_PRIME
    reference = load_reference(kernels_dir() / app / "reference.py")
    _, args = make_inputs(reference, {"n": n}, seed=3)
    results = run_function(pipeline.check(program(app, name), library()), app, args, library())
    assert _failures(app, results, args) == []


@pytest.mark.parametrize(("app", "name"), CASES)
@pytest.mark.parametrize("case", ["two tiles", "two tiles and a partial one"])
def test_opencl_from_its_leaf_matches_numpy(app: str, name: str, case: str) -> None:
    from mcl.backends.opencl.runner import select_device

    n = 2 * TILES[app][name] if case == "two tiles" else remainder_size(app, name)
    leaf = series(app).version(name).leaf_for("cpu")
    assert leaf in _leaves_below(_level(app, name))
    reference = load_reference(kernels_dir() / app / "reference.py")
    _, args = make_inputs(reference, {"n": n}, seed=5)
    measured = measure_program(program(app, name), app, leaf, library(), args,
                               select_device(None), repeat=1, reference=reference,
                               expected=expected_outputs(reference, args),
                               work=reference.work({"n": n}))
    assert measured.problem is None
    assert measured.verified is True
