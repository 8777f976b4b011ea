"""MCPL expressions as SymPy expressions, in the kernel's own names (docs/architecture.md: "one
symbolic vocabulary").

- An `int` parameter `n` is the SymPy symbol `n` (a positive integer: sizes are positive),
  a `float` parameter a real symbol.
- A local written only by its initialiser is replaced by its value, so
  `int j = bj * nrThreadsM + tj;` makes `b[k, j]` an expression in the loops' counters, and
  `int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;` is 1024.
- Every loop gets a counter `t >= 0` and its variable is `start + step * t`; the loop runs
  `trips` times. So an index is affine exactly when it is affine in the counters, and
  "taking into account the offsets and steps of the loops" (paper 6.3) is built in.
- Operators mean what they mean in C (`mcl.mcpl.symbolic_values`): integer division is
  `floor(a / b)` where the quotient is provably non-negative (sizes are positive), else
  `trunc(a / b)`, and the rounding-up idiom `(m + T - 1) / T` is `ceiling(m / T)`; a
  value that cannot be known statically (an array element, a variable written several
  times) is an opaque symbol, and the expression is not affine.

The SymbolicEvaluator also answers which loops an expression depends on (paper 6.3: "finds all
dependencies of variable v including the dependencies of the indexing variables").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import sympy

from mcl.feedback.budget import spent
from mcl.feedback.facts.declarations import DeclaredName, Loop, Scope
from mcl.feedback.facts.kept_results import KeptResults
from mcl.feedback.facts.loop_forms import loop_condition, loop_step
from mcl.feedback.facts.stable_dummies import dummy
from mcl.identity import Ref
from mcl.mcpl import ast, rounding
from mcl.mcpl.evaluate import Evaluator as EvaluatorBase
from mcl.mcpl.evaluate import NotEvaluable
from mcl.mcpl.symbolic_values import (
    SymPyValues,
    floor_quotient,
    forget_with_per_process,
    trunc,
)
from mcl.mcpl.visitor import unknown_node

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription

INTEGRAL = frozenset({"int", "byte"})


def param_symbol(name: str, type_: ast.Type | None) -> sympy.Symbol:
    """The symbol of a kernel parameter or constant: what users name with `-D name=…`."""
    if isinstance(type_, ast.Prim) and type_.name in INTEGRAL:
        return sympy.Symbol(name, integer=True, positive=True)
    if isinstance(type_, ast.Prim) and type_.name in ("float", "double"):
        return sympy.Symbol(name, real=True)
    return sympy.Symbol(name)


def iterations_symbol(loop: Loop) -> sympy.Symbol:
    """The unknown trip count of a loop whose bounds depend on data (`for (k = rowptr[i];
    ...)`): a named symbol, so the report can say which value it needs."""
    return sympy.Symbol(f"iters_{loop.name}", integer=True, nonnegative=True)


@dataclass
class NormalisedLoop:
    """A loop normalised to a counter t = 0 .. trips-1 with variable = value(t)."""

    counter: sympy.Symbol
    value: sympy.Expr  # the loop variable as a function of the counter
    trips: sympy.Expr
    exact: bool  # False when the trip count is unknown (data-dependent bounds, ...)
    affine: bool  # value is start + step * t
    reason: str | None = None
    # An additive for-loop `v = start; v OP bound; v += step` with all three known:
    # (start, op, bound, step), for closed forms over several loops (grid-stride loops).
    bounds: tuple[Any, str, Any, Any] | None = None


class SymbolicEvaluator:
    def __init__(self, hwd: HardwareDescription, bindings: list[DeclaredName], loops: list[Loop]):
        self.hwd = hwd
        self.bindings = bindings
        self.loops = loops
        self._values: dict[DeclaredName, Any] = {}
        self._opaque: dict[DeclaredName, sympy.Symbol] = {}
        self._shapes: dict[Loop, NormalisedLoop] = {}
        self._counters: set[sympy.Symbol] = set()  # the counters of `_shapes`' loops
        self._all_counters: frozenset[sympy.Symbol] | None = None  # of every loop
        self._shaping: dict[Loop, sympy.Symbol] = {}
        self._content: dict[DeclaredName, frozenset[Loop]] | None = None
        self._memo: dict[Any, Any] = {}
        self._syms: dict[tuple[Ref[ast.Expr], Scope], Any] = {}
        self._data: set[sympy.Symbol] = set()  # the stand-ins for data (`data`)
        self._undefined: set[sympy.Symbol] = set()  # those for a division by zero
        self._initialising = 0  # initialisers being evaluated (`binding_value`)
        self._stepping: set[Loop] = set()  # for-loops whose step is being followed
        # `binding_deps` of each binding, for the contents' dependencies as they stand
        self._binding_deps: dict[DeclaredName, frozenset[Loop]] = {}
        self._walker = _SymbolicWalk(self)

    def memo(self, key: Any, compute: Any) -> Any:
        """`compute()` once per key: results derived from the program that several
        statements ask for (the conditions of an `if` around all of them)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # ------------------------------------------------------------------ values
    def sym(self, e: ast.Expr | None, scope: Scope) -> Any:
        """The SymPy value of `e` in `scope`; opaque symbols for what cannot be known.

        Kept by expression (the node itself: equal nodes stand at other places) and
        scope: the analyses ask for the same guards and indices (the operation counts,
        the kernel interface, the guards' values). A value is kept
        only where asking again would give the same: not while a loop is being normalised
        or an initialiser evaluated (a name then stands for a marker or a stand-in for
        the time being), and not when it holds a fresh stand-in for data (`data`), which
        every evaluation makes anew."""
        if e is None:
            return None
        key = (Ref(e), scope)
        found = self._syms.get(key)
        if found is not None:
            return found
        value = self._walker.value(e, scope)
        if not self._shaping and not self._initialising \
                and not getattr(value, "free_symbols", set()) & self._data:
            self._syms[key] = value
        return value

    def data(self) -> sympy.Symbol:
        """A stand-in for a value read from data (an array element, a field), a new one at
        every evaluation, or one SymPy cannot express."""
        symbol = dummy("data")
        self._data.add(symbol)
        return symbol

    def undefined(self) -> sympy.Symbol:
        """A stand-in, as for data, for a value that divides by zero (`1.0 / 0`)."""
        symbol = dummy("undefined")
        self._data.add(symbol)
        self._undefined.add(symbol)
        return symbol

    def _divides_by_zero(self, *values: Any) -> bool:
        """Is it a division by zero, not data, that makes `values` unknown statically?"""
        return any(s in self._undefined for v in values for s in getattr(v, "free_symbols", ()))

    def hwd_constant(self, path: tuple[str, ...]) -> Any:
        # The kernel's level or one above it, from the library the kernel was loaded
        # with (--hwd-path and $MCL_HWD_PATH alike), never a second, default library.
        hwd = self.hwd.description(path[0]) if path else None
        value = hwd.value(path) if hwd is not None else None
        number = getattr(value, "value", value)
        if isinstance(number, bool) or not isinstance(number, (int, float)):
            return sympy.Symbol(".".join(path))
        if number == math.inf:
            return sympy.oo
        return sympy.Integer(int(number)) if float(number).is_integer() else sympy.Float(number)

    def binding_value(self, b: DeclaredName) -> Any:
        key = b
        if key in self._values:
            return self._values[key]
        if b.kind == "loop" and b.loop is not None:
            if b.loop in self._shaping:  # asked while normalising this very loop
                return self._shaping[b.loop]
            return self.shape(b.loop).value
        if b.kind == "param":
            value = param_symbol(b.name, b.type)
        elif b.single_assignment and b.scope is not None:
            self._values[key] = self.opaque(b)  # guards against a self-referencing init
            self._initialising += 1
            try:
                value = self.sym(b.init, b.scope)
            finally:
                self._initialising -= 1
            if b.kind == "constant" and not isinstance(b.type, ast.ArrayType):
                # A module constant is a name users may know: keep ints symbolic only when
                # the initialiser is not a plain number.
                value = value if value is not None else param_symbol(b.name, b.type)
        else:
            value = self.opaque(b)
        self._values[key] = value
        return value

    def opaque(self, b: DeclaredName) -> sympy.Symbol:
        """A stand-in for a value not known statically (written several times, or data)."""
        if b not in self._opaque:
            self._opaque[b] = dummy(b.name)
        return self._opaque[b]

    def is_opaque(self, s: sympy.Basic) -> bool:
        return isinstance(s, sympy.Dummy) and s not in self._counters

    def is_stand_in(self, s: sympy.Basic) -> bool:
        """Is `s` a stand-in made anew at every evaluation (`data`, `undefined`)?"""
        return s in self._data

    # ------------------------------------------------------------------ loops
    def shape(self, loop: Loop) -> NormalisedLoop:
        key = loop
        if key not in self._shapes:
            marker = dummy(loop.name)
            self._shaping[key] = marker
            try:
                shape = self._foreach(loop) if loop.kind == "foreach" else self._for(loop, marker)
            finally:
                del self._shaping[key]
            self._shapes[key] = shape
            self._counters.add(shape.counter)
        return self._shapes[key]

    def counter(self, loop: Loop) -> sympy.Symbol:
        return self.shape(loop).counter

    def all_counters(self) -> frozenset[sympy.Symbol]:
        """The counters of every loop of the kernel. Kept once made: a loop's shape never
        changes, and the counts ask for this set for every loop around every statement
        (made anew each time, it made deep nests cubic)."""
        if self._all_counters is None:
            self._all_counters = frozenset(self.counter(loop) for loop in self.loops)
        return self._all_counters

    def trips(self, loop: Loop) -> Any:
        return self.shape(loop).trips

    def _foreach(self, loop: Loop) -> NormalisedLoop:
        t = dummy(f"t_{loop.name}", integer=True, nonnegative=True)
        assert isinstance(loop.node, ast.Foreach)
        count = self.sym(loop.node.count, loop.scope)
        if count is None or self._has_opaque(count):
            why = "divides by zero" if self._divides_by_zero(count) else "depends on data"
            return NormalisedLoop(t, t, iterations_symbol(loop), False, True,
                             f"the number of units of foreach {loop.name} {why}")
        return NormalisedLoop(t, t, count, True, True)

    def _for(self, loop: Loop, marker: sympy.Symbol) -> NormalisedLoop:
        node = loop.node
        assert isinstance(node, ast.For)
        t = dummy(f"t_{loop.name}", integer=True, nonnegative=True)
        init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
        start = self.sym(init, loop.scope)
        cond = loop_condition(node.cond, loop.name)
        step = loop_step(node.step, loop.name)
        unknown = NormalisedLoop(t, self.opaque(loop.var), iterations_symbol(loop), False, False)
        if start is None or cond is None or step is None or loop.var.writes:
            unknown.reason = (f"the loop variable {loop.name} is also written in the body"
                              if loop.var.writes else
                              f"the bounds of for-loop {loop.name} are not of a form "
                              "`v = a; v < b; v += c`")
            return unknown
        op, bound_expr = cond
        kind, step_expr = step
        bound = self.sym(bound_expr, loop.body_scope)
        inc = self.sym(step_expr, loop.body_scope)
        if any(x is None or self._has_opaque(x) or marker in x.free_symbols
               for x in (start, bound, inc)):
            why = "divide by zero" if self._divides_by_zero(start, bound, inc) \
                else "depend on data"
            unknown.reason = f"the bounds of for-loop {loop.name} {why}"
            if start is not None and inc is not None and not self._has_opaque(start) \
                    and not self._has_opaque(inc) and kind == "add":
                unknown.value = start + inc * t
                unknown.affine = True
            return unknown
        if kind == "div":
            trips = _halving_trips(start, bound, inc, op)
            if trips is None:
                unknown.reason = (f"cannot count the iterations of for-loop {loop.name}: "
                                  "a dividing step needs constant bounds")
                return unknown
            return NormalisedLoop(t, rounding.floor(start / inc**t), trips, True, False)
        if kind == "mul":
            trips = _geometric_trips(start, bound, inc, op)
            if trips is None:
                unknown.reason = f"cannot count the iterations of for-loop {loop.name}"
                return unknown
            return NormalisedLoop(t, start * inc**t, trips, True, False)
        trips = _additive_trips(start, bound, inc, op)
        if trips is None:
            unknown.reason = f"cannot count the iterations of for-loop {loop.name}"
            unknown.value = start + inc * t
            unknown.affine = True
            return unknown
        trips = _floored(trips)
        counters = set(self._counters)
        if not trips.free_symbols & counters and trips.is_nonnegative is not True:
            # `k < m - 100`: a loop whose bound lies below its start runs 0 times, not a
            # negative number of times (no counter in it, so the sums stay closed).
            trips = sympy.Max(0, trips)
        elif _curved(trips, counters):
            # `k < min(4, p - l*l)`: the bound falls below the start for large l, and a
            # loop then runs 0 times, not a negative number of times. (Linear bounds, as
            # in triangular and tiled loops, stay unclamped: they do not cross.)
            trips = sympy.Max(0, trips)
        return NormalisedLoop(t, start + inc * t, trips, True, True, bounds=(start, op, bound, inc))

    def _has_opaque(self, e: Any) -> bool:
        return any(self.is_opaque(s) for s in getattr(e, "free_symbols", ()))

    # ------------------------------------------------------------------ dependencies
    def deps(self, e: ast.Expr | None, scope: Scope) -> frozenset[Loop]:
        """The loops whose iteration the value of `e` depends on."""
        match e:
            case None | ast.IntLit() | ast.FloatLit() | ast.BoolLit() | ast.HwdConst():
                return frozenset()
            case ast.Name():
                b = scope.lookup(e)
                return self.binding_deps(b) if b is not None else frozenset()
            case ast.Index() | ast.Field():
                found = self.subscript_deps(e, scope)
                b = scope.lookup_root(e)
                return found | self.content_deps(b) if b is not None else found
            case ast.Unary() | ast.Binary() | ast.Call():
                out: frozenset[Loop] = frozenset()
                for child in ast.children(e):
                    out |= self.deps(cast(ast.Expr, child), scope)  # the children of an Expr
                return out
            case _:
                unknown_node(e, "feedback's dependencies")

    def binding_deps(self, b: DeclaredName) -> frozenset[Loop]:
        # Each use of a variable follows its initialiser, and that one's variables, again:
        # a chain of single assignments (`bs`, `be`, `nrMine`, `len`, `ts`, `a`, `b` of a
        # block's share of non-zeros) was walked once per use of every variable down it,
        # 10^5 steps. Kept per binding until the contents' dependencies change (while
        # `_solve_content` iterates), and not while a loop's step is followed (its answer
        # then leaves that loop out).
        if self._stepping:
            return self._binding_deps_of(b)
        found = self._binding_deps.get(b)
        if found is None:
            found = self._binding_deps[b] = self._binding_deps_of(b)
        return found

    def _binding_deps_of(self, b: DeclaredName) -> frozenset[Loop]:
        if b.kind == "loop" and b.loop is not None:
            loop = b.loop
            node = loop.node
            extra: frozenset[Loop] = frozenset()
            if isinstance(node, ast.For) and loop not in self._stepping:
                init = node.init.init if isinstance(node.init, ast.Decl) else node.init.value
                extra = self.deps(init, loop.scope)
                if isinstance(node.step, ast.Assign):
                    # `h = h / 2` names the variable again: its own loop, not a cycle
                    self._stepping.add(loop)
                    try:
                        extra |= self.deps(node.step.value, loop.body_scope) - {loop}
                    finally:
                        self._stepping.discard(loop)
            return frozenset({loop}) | extra | self.content_deps(b)
        if b.single_assignment and b.scope is not None:
            return self.deps(b.init, b.scope)
        return self.content_deps(b)

    def content_deps(self, b: DeclaredName) -> frozenset[Loop]:
        """Loops that the contents of a variable written in the kernel depend on: its
        writes' values and subscripts, and the loops (inside its declaration) and `if`s
        around the writes."""
        if self._content is None:
            self._solve_content()
        assert self._content is not None
        return self._content.get(b.root, frozenset()) | self._content.get(b, frozenset())

    def _solve_content(self) -> None:
        # A fixed point: contents may depend on each other (`x = y; y = x + k;`). Each
        # content is a union of others (monotone in them), so rounds climb from nothing
        # to the least fixed point in any order, also where a round reads dependencies
        # of bindings it kept from smaller contents earlier in it (`_binding_deps`: never
        # more than the fixed point's). They are forgotten after each round that changed
        # a content, so the last round, which changes none, reads only answers from the
        # final contents. (Forgetting them at every change instead walked the chains of
        # spmv hopper_v17's 47 written arrays again and again: 12,059 dependency steps a
        # job, now 6,300.)
        self._content = {}
        written = [b for b in self.bindings if b.writes and not b.single_assignment]
        changed = True
        while changed:
            changed = False
            for b in written:
                new = self._write_deps(b)
                if new != self._content.get(b, frozenset()):
                    self._content[b] = new
                    changed = True
            if changed:
                self._binding_deps.clear()

    def _write_deps(self, b: DeclaredName) -> frozenset[Loop]:
        out: set[Loop] = set()
        if b.init is not None and b.scope is not None and b.kind != "loop":
            out |= self.deps(b.init, b.scope)
        for w in b.writes:
            item = w.item
            out |= {loop for loop in item.loops if loop not in b.loops}
            if item.loop is not None and item.loop not in b.loops:
                out.add(item.loop)
            out |= self.deps(w.value, item.scope)
            if w.target is not None:
                out |= self.subscript_deps(w.target, item.scope)
            for guard in item.guards:
                out |= self.deps(guard.cond, guard.scope)
        return frozenset(out)

    def subscript_deps(self, e: ast.Expr, scope: Scope) -> frozenset[Loop]:
        """The loops the subscripts of an access depend on (not the array's contents)."""
        out: frozenset[Loop] = frozenset()
        while isinstance(e, (ast.Index, ast.Field)):
            if isinstance(e, ast.Index):
                for sub in e.indices:
                    out |= self.deps(sub, scope)
            e = e.base
        b = scope.lookup(e) if isinstance(e, ast.Name) else None
        for sub in b.prefix if b is not None else ():  # the part a view of a part views
            out |= self.deps(sub, scope)
        return out


