"""`-D NAME=VALUE`: the one parser of the values every command takes on its command line.

`mcl check` and `mcl report` use them as feedback values (any number: `-D alpha=1.5`),
`mcl run`, `mcl tune` and `mcl report --run` as the sizes of the kernel's reference
(`mcl.verify.sizes_from` then requires integers). Both read the text the same way:
a name, `=`, and an integer (decimal, `0x..`, `_` separators) or a finite float.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from mcl.diagnostics import MclError, error

Number = int | float
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_HINT = "write -D NAME=NUMBER, e.g. -D n=2048"


def parse_number(text: str) -> Number | None:
    """An int where the text is one, else a finite float, else None."""
    text = text.strip().replace("_", "")
    try:
        return int(text, 0)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_define(text: str) -> tuple[str, Number]:
    """`n=2048` -> ("n", 2048). Raises MclError with a hint for anything else."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise MclError(error("values-bad-define", f"cannot read value definition '{text}'",
                             hint=_HINT))
    number = parse_number(raw)
    if number is None:
        raise MclError(error("values-bad-define", f"the value of '{name}' is not a number: "
                             f"'{raw.strip()}'", hint=_HINT))
    return name, number


def parse_defines(texts: Iterable[str]) -> dict[str, Number]:
    """Every `-D` of a command line; a later definition of a name wins."""
    return dict(parse_define(t) for t in texts)


# The range of each MCPL scalar type a value can be given for (mcpl.md §2): `int` is
# OpenCL C's 32-bit int, `byte` its uchar, `float` its 32-bit float.
_INTEGER_RANGES = {"int": (-(2**31), 2**31 - 1), "byte": (0, 255)}
_FLOAT_MAX = {"float": 3.4028234663852886e38, "double": math.inf}


def type_problem(value: Number, type_name: str) -> str | None:
    """Why `value` cannot be a value of the MCPL scalar type `type_name` ("not a whole
    number", "outside the range of int (...)"), or None when it can."""
    if type_name in _INTEGER_RANGES:
        low, high = _INTEGER_RANGES[type_name]
        if not isinstance(value, int):
            return "not a whole number"
        if not low <= value <= high:
            return f"outside the range of {type_name} ({low} to {high})"
    elif type_name in _FLOAT_MAX:
        try:
            too_big = abs(float(value)) > _FLOAT_MAX[type_name]
        except OverflowError:  # an integer beyond any double
            too_big = True
        if too_big:
            return f"outside the range of {type_name}"
    return None
