"""MCPL's operators on SymPy expressions: the symbolic domain of `mcl.mcpl.evaluate`.

C truncates an integer quotient toward zero, gives a remainder the sign of the dividend,
and `toInt` truncates too (docs/mcpl.md §6.1); SymPy's `floor` and `Mod` round toward
minus infinity. Where SymPy's assumptions prove an operand's sign (the kernel's sizes are
positive integers, loop counters non-negative), the two agree and the familiar forms stay:
`floor(n/32)`, `ceiling(m/16)`, `Mod(i, 4)`. Otherwise the value is `trunc(...)`, a SymPy
function that truncates toward zero and becomes a number once its argument is one, so
substituting values for the symbols gives what the generated code computes.

Integers and floating values are told apart by SymPy's `is_integer`, as in the paper's
symbolic feedback (section 6.3): an `int` size is an integer symbol, a `float` one real.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import sympy

from mcl.mcpl import operators as ops
from mcl.mcpl import rounding
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.evaluate import NotEvaluable
from mcl.mcpl.rounding import trunc


def integer_quotient(a: Any, d: Any) -> Any:
    """`a / d` on integers: C truncates toward zero. Where the quotient is provably
    non-negative that is floor(a / d), and the rounding-up idiom `(m + T - 1) / T` (the
    translator's `nrBlocksM`, Appendix A) is written ceiling(m / T), as a programmer reads
    it: for integers a and d > 0, floor((b + d - 1) / d) = ceiling(b / d) exactly. Whichever
    of the two forms has fewer terms is kept."""
    if a.is_Integer and d.is_Integer and d != 0:
        return sympy.Integer(ops.c_div(int(a), int(d)))
    if not (nonnegative(a) and d.is_positive) and not nonnegative(a / d):
        return trunc(a / d)
    return floor_quotient(a, d)


def nonnegative(e: Any) -> bool:
    """Is e >= 0 for all values of its symbols? SymPy's assumptions, helped for positive
    integers (the kernel's sizes): with n = n' + 1 and n' >= 0, `n + chunk - 1` is
    `n' + chunk' + 1`, which SymPy sees is positive."""
    if e.is_nonnegative:
        return True
    # The shifted expression is rebuilt, and each `Min` and `Max` in it compares its
    # arguments again: 45 ms for the tiles of a block's share of non-zeros,
    # `(min(nnz, chunk + min(nnz, pb * chunk)) - min(nnz, pb * chunk) + T - 1) / T`, which
    # the editor's worker asks again after every edit under new loop counters. The answer
    # depends on the symbols' assumptions, not their names: asked once per process of the
    # expression with its symbols renamed by position.
    return _shifted_nonnegative(renamed(e, by_position(sorted(e.free_symbols, key=str))))


@functools.lru_cache(maxsize=1024)
def _shifted_nonnegative(e: Any) -> bool:
    shifted = {s: sympy.Dummy(s.name, integer=True, nonnegative=True) + 1
               for s in e.free_symbols if s.is_integer and s.is_positive}
    return bool(shifted) and e.xreplace(shifted).is_nonnegative is True


def by_position(symbols: Sequence[Any]) -> dict[Any, Any]:
    """Each of `symbols` to the symbol of its position (`_arg0`, `_arg1`, ...) with its
    assumptions: the names under which a formula is the same whatever its own symbols are
    called (the editor analyses a kernel again at every edit, under new loop counters),
    for what is kept by formula (compiled code, answers of SymPy's assumptions)."""
    return {s: sympy.Symbol(f"_arg{k}", **s.assumptions0) for k, s in enumerate(symbols)}


def renamed(e: Any, names: Mapping[Any, Any]) -> Any:
    """`e.xreplace(names)` for `names` mapping symbols to symbols of the same assumptions
    that `e` does not hold (a loop counter to the name a message shows, the symbols of
    a compiled formula to positional ones), with every `Min` and `Max` rebuilt as it was.
    SymPy's rebuild compares their arguments pairwise again (a few milliseconds each on
    minima of ceilings: `min(pb * chunk, nnz)` of a block's share), though a renaming
    can make no two of them comparable that were not: their order is SymPy's canonical
    one either way."""
    if e in names:
        return names[e]
    if not e.args:
        return e
    args = [renamed(a, names) for a in e.args]
    if all(new is old for new, old in zip(args, e.args, strict=True)):
        return e
    if isinstance(e, (sympy.Min, sympy.Max)):
        return e.func(*args, evaluate=False)
    return e.func(*args)


def floor_quotient(a: Any, d: Any) -> Any:
    """floor(a / d), written ceiling((a - d + 1) / d) when that has fewer terms."""
    if d.is_positive:
        b = sympy.expand(a - d + 1)
        if len(sympy.Add.make_args(b)) < len(sympy.Add.make_args(sympy.expand(a))):
            return rounding.ceiling(b / d)
    return rounding.floor(a / d)


def remainder(a: Any, d: Any) -> Any:
    """C's `a % d` (and fmod on floating values): the sign of the dividend, so that
    a == trunc(a / d) * d + a % d. SymPy's Mod where both signs are known to agree with it."""
    if a.is_Integer and d.is_Integer and d != 0:
        return sympy.Integer(ops.c_mod(int(a), int(d)))
    if nonnegative(a) and d.is_positive:
        return sympy.Mod(a, d)
    return a - d * trunc(a / d)


def power(a: Any, b: Any) -> Any:
    """`a ^ b`: on integers a negative exponent gives 1 / a^|b| truncated toward zero, as
    integer division would (`mcl.mcpl.operators.int_pow`)."""
    if not (a.is_integer and b.is_integer) or b.is_nonnegative:
        return a**b
    if a.is_Integer and b.is_Integer:
        try:
            return sympy.Integer(ops.int_pow(int(a), int(b)))
        except ops.OperatorError as exc:
            raise NotEvaluable(str(exc)) from None
    return trunc(a**b)


def _bits(op: str, a: Any, b: Any) -> Any:
    if a.is_Integer and b.is_Integer:
        try:
            return sympy.Integer(ops.INT_OPS[op](int(a), int(b)))
        except ops.OperatorError as exc:
            raise NotEvaluable(str(exc)) from None
    if op in ("<<", ">>") and a.is_integer and b.is_integer and b.is_nonnegative:
        # The integer meaning of operators.shift_left/right: a * 2^b and floor(a / 2^b)
        # (an arithmetic shift floors, for negative a too). gesummv's
        # `half = WARP_SIZE >> step` was opaque and every access through it "depended on
        # data".
        return a * 2**b if op == "<<" else rounding.floor(a / 2**b)
    raise NotEvaluable(f"'{op}' of symbols")


_RELATIONS = {
    "<": sympy.Lt,
    "<=": sympy.Le,
    ">": sympy.Gt,
    ">=": sympy.Ge,
    "==": sympy.Eq,
    "!=": sympy.Ne,
}


def _quotient(a: Any, b: Any) -> Any:
    if a.is_integer and b.is_integer:
        return integer_quotient(a, b)
    return a / b


_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _quotient,
    "%": remainder,
    "^": power,
}


class SymPyValues:
    """MCPL's operators on SymPy expressions; an operation without a symbolic value raises
    `NotEvaluable` (the client makes it an opaque symbol)."""

    def integer(self, value: int) -> Any:
        return sympy.Integer(value)

    def floating(self, value: float) -> Any:
        return sympy.Float(value)

    def boolean(self, value: bool) -> Any:
        return sympy.true if value else sympy.false

    def unary(self, op: str, operand: Any) -> Any:
        number = isinstance(operand, sympy.Expr)
        if op == "-" and number:
            return -operand
        if op == "!" and not number:
            return sympy.Not(operand)
        raise NotEvaluable(f"'{op}' of {operand}")

    def binary(self, op: str, left: Any, right: Any) -> Any:
        try:
            if isinstance(left, sympy.Basic) and isinstance(right, sympy.Basic):
                return _operated(op, left, right)
            return _operation(op, left, right)
        except (TypeError, AttributeError, sympy.SympifyError) as exc:
            raise NotEvaluable(str(exc)) from None

    def logical(self, op: str, left: Any, right: Callable[[], Any]) -> Any:
        try:
            return sympy.And(left, right()) if op == "&&" else sympy.Or(left, right())
        except (TypeError, AttributeError, sympy.SympifyError) as exc:
            raise NotEvaluable(str(exc)) from None

    def call(self, name: str, args: list[Any]) -> Any:
        builtin = BUILTINS.get(name)
        if builtin is None or builtin.symbolic is None or len(args) != builtin.arity \
                or any(not isinstance(a, sympy.Expr) for a in args):
            raise NotEvaluable(f"{name}(...)")
        if name not in _BY_POSITION:
            try:
                return builtin.symbolic(*args)
            except (TypeError, ValueError) as exc:
                raise NotEvaluable(str(exc)) from None
        # `min` and `max`: SymPy compares the arguments pairwise (tens of milliseconds
        # for the share of a block, `min(nnz, pb * chunk)`, with `chunk` a quotient of
        # minima), and the editor evaluates the kernel again at every edit under new loop
        # counters: computed once per process of the arguments with their symbols
        # renamed by position, then named back.
        symbols = sorted(set().union(*(a.free_symbols for a in args)), key=str)
        positional = by_position(symbols)
        try:
            found = _applied(name, tuple(renamed(a, positional) for a in args))
        except (TypeError, ValueError) as exc:
            raise NotEvaluable(str(exc)) from None
        return renamed(found, {p: s for s, p in positional.items()})


_BY_POSITION = frozenset({"min", "max"})

T = TypeVar("T")
_PER_PROCESS: list[Any] = []  # the caches of `kept_per_process`


def kept_per_process(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """`functools.lru_cache(maxsize=maxsize)` for a pure function of SymPy expressions
    that the editor's worker asks again at every edit with the same operands (its loop
    counters and stand-ins are those of the last job: mcl.feedback.facts.stable_dummies):
    SymPy's expressions are immutable and compare by structure, so operands equal to
    ones seen before give the same result (from SymPy 1.13, which pyproject.toml asks
    for, a Float never equals an Integer, so int and float operands are kept apart).
    The cache is emptied with SymPy's own (`forget_per_process`,
    mcl.lsp.worker.bound_caches): what it holds keeps SymPy's expressions alive."""
    def keep(function: Callable[..., T]) -> Callable[..., T]:
        cached = functools.lru_cache(maxsize=maxsize)(function)
        _PER_PROCESS.append(cached)
        return cached
    return keep


def forget_with_per_process(store: Any) -> None:
    """Empty `store` (anything with a `cache_clear()`, holding SymPy's expressions) with
    the caches of `kept_per_process` (mcl.feedback.facts.nest_counts)."""
    _PER_PROCESS.append(store)


def forget_per_process() -> None:
    """Empty every cache of `kept_per_process` and of `forget_with_per_process`."""
    for cached in _PER_PROCESS:
        cached.cache_clear()


def _operation(op: str, left: Any, right: Any) -> Any:
    """`SymPyValues.binary` without its translation of SymPy's errors."""
    if op in _ARITHMETIC:
        return _ARITHMETIC[op](left, right)
    if op in _RELATIONS:
        return _RELATIONS[op](left, right)
    if op in ops.INT_OPS:
        return _bits(op, left, right)
    raise NotEvaluable(f"operator '{op}'")


# SymPy does not keep comparisons (`i < nrows` with i a sum of minima: milliseconds each,
# deciding whether the relation holds) nor the quotients and remainders it rounds: the
# operations of the code an edit did not touch are kept by operator and operands.
# (Errors are not kept.)
_operated = kept_per_process(4096)(_operation)


@functools.lru_cache(maxsize=1024)
def _applied(name: str, args: tuple[Any, ...]) -> Any:
    builtin = BUILTINS[name]
    assert builtin.symbolic is not None
    return builtin.symbolic(*args)