# ----------------------------------------------------------------------------- helpers

class _SymbolicWalk(EvaluatorBase[Any, Scope]):
    """MCPL's operators on SymPy values (`SymPyValues`); names are the bindings' values and
    what has no symbolic value (data, an operation SymPy cannot express) an opaque symbol."""

    def __init__(self, owner: SymbolicEvaluator):
        super().__init__(SymPyValues())
        self.owner = owner

    def name(self, e: ast.Name, env: Scope) -> Any:
        b = env.lookup(e)
        return self.owner.binding_value(b) if b is not None else sympy.Symbol(e.name)

    def hwd_constant(self, e: ast.HwdConst, env: Scope) -> Any:
        return self.owner.hwd_constant(e.path)

    def other(self, e: ast.Expr, env: Scope) -> Any:
        return self.owner.data()  # an array element or a field: data, unknown statically

    def operate(self, e: ast.Expr, operation: Callable[..., Any], *args: Any) -> Any:
        try:
            value = operation(*args)
        except NotEvaluable:
            return self.owner.data()
        except ZeroDivisionError:  # mpmath's, dividing by a float 0.0
            return self.owner.undefined()
        if (isinstance(e, ast.Call) or isinstance(e, ast.Binary) and e.op in _UNDEFINED_AT) \
                and isinstance(value, sympy.Basic) and value.has(sympy.zoo, sympy.nan):
            # A division by zero (`1.0 / 0`, `log(0.0)`) has no value SymPy can count
            # with: its `zoo` became a trip count `ceiling(zoo*w)` and `nan` bytes, and
            # the roofline's least roof failed on it. Unknown statically, as data is.
            return self.owner.undefined()
        return value


