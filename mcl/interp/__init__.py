"""The reference interpreter: runs an MCPL function at any level on numpy arrays.

It is the oracle of the project: a kernel and every translation of it must give
the same results here, and those must equal the numpy reference of `kernels/<app>/`.

    checked = mcl.pipeline.check(program, library)   # or checked_at, translate, lower
    result = run_function(checked, "matmul", {"n": 4, ..., "c": c, "a": a, "b": b}, library)

It runs a `CheckedProgram` of the pipeline: which
declaration each name stands for, and the types of names, fields, elements and calls, are
the checker's side tables' (`mcl.mcpl.sidetables`), so the interpreter keeps no scopes of
its own.

Arrays are modified in place; the result maps every parameter to its final value (and
`"return"` to the return value of a non-void function). Semantics are documented in
docs/interpreter.md: C integer arithmetic, float32 rounding for `float`, foreach units
advancing together from barrier to barrier, poisoned uninitialised memory. Every run-time
problem (index out of bounds, division by zero, barrier divergence, a missing argument)
is an `MclError` with a source position, never a Python traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from mcl.diagnostics import MclError, did_you_mean, error
from mcl.interp.engine import Engine
from mcl.interp.records import is_structured, to_records, write_back
from mcl.interp.values import DTYPES, StructValue, convert, scalar_name
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram

__all__ = ["run_function", "StructValue"]


def run_function(
    checked: CheckedProgram,
    name: str,
    args: Mapping[str, object],
    library: HwdLibrary | None = None,
    *,
    values: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Run function `name` of a checked program (`mcl.pipeline.check`) with `args`
    (parameter name -> value: Python/numpy scalars, numpy arrays of the declared shapes and
    dtypes). A program with errors runs as far as the checker resolved it: a name it bound
    to nothing, or an expression it could not type, is an error when compiled.

    `values` supplies scalars (usually sizes such as n) for parameters missing from `args`.
    `library` (an `HwdLibrary`) gives hardware-description constants and tells which units
    a barrier synchronises; without it, barriers synchronise the innermost foreach units.
    """
    engine = Engine(checked, library)
    function = _find_function(engine, name)
    engine.entry = function
    given = {**(values or {}), **args}
    structured = _records_of(engine, function, given)
    bound = [_bind(function, p, given) for p in function.params]
    # IEEE float semantics: x / 0.0 is inf, as on a device; compiling folds constants, so
    # it runs under the same rule (no numpy warnings on the user's terminal).
    with np.errstate(all="ignore"):
        compiled = engine.compiled(function)
        try:
            ret, frame = compiled.invoke(bound, None)
        except (OverflowError, ValueError) as exc:
            raise MclError(
                error(
                    "interp-arithmetic",
                    f"arithmetic error while running '{name}': {exc}",
                    function.span,
                    hint="an int result outside 32 bits, or a NaN converted to int",
                )
            ) from None
        except RecursionError:
            raise MclError(
                error("interp-recursion", f"recursion too deep in '{name}'", function.span)
            ) from None
    result = {
        p.name: frame[slot] for p, slot in zip(function.params, compiled.param_slots, strict=False)
    }
    for name, target in structured.items():
        write_back(result[name], target)
        result[name] = target
    if scalar_name(function.ret) != "void":
        result["return"] = ret
    return result


def _records_of(engine: Engine, function: ast.Function, given: dict[str, object]
                ) -> dict[str, np.ndarray]:
    """Replace structured numpy arguments of user-type parameters in `given` by records
    (records.py); the arrays to write the results back into, by parameter name."""
    structured: dict[str, np.ndarray] = {}
    for p in function.params:
        value = given.get(p.name)
        t = p.type.element if isinstance(p.type, ast.ArrayType) else p.type
        if not isinstance(t, ast.NamedType) or not is_structured(value):
            continue
        try:
            # is_structured(value) says it is a numpy array or record, which mypy cannot narrow
            given[p.name] = to_records(value, t, engine.type_def)  # type: ignore[arg-type]
        except ValueError as exc:
            raise MclError(error("interp-argument", f"argument '{p.name}' of "
                                 f"'{function.name}': {exc}", p.span)) from None
        if isinstance(value, np.ndarray):
            structured[p.name] = value
    return structured


def _find_function(engine: Engine, name: str) -> ast.Function:
    """The function the caller names: one of the main module, else of a module it
    imports."""
    main = engine.program.main
    modules = [main, *(m for m in engine.program.modules.values() if m is not main)]
    function = next((f for m in modules if (f := m.function(name)) is not None), None)
    if function is None:
        names = [f.name for m in modules for f in m.functions]
        raise MclError(
            error(
                "interp-unknown-function",
                f"no function '{name}' to run",
                None,
                hint=did_you_mean(name, names) or f"functions: {', '.join(names) or 'none'}",
            )
        )
    return function


def _bind(function: ast.Function, param: ast.Param, given: Mapping[str, object]) -> object:
    """Check one argument against its parameter and convert scalars to MCPL values."""
    where = f"argument '{param.name}' of '{function.name}'"
    if param.name not in given:
        raise MclError(
            error(
                "interp-missing-argument",
                f"missing {where}",
                param.span,
                hint="pass it in args (or a size in values)",
            )
        )
    value = given[param.name]
    kind = scalar_name(param.type)
    if kind is not None:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if kind in ("int", "byte") and not _is_integral(value):
            raise MclError(
                error("interp-argument", f"{where} must be an integer, got {value!r}", param.span)
            )
        if not isinstance(value, (int, float, bool, np.number, np.bool_)):
            raise MclError(
                error("interp-argument", f"{where} must be a number, got {value!r}", param.span)
            )
        try:
            return convert(value, kind)
        except (OverflowError, ValueError) as exc:
            raise MclError(error("interp-argument", f"{where}: {exc}", param.span)) from None
    if isinstance(param.type, ast.NamedType):
        if not isinstance(value, StructValue):
            raise MclError(
                error("interp-argument", f"{where} must be a {param.type.name} value", param.span)
            )
        return value
    assert isinstance(param.type, ast.ArrayType)
    if not isinstance(value, np.ndarray):
        raise MclError(
            error(
                "interp-argument",
                f"{where} must be a numpy array, got {type(value).__name__}",
                param.span,
            )
        )
    element = param.type.element
    expected = (
        np.dtype(object) if isinstance(element, ast.NamedType) else np.dtype(DTYPES[element.name])
    )
    if value.dtype != expected:
        raise MclError(
            error(
                "interp-argument",
                f"{where} has dtype {value.dtype}, but its element type needs {expected}",
                param.span,
                hint=f"convert it with .astype(numpy.{expected})",
            )
        )
    if not value.flags.c_contiguous:
        raise MclError(
            error(
                "interp-argument",
                f"{where} is not a C-contiguous array",
                param.span,
                hint="pass numpy.ascontiguousarray(...) so the kernel writes into your array",
            )
        )
    return value


def _is_integral(value: object) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, (int, np.integer)):
        return True
    return isinstance(value, (float, np.floating)) and float(value).is_integer()
