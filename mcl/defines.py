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
