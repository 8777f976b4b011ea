"""Translate a loaded program: its main module goes down to the target level; the modules
it imports (libraries such as `lib.math.common`) stay as they are. Used by
`mcl translate` and by `mcl check --level`, which checks the translated program."""

from __future__ import annotations

from dataclasses import replace

from mcl.mcpl.loader import Program
from mcl.translate.levels import Library
from mcl.translate.module import TranslationResult, translate_module


def translate_program(program: Program, target: str, library: Library) -> TranslationResult:
    """`translate_module` on `program.main`; the result's `program` is `program` with the
    translated main module in its place, ready for `check_program`."""
    result = translate_module(program.main, target, library)
    name = program.qualified_name(program.main)
    modules = {**program.modules, name: result.module}
    return replace(result, program=replace(program, main=result.module, modules=modules))