# The operators whose value may be undefined where their operands are not.
_UNDEFINED_AT = frozenset({"/", "%", "^"})


def _curved(e: Any, counters: set[Any]) -> bool:
    """Does `e` use a loop counter other than linearly (under min, max, ceiling, floor)?"""
    present = [t for t in e.free_symbols if t in counters]
    if not present:
        return False
    if isinstance(e, (sympy.Min, sympy.Max, sympy.ceiling, sympy.floor, sympy.Add)):
        return any(_curved(a, counters) for a in e.args)
    if isinstance(e, sympy.Mul):
        varying = [a for a in e.args if a.free_symbols & counters]
        return len(varying) > 1 or _curved(varying[0], counters)
    try:
        return sympy.Poly(e, *present).total_degree() > 1
    except sympy.PolynomialError:
        return True


def _floored(trips: Any) -> Any:
    """A count rounded up in C, `(len + 7) / 8 * 8`, truncates toward zero (a trunc that
    SymPy cannot sum); as a count it may be floored instead: for c > 0, c*trunc(x) and
    c*floor(x) agree where x >= 0, and where x < 0 both are <= 0, a loop that runs 0
    times, which the clamp below (or the bounds' not crossing) makes of either. Floors and
    ceilings of a counter are what the sums close over."""
    coefficient, rest = sympy.sympify(trips).as_coeff_Mul()
    if isinstance(rest, trunc) and coefficient.is_positive:
        numerator, denominator = sympy.fraction(sympy.together(rest.args[0]))
        if denominator.is_positive:
            return coefficient * floor_quotient(numerator, denominator)
    return trips


