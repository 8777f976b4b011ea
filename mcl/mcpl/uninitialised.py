"""Scalar variables read before they are set (docs/checker.md, "Uninitialised variables").

A local scalar declared without a value (`float x;`, `for (int e; e < n; e++)`) holds
whatever the register held: the interpreter reads a marker value (-2^31 for an int, so a
loop on it runs about 2^31 times) and the generated OpenCL reads garbage. The check is a
definite-assignment walk in program order, linear in the size of the body:

- a read of a variable that no path has set yet is an error (`mcpl-uninitialised`);
- a read of a variable that some paths set and others do not (assigned in one branch of
  an `if`, or only inside a loop that may run no iteration) is a warning.

A loop body is walked once: what the body assigns anywhere counts as possibly set at its
top (an earlier iteration may have set it), nothing more as surely set. Arrays and user
types are left out here (their elements are set one by one, mostly in loops:
`mcl.mcpl.unset_elements` reports the elements and fields no statement sets); so is a
variable passed to a user function, which may set it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mcl.diagnostics import Diagnostic, error, warning
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.builtins import BUILTINS
from mcl.mcpl.visitor import unknown_node


def uninitialised_diagnostics(function: ast.Function) -> list[Diagnostic]:
    walk = _Walk(function.body)
    walk.stmt(function.body, _State())
    return walk.found


@dataclass
class _State:
    """The variables set so far, on every path and on some."""

    surely: set[str] = field(default_factory=set)  # set on every path so far
    maybe: set[str] = field(default_factory=set)  # set on some path so far
    ended: bool = False  # after a return: the rest of the block does not run

    def copy(self) -> _State:
        return _State(set(self.surely), set(self.maybe), self.ended)

    def set(self, name: str) -> None:
        self.surely.add(name)
        self.maybe.add(name)


def _join(a: _State, b: _State) -> _State:
    if a.ended:
        return b
    if b.ended:
        return a
    return _State(a.surely & b.surely, a.maybe | b.maybe)


_STATEMENTS = (ast.Decl, ast.ViewDecl, ast.Assign, ast.IncDec, ast.CallStmt, ast.Swap, ast.If,
               ast.For, ast.Foreach, ast.Barrier, ast.Return, ast.Block)


def _set_by(n: object) -> list[str]:
    """The scalars node `n` itself (not its children) may set: an assignment target, an
    initialised declaration, a loop variable, a variable passed to be written."""
    match n:
        case ast.Assign(target=ast.Name(name=name)) | ast.IncDec(target=ast.Name(name=name)):
            return [name]
        case ast.Decl(init=init) if init is not None:
            return [n.name]
        case ast.Call():
            return _written_arguments(n)
    return []


def _sets_in(root: object) -> dict[Ref[object], frozenset[str]]:
    """Every scalar each statement under `root` may set (by the statement's id), in one
    post-order pass: asked of each loop's body separately, as before, a nest of N loops
    walked its innermost statements N times (quadratic in the depth)."""
    sets: dict[Ref[object], frozenset[str]] = {}
    for node, kids in ast.post_order(root):
        names = set(_set_by(node))
        for kid in kids:
            # an expression's set is wanted by its parent only; a statement's is kept
            names |= sets.get(Ref(kid), frozenset()) if isinstance(kid, _STATEMENTS) \
                else sets.pop(Ref(kid), frozenset())
        sets[Ref(node)] = frozenset(names)
    return sets


def _written_arguments(call: ast.Call) -> list[str]:
    """The variables a call may set: every name passed to a user function (its
    parameters may be written), the names in a built-in's "w" positions."""
    builtin = BUILTINS.get(call.func)
    return [a.name for k, a in enumerate(call.args) if isinstance(a, ast.Name) and (
        builtin is None or (k < len(builtin.modes) and builtin.modes[k] == "w"))]


class _Walk:
    def __init__(self, body: ast.Block) -> None:
        self.body = body
        self._sets: dict[Ref[object], frozenset[str]] | None = None  # `_sets_in(body)`, once asked
        self.tracked: set[str] = set()  # declared without a value
        self.reported: set[str] = set()
        self.found: list[Diagnostic] = []

    def read(self, e: ast.Expr | None, state: _State) -> None:
        if e is None or state.ended:
            return
        for n in ast.walk(e):
            if isinstance(n, ast.Call):
                # Passed to a user function, which may set it, or as the result argument
                # of a built-in (sincos's cosine): set there, not read.
                for a in _written_arguments(n):
                    state.set(a)
            if isinstance(n, ast.Name):
                self.check(n, state)

    def check(self, n: ast.Name, state: _State) -> None:
        name = n.name
        if name not in self.tracked or name in state.surely or name in self.reported:
            return
        self.reported.add(name)
        if name in state.maybe:
            self.found.append(warning(
                "mcpl-uninitialised",
                f"'{name}' may be read before it is set: some paths to here do not set it",
                n.span,
                f"give '{name}' a value where it is declared",
            ))
        else:
            self.found.append(error(
                "mcpl-uninitialised",
                f"'{name}' is read before it is set: it has no value here",
                n.span,
                f"give '{name}' a value where it is declared, e.g. `= 0`",
            ))

    def stmt(self, s: ast.Stmt | None, state: _State) -> _State:
        if state.ended:
            return state
        match s:
            case None | ast.Barrier():
                pass
            case ast.ViewDecl():
                # names an array declared before: no scalar is set; the subscripts of a
                # viewed element are read
                if s.part is not None:
                    self.subscripts(s.part, state)
            case ast.Block():
                for stmt in s.stmts:
                    state = self.stmt(stmt, state)
            case ast.Decl():
                self.decl(s, state)
            case ast.Assign():
                self.subscripts(s.target, state)
                self.read(s.value, state)
                if s.op != "=" or not isinstance(s.target, ast.Name):
                    self.read(s.target, state)
                if isinstance(s.target, ast.Name):
                    state.set(s.target.name)
            case ast.IncDec():
                self.read(s.target, state)
            case ast.Swap():
                self.read(s.left, state)
                self.read(s.right, state)
            case ast.CallStmt():
                self.read(s.call, state)
            case ast.Return():
                self.read(s.value, state)
                state.ended = True
            case ast.If():
                self.read(s.cond, state)
                then = self.stmt(s.then, state.copy())
                orelse = self.stmt(s.orelse, state.copy())
                state = _join(then, orelse)
            case ast.For():
                state = self.loop(s, state)
            case ast.Foreach():
                self.read(s.count, state)
                state = self.stmt(s.body, state)
                state.ended = False  # a return ends one unit, not the code after the foreach
            case _:
                unknown_node(s, "the initialisation check")
        return state

    def decl(self, d: ast.Decl, state: _State) -> None:
        if d.init is not None:
            self.read(d.init, state)
            state.set(d.name)
        elif isinstance(d.type, ast.Prim) and d.view is None:
            self.tracked.add(d.name)
            state.surely.discard(d.name)
            state.maybe.discard(d.name)
        else:
            state.set(d.name)  # arrays and user types: set element by element

    def set_in(self, s: ast.Stmt | None) -> frozenset[str]:
        """Every scalar statement `s` (of the function's body) may set."""
        if s is None:
            return frozenset()
        if self._sets is None:
            self._sets = _sets_in(self.body)
        return self._sets[Ref(s)]

    def subscripts(self, target: ast.Expr, state: _State) -> None:
        while isinstance(target, ast.Index | ast.Field):
            if isinstance(target, ast.Index):
                for index in target.indices:
                    self.read(index, state)
            target = target.base

    def loop(self, s: ast.For, state: _State) -> _State:
        state = self.stmt(s.init, state)
        later = self.set_in(s.body) | self.set_in(s.step)  # set by an earlier iteration
        self.read(s.cond, state.copy())  # evaluated once before any iteration
        top = state.copy()
        top.maybe |= later
        body = self.stmt(s.body, top.copy())
        self.stmt(s.step, body)
        after = state.copy()
        after.maybe |= later
        return after
