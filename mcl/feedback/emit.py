"""Building messages from facts: evaluating figures with the user's values, naming the
loops around a source location, and printing expressions as the programmer wrote them
(`expr_text` and `conjunction` come from mcl.feedback.phrases, below the facts, which
name accesses in their own notes)."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from typing import Any

from mcl.diagnostics import Span
from mcl.feedback.budget import spent
from mcl.feedback.facts.kernel import KernelFacts, Loop
from mcl.feedback.messages import FeedbackSeverity, Message, Value, formula_text
from mcl.feedback.phrases import conjunction, expr_text
from mcl.feedback.values import evaluate
from mcl.mcpl import ast

__all__ = ["LONG_FORMULA", "Emitter", "conjunction", "expr_text", "fill", "is_one",
           "loop_text", "number_text", "readable", "seconds_text", "show"]

# Characters of a formula a message text still shows next to its number.
LONG_FORMULA = 60

# `{name}`, `{name=label}` or `{name:singular|plural}` in a message text (see `fill`).
_FIELD = re.compile(r"\{(\w+)(?:=([^{}|:]*))?(?::([^{}|]*)\|([^{}]*))?\}")


class Emitter:
    """Makes the messages of one analysis of one function."""

    def __init__(self, facts: KernelFacts, analysis: str, values: Mapping[str, Any]):
        self.facts = facts
        self.analysis = analysis
        self.values = values

    def message(self, code: str, severity: FeedbackSeverity, text: str, span: Span | None,
                figures: Mapping[str, Any] | None = None, loops: tuple[Loop, ...] = (),
                approximate: bool = False, hint: str | None = None) -> Message:
        """`text` may name figures as `{name}` or `{name:singular|plural}` (`fill`)."""
        vals = {name: self._value(expr) for name, expr in (figures or {}).items()}
        rendered, shown = fill(text, vals)
        # A number estimated from samples (a sum too long to add up in the analysis
        # budget) makes the message an approximation.
        approximate = approximate or any(v.estimated for v in vals.values())
        return Message(severity, self.analysis, code, rendered,
                       span or self.facts.function.span, tuple(vals.items()),
                       self.facts.function.name, tuple(loop.label for loop in loops),
                       approximate, hint, shown)

    def _value(self, expr: Any) -> Value:
        """A figure evaluated with the user's values, its loop counters under the names of
        the loop variables the user wrote (`ceiling((w - tt)/128)` iterations per
        thread, not the analyses' `_t_tt`). A figure that depends on a counter differs
        from unit to unit: it has no one number, and no `-D` can give one, so none is
        asked for."""
        value = evaluate(readable(expr), self.values)
        renamed = with_user_names(self.facts.evaluator, value.symbolic, self._counters)
        if renamed is value.symbolic or renamed == value.symbolic:
            return value
        own = set(self._counters.values())
        return Value(renamed, value.numeric, tuple(
            n for n in value.needs if not (n.startswith("t_") and n[2:] in own)),
            value.estimated)

    @functools.cached_property
    def _counters(self) -> dict[Any, str]:
        return counter_names(self.facts.evaluator)


def readable(expr: Any) -> Any:
    """The form of a figure a reader takes in at a glance: a long polynomial or ratio that
    factors into a much shorter one is shown factored (the bytes of `float[h + fh - 1,
    w + fw - 1]` as `4*(fh + h - 1)*(fw + w - 1)`, not nine terms), others as computed
    (`2*m*n*p + m*n`, the paper's form)."""
    import sympy

    expr = sympy.sympify(expr)
    if not isinstance(expr, sympy.Expr) or not _long(expr):
        return expr
    if spent() or expr.has(sympy.Sum):
        return expr  # factoring is for display only (and a sum does not factor)
    return _factored(expr)


# The figures of a kernel are formulas in its sizes, the same after every edit that
# leaves them so, and every analysis shows some of them: each is printed and factored
# once per process (the editor's worker analyses the kernel again at every edit). What
# `readable` makes of a formula depends on the formula alone; SymPy's expressions are
# immutable and compare by structure.
@functools.lru_cache(maxsize=4096)
def _long(expr: Any) -> bool:
    """Is `expr` a formula in names, long enough to be worth factoring?"""
    return bool(expr.free_symbols) and len(formula_text(expr)) >= 40


@functools.lru_cache(maxsize=4096)
def _factored(expr: Any) -> Any:
    """`readable` of a long formula without sums, with time left to factor."""
    import sympy

    try:
        if not expr.is_rational_function():
            return expr
        factored = sympy.factor(expr)
    except (TypeError, ValueError, NotImplementedError, sympy.PolynomialError):
        return expr
    return factored if 3 * len(str(factored)) <= 2 * len(str(expr)) else expr


def fill(text: str, values: Mapping[str, Value]) -> tuple[str, tuple[str, ...]]:
    """The text with its fields filled in, and the names of the values it shows.

    `{name}` prints the figure as `symbolic (= number)` (just the number when the formula
    is longer than LONG_FORMULA characters: the report lists it under the message, so the
    name is not among those shown); `{name=label}` prints it under
    the kernel's own name for it (`{iterations_bj=nrBlocksM}`: `nrBlocksM (= 2)`);
    `{name:line fetch|line fetches}` adds the noun in the number the figure asks for
    (`1 line fetch`, `ceiling(n/8) (= 256) line fetches`). A field that names no value
    stays as written."""
    shown: list[str] = []

    def field_text(match: re.Match[str]) -> str:
        name, label, singular, plural = match.groups()
        if name not in values:
            return match.group(0)
        value = values[name]
        # A formula too long to read inside a sentence: the text gives its number, and
        # the report lists the formula under the message (the value is not "shown").
        brief = label is None and value.numeric is not None and \
            len(value.text) > LONG_FORMULA
        if name not in shown and not brief:
            shown.append(name)
        if brief and value.numeric is not None:
            figure = number_text(value.numeric)
        else:
            figure = show(value) if label is None else _labelled(label.strip(), value)
        if singular is None:
            return figure
        return f"{figure} {singular if is_one(value) else plural}"

    return _FIELD.sub(field_text, text), tuple(shown)


def _labelled(label: str, v: Value) -> str:
    number = number_text(v.numeric) if v.numeric is not None else None
    return label if number is None or number == label else f"{label} (= {number})"


def is_one(v: Value) -> bool:
    """Does a figure read as one (`1 line fetch`)? A symbolic figure reads as many."""
    return v.numeric == 1 or v.text == "1"


def show(v: Value) -> str:
    """`2*m*n*p (= 17,179,869,184)`, a plain number as `4,096`, or just the expression
    when a value is missing."""
    text = v.text
    if v.numeric is None:
        return text
    number = number_text(v.numeric)
    if text == number or getattr(v.symbolic, "is_Number", False):
        return number
    return f"{text} (= {number})"


def number_text(x: int | float) -> str:
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return f"{int(x):,}"
    if math.isinf(x):
        return "unlimited"
    text = f"{x:.3g}"
    if float(text) == round(x):  # 0.99975 must not print as a plain 1
        text = f"{x:.6g}"
    return text


def loop_text(ev: Any, loop: Loop, figure: str | None = None) -> str:
    """How the paper names a loop's iterations: `nrThreadsM threads tj`, `x iterations of
    for-loop ei`. With `figure`, the name of the loop's trip count among the message's
    figures, the count is a `{figure=nrThreadsM}` field: it shows its number too."""
    if loop.kind == "foreach":
        assert isinstance(loop.node, ast.Foreach)
        count = expr_text(loop.node.count)
        # One unit of a par_group: "1 unit of vectors v", not "1 vectors v".
        units = f"unit of {loop.group}" if count == "1" else loop.group
        return f"{_count(count, figure)} {units} {loop.name}"
    node = loop.node
    assert isinstance(node, ast.For)
    init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
    cond = node.cond
    if (isinstance(init, ast.IntLit) and init.value == 0 and isinstance(node.step, ast.IncDec)
            and node.step.op == "++" and isinstance(cond, ast.Binary) and cond.op == "<"
            and isinstance(cond.left, ast.Name) and cond.left.name == loop.name):
        count = expr_text(cond.right)  # `for (int k = 0; k < p; k++)`: p iterations
    else:
        count = formula_text(with_user_names(ev, ev.shape(loop).trips))
    return f"{_count(count, figure)} iterations of for-loop {loop.name}"


def counter_names(ev: Any) -> dict[Any, str]:
    """Each loop counter of the evaluator's function (a SymPy Dummy, printed `_t_tt`) ->
    the name of its loop variable."""
    return {ev.counter(loop): loop.name for loop in ev.loops}


def with_user_names(ev: Any, expr: Any, names: Mapping[Any, str] | None = None) -> Any:
    """`expr` with its loop counters under the names of the loop variables the user wrote
    (`names`: `counter_names(ev)`, where already made)."""
    import sympy

    expr = sympy.sympify(expr)
    dummies = [s for s in expr.free_symbols if isinstance(s, sympy.Dummy)]
    if not dummies:
        return expr
    names = counter_names(ev) if names is None else names
    return expr.xreplace({d: sympy.Symbol(names[d], integer=True)
                          for d in dummies if d in names})


def _count(text: str, figure: str | None) -> str:
    if figure is None or any(c in text for c in "{}|:="):
        return text
    return f"{{{figure}={text}}}"


def seconds_text(s: float) -> str:
    """1.23 ms, 45.6 µs: three significant digits in the largest unit below `s`."""
    for factor, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if s >= factor:
            return f"{s / factor:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"