def _additive_trips(start: Any, bound: Any, inc: Any, op: str) -> Any:
    """Iterations of `v = start; v OP bound; v += inc` (inc constant in the loop)."""
    if op in ("<", "<=") and inc.is_positive:
        span = bound - start + (1 if op == "<=" else 0)
        return _ceil_div(span, inc)
    if op in (">", ">=") and inc.is_negative:
        span = start - bound + (1 if op == ">=" else 0)
        return _ceil_div(span, -inc)
    if op == "!=" and inc != 0:
        trips = (bound - start) / inc
        return trips if trips.is_integer or trips.is_integer is None else None
    return None


def ceiling_div(a: Any, d: Any) -> Any:
    """ceiling(a / d); for a positive integer d, ceiling(ceiling(x) / d) = ceiling(x / d),
    so `ceiling(m/64)` threads in groups of 4 read `ceiling(m/256)`."""
    a, d = sympy.sympify(a), sympy.sympify(d)
    if isinstance(a, sympy.ceiling) and d.is_Integer and d > 0:
        return rounding.ceiling(a.args[0] / d)
    return rounding.ceiling(a / d)


def _ceil_div(a: Any, b: Any) -> Any:
    if b == 1:
        return a
    return rounding.ceiling(a / b)


_RELATION_HOLDS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
                   ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
                   "!=": lambda a, b: a != b}


