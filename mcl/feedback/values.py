"""Values the user supplies for the kernel's parameters, and evaluating symbolic figures
with them (feedback.md: "numeric when the user supplies values ... When a value is needed
and missing, say which parameter is needed — never guess silently").

`-D n=2048` (repeatable) and `--values FILE` (TOML: `n = 2048`, optionally inside a
`[values]` table) give the values; `-D` wins over the file. SymPy is imported only when a
figure is evaluated, so parsing options stays cheap.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcl.defines import Number, parse_defines
from mcl.diagnostics import MclError, error
from mcl.feedback.messages import Value


def load_values_file(path: str | Path) -> dict[str, Number]:
    """Values from a TOML file: top-level `name = number` pairs, or a `[values]` table."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MclError(error("values-io", f"cannot read {path}: {exc.strerror or exc}")) from None
    except tomllib.TOMLDecodeError as exc:
        raise MclError(error("values-bad-file", f"{path} is not valid TOML: {exc}")) from None
    table = data.get("values", data) if isinstance(data.get("values"), dict) else data
    out: dict[str, Number] = {}
    for name, value in table.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise MclError(error("values-bad-file", f"{path}: the value of '{name}' is not a "
                                 "number", hint="write NAME = NUMBER, e.g. n = 2048"))
        out[name] = value
    return out


def collect_values(defines: Iterable[str] = (), files: Iterable[str | Path] = ()
                   ) -> dict[str, Number]:
    """All values of a command line: files first, then `-D` definitions on top."""
    values: dict[str, Number] = {}
    for f in files:
        values.update(load_values_file(f))
    values.update(parse_defines(defines))
    return values


def evaluate(expr: Any, values: Mapping[str, Number]) -> Value:
    """A `Value` for a SymPy expression: its number when every symbol in it has a value,
    else None and the names still needed."""
    import sympy

    expr = sympy.sympify(expr)
    free = expr.free_symbols  # SymPy walks the whole expression for it each time
    subs = {s: values[s.name] for s in free if s.name in values}
    missing = tuple(sorted({s.name for s in free if s.name not in values}))
    if missing:
        return Value(expr, None, missing)
    if expr.has(sympy.Sum):
        # Not `doit`: SymPy adds a long sum term by term, symbolically (minutes); nor
        # `xreplace`: rebuilding the Min/Max of a summand with numbers is slow too.
        from mcl.feedback.facts.sums import sum_number

        number, estimated = sum_number(expr, subs)
        return Value(expr, None if number is None else to_number(number), (), estimated)
    # xreplace: plain symbol-for-number replacement, much faster than subs
    try:
        result = expr.xreplace({s: sympy.sympify(v) for s, v in subs.items()}) if subs else expr
    except (TypeError, ValueError, ZeroDivisionError):
        # a value outside a closed form's domain: `Max(1, n/m)` with m = 0 is not a number
        return Value(expr, None, ())
    return Value(expr, to_number(result), ())


def to_number(e: Any) -> Number | None:
    import sympy

    try:
        e = sympy.sympify(e)
        if e.free_symbols or e.has(sympy.zoo, sympy.nan):
            return None
        if e.is_Integer:
            return int(e)
        if e == sympy.oo:
            return math.inf
        value = complex(e.evalf())
    except (TypeError, ValueError, AttributeError):
        return None
    if value.imag != 0:
        return None
    real = value.real
    return int(real) if real.is_integer() and abs(real) < 2**53 else real
