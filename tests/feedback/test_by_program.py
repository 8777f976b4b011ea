"""Answers of code generation kept by its inputs (mcl.backends.by_program): a check of a
program seen before reads them back without generating code, and any change to what the
generated code is made of (the program, its spans, the level, the function) is a new
key, so a kept answer is never given for another program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import KERNELS

import mcl
from mcl import pipeline
from mcl.backends import by_program, wide_copies
from mcl.hdl.library import default_library
from mcl.mcpl.loader import load_program

GESUMMV = KERNELS / "gesummv" / "hopper_v5.mcpl"


def _facts(path: Path, function: int = -1) -> SimpleNamespace:
    """What the key and the wide copies read of a kernel's facts."""
    library = default_library()
    checked = pipeline.check(load_program(path, (), library), library)
    chosen = checked.program.main.functions[function]
    return SimpleNamespace(checked=checked, hwd=library.get(chosen.hwd), function=chosen)


def test_the_key_is_the_same_in_every_process() -> None:
    code = ("import sys; sys.path.insert(0, 'tests/feedback'); "
            "from test_by_program import _facts, GESUMMV; "
            "from mcl.backends.by_program import program_key; "
            "print(program_key(_facts(GESUMMV), 'sm_90', 'x'))")
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed}
                           ).stdout.strip() for seed in ("1", "2")}
    assert len(keys) == 1 and next(iter(keys)).startswith("p")


def test_a_change_of_what_code_is_made_of_is_a_new_key(tmp_path: Path) -> None:
    facts = _facts(GESUMMV)
    key = by_program.program_key(facts, "sm_90", "x")
    assert by_program.program_key(_facts(GESUMMV), "sm_90", "x") == key
    # the same program a line lower: the same code, other `#line`s
    moved = tmp_path / GESUMMV.name
    moved.write_text("\n" + GESUMMV.read_text())
    assert by_program.program_key(_facts(moved), "sm_90", "x") != key
    assert by_program.program_key(facts, "sm_80", "x") != key
    assert by_program.program_key(facts, "sm_90", "y") != key
    other = SimpleNamespace(checked=facts.checked, hwd=facts.hwd,
                            function=SimpleNamespace(name=facts.function.name + "2"))
    assert by_program.program_key(other, "sm_90", "x") != key


def test_wide_copies_read_back_are_those_generated(monkeypatch: pytest.MonkeyPatch) -> None:
    facts = _facts(GESUMMV)
    wide_copies._memory.clear()
    generated = wide_copies.wide_copies(facts)
    assert generated  # gesummv hopper_v5 copies with 128-bit accesses

    def no_generation(*args: object, **kwargs: object) -> None:
        raise AssertionError("generated again")
    monkeypatch.setattr("mcl.backends.generate_module", no_generation)
    wide_copies._memory.clear()
    assert wide_copies.wide_copies(_facts(GESUMMV)) == generated


def test_the_code_stamped_is_mcls_own() -> None:
    """mcl's modules, not the checkout around them (tests, benchmarks: thousands of files
    stat'ed at every check)."""
    assert by_program._MCL == Path(mcl.__file__).resolve().parent