def _halving_trips(start: Any, bound: Any, divisor: Any, op: str) -> Any:
    """Iterations of `v = start; v OP bound; v /= divisor` (or `v >>= k`) for constant,
    non-negative start and bound and a divisor > 1, counted by running the loop: the
    tree reduction's `for (s = 128; s > 0; s >>= 1)` runs 8 times. The values are
    floor(start / divisor^t) (integer division of non-negative numbers nests). None
    when not constant or when the loop would not end (`s >= 0`)."""
    if not all(x.is_Integer for x in (start, bound, divisor)) or divisor < 2 \
            or start < 0 or op not in _RELATION_HOLDS:
        return None
    holds = _RELATION_HOLDS[op]
    v, trips = int(start), 0
    while holds(v, int(bound)):
        trips += 1
        if v == 0 or trips > 64:  # v stays at 0 for ever
            return None
        v //= int(divisor)
    return sympy.Integer(trips)


def _geometric_trips(start: Any, bound: Any, factor: Any, op: str) -> Any:
    """Iterations of `v = start; v < bound; v *= factor` for start > 0, factor > 1. A bound
    at or below the start (`k < -5`, or a counter that is 0) runs no iteration: the ratio
    is kept at least 1, where the logarithm is real and finite."""
    if not (start.is_positive and factor.is_number and factor > 1):
        return None
    if op == "<=":  # integers: v <= b is v < b + 1
        bound = bound + 1
    elif op != "<":
        return None
    return sympy.Max(0, rounding.ceiling(sympy.log(sympy.Max(1, bound / start), factor)))


