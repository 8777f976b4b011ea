"""SymPy's `floor` and `ceiling`, without SymPy's work where its answer is known, and
C's truncation toward zero, `trunc` (the symbolic domain's `/`, `%` and `toInt`,
mcl.mcpl.symbolic_values; here, below both that domain and the built-ins' table, which
gives `toInt` its SymPy value).

Every figure of a kernel divides sizes into blocks and lines, so the analyses make many
`ceiling(m/1024)`: a size symbol (a positive or non-negative integer) times a fraction.
SymPy answers each by asking its assumptions whether the quotient lies in (0, 1] or in
(1, 2], which they cannot tell for a size without an upper bound, and keeps
`ceiling(m/1024)`: 2 to 4 ms for each new one in a fresh process, about 20 ms of
`mcl check --feedback` on a small kernel (docs/feedback.md, "Start-up"). For such an
argument the result is known without asking (the steps of SymPy's own evaluation, which
tests/mcpl/test_rounding.py checks against it): the function of the fraction, unevaluated;
for a size symbol alone, the symbol. Any other argument goes to SymPy as before.
"""

from __future__ import annotations

from typing import Any

import sympy

# The assumptions of mcl's size symbols (mcl.feedback.facts.symbolic): integer and positive,
# or integer and non-negative (a loop's iteration count). A symbol with other assumptions
# (parity, say) might let SymPy decide more, so it takes SymPy's way.
_SIZE_ASSUMPTIONS = tuple(sympy.Symbol("s", integer=True, **{sign: True}).assumptions0
                          for sign in ("positive", "nonnegative"))


def _size(x: Any) -> bool:
    return isinstance(x, sympy.Symbol) and x.assumptions0 in _SIZE_ASSUMPTIONS


def _known(kind: type[sympy.Function], x: Any) -> Any | None:
    """`kind(x)` where the answer is known without SymPy's assumptions, else None."""
    if _size(x):
        return x  # an integer is its own floor and ceiling
    if isinstance(x, sympy.Mul) and len(x.args) == 2:
        coefficient, symbol = x.args
        if (coefficient.is_Rational and not coefficient.is_Integer and coefficient > 0
                and _size(symbol)):
            # Neither (0, 1] nor (1, 2] (nor [0, 1) or [1, 2) for floor) can be proven for
            # an unbounded size, the fraction is no integer for every size, and it has no
            # integer or numeric term to take out: SymPy leaves it as it is.
            return kind(x, evaluate=False)
    return None


def ceiling(x: Any) -> Any:
    """sympy.ceiling(x)."""
    x = sympy.sympify(x)
    known = _known(sympy.ceiling, x)
    return known if known is not None else sympy.ceiling(x)


def floor(x: Any) -> Any:
    """sympy.floor(x)."""
    x = sympy.sympify(x)
    known = _known(sympy.floor, x)
    return known if known is not None else sympy.floor(x)


class trunc(sympy.Function):  # noqa: N801 - the name figures print, as C's trunc
    """x truncated toward zero: C's integer conversion of a floating value, and with it
    C's integer quotient trunc(a/b)."""

    @classmethod
    def eval(cls, x: Any) -> Any:
        if x.is_Number and x.is_finite:
            return sympy.Integer(int(x))  # int() truncates toward zero
        if x.is_integer:
            return x
        if x.is_nonnegative:
            return floor(x)
        if x.is_nonpositive:
            return ceiling(x)
        return None  # the sign is not known: stays trunc(x)

    def _eval_is_integer(self) -> bool:
        # Always: the argument's only non-finite values come from a division by zero,
        # which MCPL defines no value for.
        return True
