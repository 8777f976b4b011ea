"""The values a foreach body's small uniform variables can hold, for the barrier check
(mcl.mcpl.barriers, docs/checker.md).

A double buffer swaps its halves with variables every unit updates alike: `src = dst;
dst = 1 - src;`, or through a temporary. No single subscript shows that `buf[dst, t]` and
`buf[src, t - off]` lie in different halves; the values do: whatever the iteration, src
and dst are 0 and 1 or 1 and 0. The tracked variables are integers the units declare
that are the same in every unit and only ever assigned from constants and each other
(+, -, *); their states are enumerated, loop conditions ignored (each loop taken any
number of times), as long as they stay few (MAX_STATES).

A state is (origin, current): the last barrier passed with the values there, and the
values now. Two accesses after the same barrier can only see values reached from the
same origin, so their joint values are the pairs of current values with a common origin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.unit_elements import polynomial
from mcl.mcpl.visitor import unknown_node

# Beyond this many states the variables are not tracked (nothing is decided from them).
MAX_STATES = 64

Values = tuple[int | None, ...]
# (the barrier last passed (None: the start), the values there), the values now
States = frozenset[tuple[tuple[Ref[ast.Barrier] | None, Values], Values]]


class TooMany(Exception):
    """More than MAX_STATES states."""


def tracked_names(body: ast.Stmt, varying: set[str], constants: Mapping[str, int]
                  ) -> tuple[str, ...]:
    """The scalar variables of `body` that are the same in every unit, not a for loop's,
    and assigned only from constants and other such variables with +, - and *."""
    loop_vars = {n.var for n in ast.walk(body) if isinstance(n, ast.For)}
    declared = {n.name for n in ast.walk(body) if isinstance(n, ast.Decl)
                and isinstance(n.type, ast.Prim) and n.type.name == "int"}
    names = declared - varying - loop_vars
    while True:
        kept = {name for name in names
                if all(_from(value, names, constants) for value in _assignments(body, name))}
        if kept == names:
            return tuple(sorted(names))
        names = kept


def _assignments(body: ast.Stmt, name: str) -> Iterable[ast.Expr | None]:
    """The values assigned to `name` (None: one the state cannot follow)."""
    for n in ast.walk(body):
        match n:
            case ast.Decl() if n.name == name:
                yield n.init if n.init is not None else ast.IntLit(0)
            case ast.Assign(target=ast.Name(name=target)) if target == name:
                yield n.value if n.op in ("=", "+=", "-=", "*=") else None
            case ast.IncDec(target=ast.Name(name=target)) if target == name:
                yield ast.IntLit(1)
            case ast.Swap():
                if name in {getattr(side, "name", None) for side in (n.left, n.right)}:
                    yield None


def _from(value: ast.Expr | None, names: set[str], constants: Mapping[str, int]) -> bool:
    if value is None:
        return False
    p = polynomial(value, constants, {})
    return p is not None and all(x in names for k in p for x in k)


class UniformStates:
    """The states of the tracked variables along a walk of the body."""

    def __init__(self, names: tuple[str, ...], constants: Mapping[str, int]) -> None:
        self.names = names
        self.index = {name: k for k, name in enumerate(names)}
        self.constants = constants
        start: Values = (None,) * len(names)
        self.states: States | None = frozenset({((None, start), start)}) if names else None

    # -- the walk's steps ------------------------------------------------------------
    def barrier(self, s: ast.Barrier) -> None:
        if self.states is not None:
            self.states = _passed(s, self.states)

    def assign(self, s: ast.Decl | ast.Assign | ast.IncDec) -> None:
        if self.states is not None:
            try:
                self.states = self._assign(s, self.states)
            except TooMany:
                self.states = None

    def join(self, *branches: States | None) -> None:
        if self.states is not None:
            every = [b for b in branches if b is not None]
            self.states = frozenset().union(*every) if len(every) == len(branches) else None
            if self.states is not None and len(self.states) > MAX_STATES:
                self.states = None

    def loop_head(self, loop: ast.For) -> None:
        """The states at the head of `loop` after any number of iterations."""
        if self.states is None:
            return
        head = self.states
        for _ in range(MAX_STATES + 1):
            try:
                after = self._effect(loop.body, head)
                after = self._effect(loop.step, after)
            except TooMany:
                self.states = None
                return
            grown = head | after
            if grown == head:
                self.states = head
                return
            head = grown
        self.states = None

    # -- values ----------------------------------------------------------------------
    def values(self, state: Values) -> dict[str, int]:
        return {name: v for name, v in zip(self.names, state, strict=True) if v is not None}

    def _assign(self, s: ast.Decl | ast.Assign | ast.IncDec, states: States) -> States:
        match s:
            case ast.Decl():
                name, value = s.name, s.init if s.init is not None else ast.IntLit(0)
            case ast.Assign(target=ast.Name(name=name)):
                value = s.value if s.op == "=" else ast.Binary(
                    s.op[0], ast.Name(name), s.value)
            case ast.IncDec(target=ast.Name(name=name)):
                value = ast.Binary("+" if s.op == "++" else "-", ast.Name(name), ast.IntLit(1))
            case _:
                return states
        if name not in self.index:
            return states
        k = self.index[name]
        out = set()
        for origin, current in states:
            new = list(current)
            new[k] = self._evaluate(value, current)
            out.add((origin, tuple(new)))
        if len(out) > MAX_STATES:
            raise TooMany
        return frozenset(out)

    def _evaluate(self, e: ast.Expr, state: Values) -> int | None:
        p = polynomial(e, self.constants, {})
        if p is None:
            return None
        known = self.values(state)
        total = 0
        for monomial, coefficient in p.items():
            term = coefficient
            for x in monomial:
                if x not in known:
                    return None
                term *= known[x]
            total += term
        return total

    def _effect(self, s: ast.Stmt | None, states: States) -> States:
        """The states after `s` (accesses aside)."""
        match s:
            case None | ast.CallStmt() | ast.Return() | ast.ViewDecl() | ast.Swap():
                return states
            case ast.Barrier():
                return _passed(s, states)
            case ast.Block():
                for stmt in s.stmts:
                    states = self._effect(stmt, states)
                return states
            case ast.Decl() | ast.Assign() | ast.IncDec():
                return self._assign(s, states)
            case ast.If():
                return self._effect(s.then, states) | self._effect(s.orelse, states)
            case ast.Foreach():
                return self._effect(s.body, states)
            case ast.For():
                head = self._effect(s.init, states)
                for _ in range(MAX_STATES + 1):
                    grown = head | self._effect(s.step, self._effect(s.body, head))
                    if grown == head:
                        return head
                    head = grown
                raise TooMany
            case _:
                unknown_node(s, "the barrier check's uniform states")



def _passed(barrier: ast.Barrier, states: States) -> States:
    return frozenset(((Ref(barrier), c), c) for _, c in states)