# Points at which `identical` tries two expressions: distinct primes, small and large (a
# Min(1024, fw) or ceiling(w/1024) changes its form only past the tile size), keep
# accidental agreements unlikely; every value is a positive integer, as the kernel's sizes
# and loop counters are.
_PROBES = ((2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37),
           (1031, 977, 883, 769, 661, 563, 449, 347, 241, 139, 53, 43),
           (1000003, 999983, 900001, 800011, 700001, 600011, 500009, 400009, 300007,
            200003, 100003, 65537))


# Identities decided before: the roofline, reuse, cache and counting analyses ask the same
# few dozen of a kernel at every edit (milliseconds each for spmv's sums of minima).
_identities: KeptResults[bool] = KeptResults(2048)
forget_with_per_process(_identities)


def identical(a: Any, b: Any) -> bool:
    """Is a - b zero for every value of its symbols? Cheap tests first: expanding proves
    most identities, and one point where the two differ disproves one; only expressions
    that agree on the probe points go to `sympy.simplify` (slow: up to seconds on a
    Piecewise of floors). Kept by the two expressions (`_identities`), unless the
    budget ran out before it was decided."""
    a, b = sympy.sympify(a), sympy.sympify(b)
    found = _identities.get((a, b))
    if found is not None:
        return found
    decided = _identical(a, b)
    if decided is None:
        return False  # not proven: the callers take their approximate path
    _identities.put((a, b), decided)
    return decided


def _identical(a: Any, b: Any) -> bool | None:
    """`identical`, None where the budget ran out before it was decided."""
    difference = sympy.expand(a - b)
    if difference == 0:
        return True
    symbols = sorted(difference.free_symbols, key=str)
    for probe in _PROBES:
        point = {s: probe[k % len(probe)] + k // len(probe) for k, s in enumerate(symbols)}
        if _differ_at(a, b, difference, point):
            return False
    if spent():
        return None
    # doit=False: SymPy would otherwise try to add up every Sum in it symbolically, which
    # has no bound (a nested geometric loop with a float-dependent bound ran for minutes)
    return bool(sympy.simplify(difference, doit=False) == 0)


def _differ_at(a: Any, b: Any, difference: Any, point: dict[Any, int]) -> bool:
    """Do `a` and `b` surely take different values at `point` (a value for each symbol
    of their expanded `difference`)? Where the difference is a number SymPy can tell from
    zero, it decides. A formula holding an unevaluated `Sum` is no such number: SymPy
    compares no `Sum` at a number (putting the point in `Min(4*n, 8*n**2 + Sum(...))` asks
    `evalf` for an Euler-Maclaurin estimate, which fails), so no probe disproved such an
    identity and `sympy.simplify` had to, seconds on sums of minima (a block's share of
    the non-zeros) and 0.4 s for the roofline's compulsory traffic against every access
    of gesummv hopper_v5, which differ anyway. Here the sums are added up (`facts.sums`:
    term by term for short sums), in the first of two ways that decides:

    - exactly, where every sum is an exact integer: the difference with those integers
      and the point in is a number SymPy compares exactly (a difference of 1 in 10^12
      included);
    - else in floating point, both sides whole (the symbols that cancelled out of the
      difference get any value: both sides have them alike), different only beyond
      rounding error.

    A sum estimated from samples decides nothing: no disproof rests on an estimate or
    on rounding."""
    sums = difference.atoms(sympy.Sum)
    try:
        # facts.sums only where there are sums: it imports numpy (80 ms of a check's start)
        value = difference.xreplace({**point, **_exact_sums(sums, point)} if sums else point)
        if value.is_number and value.is_zero is not None and not value.has(sympy.Sum):
            return not value.is_zero
        if not sums:
            return False
    except (TypeError, ValueError, ZeroDivisionError):
        if not sums:
            return False
    from mcl.feedback.facts.sums import sum_number

    rest = sorted((a.free_symbols | b.free_symbols) - set(point), key=str)
    full = {**point, **{s: _PROBES[0][k % len(_PROBES[0])] for k, s in enumerate(rest)}}
    numbers = []
    for side in (a, b):
        number, estimated = sum_number(side, {s: full[s] for s in side.free_symbols})
        if number is None or estimated or not isinstance(number, (int, float)):
            return False
        numbers.append(number)
    x, y = numbers
    return abs(x - y) > 1e-9 * max(1.0, abs(x), abs(y))


def _exact_sums(sums: set[Any], point: dict[Any, int]) -> dict[Any, Any]:
    """The value at `point` of each of `sums` (a sum inside another, over the outer one's
    variable, goes with the outer one), where every one is an exact integer; else none
    (a sum estimated from samples, or a fraction in floating point)."""
    from mcl.feedback.facts.sums import sum_number

    numbers = {}
    for s in sums:
        free = s.free_symbols
        if not free <= point.keys():
            continue
        number, approximate = sum_number(s, {x: point[x] for x in free})
        if approximate or type(number) is not int:
            return {}
        numbers[s] = sympy.Integer(number)
    return numbers


def at_least(a: Any, b: Any) -> bool:
    """Is a >= b at every probe point (positive sizes, small and large)? A heuristic for
    picking the simpler of two forms of a bound, not a proof."""
    difference = sympy.expand(sympy.sympify(a) - sympy.sympify(b))
    symbols = sorted(difference.free_symbols, key=str)
    for probe in _PROBES:
        point = {s: probe[k % len(probe)] + k // len(probe) for k, s in enumerate(symbols)}
        try:
            value = difference.xreplace(point)
        except (TypeError, ValueError, ZeroDivisionError):
            return False
        if not value.is_number or value.is_negative is not False:
            return False
    return True


def ratio(a: Any, b: Any) -> Any:
    """a / b with common factors cancelled (`(2*m + 2)/(m + 1)` is 2): coefficients of
    loop counters are rational functions of the sizes, where `sympy.cancel` does what
    `sympy.simplify` would, at a fraction of the cost."""
    quotient = sympy.sympify(a) / sympy.sympify(b)
    if quotient.is_Number or not quotient.free_symbols:
        return quotient
    try:
        return sympy.cancel(quotient)
    except (TypeError, ValueError, NotImplementedError, sympy.PolynomialError):
        return quotient
