"""Read/write inference (the paper's section 4.3; mcpl.md §5 rule 7).

"In an MCPL program, the compiler can automatically infer which variables are constant or
written. [...] Library functions are annotated with signatures that specify which of the
parameters are written and/or read." A parameter is written when the function assigns to
it (or to an element or field of it), or passes it to a parameter of a callee that writes
it; library functions without a real body state their signature with
`mcl_builtin_read(x, y); mcl_builtin_write(r);`.

`function_effects` computes the access mode of every variable a function declares (its
parameters and locals); `AccessTable` iterates it over the whole program until the modes of
all parameters are stable (callees may be analysed before or after their callers, and
recursion is harmless: modes only grow). Later passes (transfers analysis, codegen) use
`infer_access(program)[function][param]`.

A mode is a string: "r" (read), "w" (written), "rw" (both) or "" (never used), so
`"w" in mode` reads naturally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.builtins import BUILTINS, SIGNATURE_CALLS
from mcl.mcpl.kept_answers import kept_by_answers
from mcl.mcpl.scopes import ScopeStack
from mcl.mcpl.visitor import StrictVisitor

# Access modes of a callee's parameters, by callee name, or None when the name is unknown.
CalleeModes = Callable[[str], "tuple[str, ...] | None"]
# Access mode of each declared variable, by its declaring node (Param, Decl, View, Foreach)
Effects = dict[Ref[object], str]


def merge(a: str, b: str) -> str:
    """Union of two modes, normalised to one of "", "r", "w", "rw"."""
    both = set(a) | set(b)
    return ("r" if "r" in both else "") + ("w" if "w" in both else "")


def call_arg_modes(call: ast.Call, callee_modes: CalleeModes) -> tuple[str, ...]:
    """How a call accesses each of its arguments. Arguments of an unknown callee count as
    read (the checker reports the unknown name); extra arguments likewise."""
    if call.func in SIGNATURE_CALLS:
        return (SIGNATURE_CALLS[call.func],) * len(call.args)
    modes = callee_modes(call.func)
    if modes is None:
        modes = ()
    return tuple(modes[i] if i < len(modes) else "r" for i in range(len(call.args)))


def lvalue_parts(e: ast.Expr) -> tuple[ast.Name | None, list[ast.Expr]]:
    """The variable an access expression stores into, and the index expressions on the way
    (`c[i, j].r` -> (c, [i, j])). The root is None for a non-lvalue (`a + b`, `f(x)`)."""
    indices: list[ast.Expr] = []
    while isinstance(e, (ast.Index, ast.Field)):
        if isinstance(e, ast.Index):
            indices.extend(e.indices)
        e = e.base
    return (e if isinstance(e, ast.Name) else None), indices


def written_names(body: object) -> Iterator[str]:
    """The variables a body may write: targets of assignments, ++/-- and swaps, and the
    arguments of calls (which may write them)."""
    for node in ast.walk(body):
        targets: list[ast.Expr]
        match node:
            case ast.Assign() | ast.IncDec():
                targets = [node.target]
            case ast.Swap():
                targets = [node.left, node.right]
            case ast.Call():
                targets = list(node.args)
            case _:
                targets = []
        for target in targets:
            root = lvalue_parts(target)[0]
            if root is not None:
                yield root.name


class _Effects(StrictVisitor):
    """One walk over a function body, resolving names through block scopes, recording how
    each declared variable is accessed. Keys are `Ref`s to the declaring nodes (two `int k = 0`
    declarations in different loops are equal dataclasses but distinct variables)."""

    def __init__(self, callee_modes: CalleeModes) -> None:
        self.callee_modes = callee_modes
        self.scopes: ScopeStack[Ref[object]] = ScopeStack()
        self.modes: dict[Ref[object], str] = {}

    def declare(self, name: str, node: object, storage: Ref[object] | None = None) -> None:
        key = Ref(node) if storage is None else storage
        self.modes.setdefault(key, "")
        self.scopes.declare(name, key)

    def mark(self, name: str, mode: str) -> None:
        key = self.scopes.lookup(name)
        if key is not None:
            self.modes[key] = merge(self.modes[key], mode)

    # -- expressions ----------------------------------------------------------------
    def read(self, e: ast.Expr | None) -> None:
        if e is not None:
            self.visit(e)

    def visit_Name(self, e: ast.Name) -> None:
        self.mark(e.name, "r")

    def visit_Call(self, e: ast.Call) -> None:
        self.call(e)

    def _read_children(self, e: ast.Expr) -> None:
        for child in ast.children(e):
            self.visit(child)

    visit_IntLit = visit_FloatLit = visit_BoolLit = visit_HwdConst = _read_children
    visit_Index = visit_Field = visit_Unary = visit_Binary = _read_children

    def access(self, e: ast.Expr, mode: str) -> None:
        """`e` is accessed with `mode` as a whole (assignment target, by-reference argument;
        mode "" for an argument the callee ignores). The indices on the way are read."""
        root, indices = lvalue_parts(e)
        for index in indices:
            self.read(index)
        if root is not None:
            if mode:
                self.mark(root.name, mode)
        elif "r" in mode or not mode:
            self.read(e)

    def call(self, call: ast.Call) -> None:
        for arg, mode in zip(call.args, call_arg_modes(call, self.callee_modes), strict=False):
            if mode == "r":
                self.read(arg)
            else:  # written, or passed to a parameter the callee never uses
                self.access(arg, mode)

    # -- statements -----------------------------------------------------------------
    def type_sizes(self, t: ast.Type | None) -> None:
        if isinstance(t, ast.ArrayType):
            for group in t.dims:
                for size in group:
                    self.read(size)

    def decl(self, d: ast.Decl) -> None:
        self.type_sizes(d.type)
        self.read(d.init)
        # An initialiser is not a write: `int nt = ...;` never written afterwards is an
        # inferred constant (section 4.3) and may size arrays.
        self.declare(d.name, d)
        if d.view is not None:
            self.type_sizes(d.view.type)
            self.declare(d.view.name, d.view, storage=Ref(d))

    def stmt(self, s: ast.Stmt) -> None:
        self.visit(s)

    def visit_Decl(self, s: ast.Decl) -> None:
        self.decl(s)

    def visit_ViewDecl(self, s: ast.ViewDecl) -> None:
        self.type_sizes(s.view.type)
        if s.part is not None:  # the subscripts of a viewed element are read, once
            self.access(s.part, "")
        source = self.scopes.lookup(s.source)
        self.declare(s.view.name, s.view, storage=source)

    def visit_Assign(self, s: ast.Assign) -> None:
        self.read(s.value)
        self.access(s.target, "w" if s.op == "=" else "rw")

    def visit_IncDec(self, s: ast.IncDec) -> None:
        self.access(s.target, "rw")

    def visit_CallStmt(self, s: ast.CallStmt) -> None:
        self.call(s.call)

    def visit_Swap(self, s: ast.Swap) -> None:
        self.access(s.left, "rw")
        self.access(s.right, "rw")

    def visit_If(self, s: ast.If) -> None:
        self.read(s.cond)
        self.nested(s.then)
        if s.orelse is not None:
            self.nested(s.orelse)

    def visit_For(self, s: ast.For) -> None:
        with self.scopes.nested():
            self.stmt(s.init)
            self.read(s.cond)
            self.nested(s.body)
            self.stmt(s.step)

    def visit_Foreach(self, s: ast.Foreach) -> None:
        self.read(s.count)
        with self.scopes.nested():
            self.declare(s.var, s)
            self.nested(s.body)

    def visit_Return(self, s: ast.Return) -> None:
        self.read(s.value)

    def visit_Block(self, s: ast.Block) -> None:
        with self.scopes.nested():
            for inner in s.stmts:
                self.stmt(inner)

    def visit_Barrier(self, s: ast.Barrier) -> None:
        pass  # names a memory space, not a variable

    def nested(self, s: ast.Stmt) -> None:
        with self.scopes.nested():
            self.stmt(s)


def function_effects(function: ast.Function, callee_modes: CalleeModes) -> Effects:
    """Access mode of every variable `function` declares, keyed by a `Ref` to the declaring
    node (Param, Decl, View, Foreach; a For's variable is its init Decl). Array sizes in the
    signature are not counted as reads: they describe the arguments, they do not use them."""
    effects = _Effects(callee_modes)
    for param in function.params:
        effects.declare(param.name, param)
    effects.stmt(function.body)
    return effects.modes


def _kept_effects(function: ast.Function, callee_modes: CalleeModes) -> Effects:
    """`function_effects`, found on the function's node while the callees it asked about
    have the same modes (mcl.mcpl.kept_answers): in the language server, a function the
    edit did not touch and whose callees' modes stayed is not walked again."""
    return kept_by_answers(function, "_effects",
                           lambda asking: function_effects(function, asking), callee_modes)


class AccessTable:
    """Parameter modes of every function of a program, to a fixed point over calls.

    `functions` are (function, callee resolver) pairs: the resolver maps a callee name, as
    seen from the module holding the function, to the callee Function, a Builtin or None.
    """

    def __init__(self, functions: list[tuple[ast.Function, Callable[[str], Any]]]) -> None:
        self._params: dict[Ref[ast.Function], dict[str, str]] = {
            Ref(f): {p.name: "" for p in f.params} for f, _ in functions
        }
        self._effects: dict[Ref[ast.Function], Effects] = {}
        changed = True
        while changed:
            changed = False
            for function, resolve in functions:
                effects = _kept_effects(function, self._callee_modes(resolve))
                self._effects[Ref(function)] = effects
                modes = {p.name: effects.get(Ref(p), "") for p in function.params}
                if modes != self._params[Ref(function)]:
                    self._params[Ref(function)] = modes
                    changed = True

    def _callee_modes(self, resolve: Callable[[str], Any]) -> CalleeModes:
        def modes(name: str) -> tuple[str, ...] | None:
            callee = resolve(name)
            if isinstance(callee, ast.Function):
                known = self._params.get(Ref(callee))
                if known is None:  # a function outside the table: assume it reads
                    return tuple("r" for _ in callee.params)
                return tuple(known[p.name] for p in callee.params)
            if callee is not None and hasattr(callee, "modes"):
                return callee.modes  # a Builtin
            builtin = BUILTINS.get(name)
            return builtin.modes if builtin is not None else None

        return modes

    def callee_modes(self, resolve: Callable[[str], Any]) -> CalleeModes:
        """Parameter modes by callee name, for a module whose names `resolve` looks up."""
        return self._callee_modes(resolve)

    def params(self, function: ast.Function) -> dict[str, str]:
        """Mode of each parameter of `function`, in declaration order."""
        return dict(self._params.get(Ref(function), {}))

    def effects(self, function: ast.Function) -> Effects:
        """Mode of every variable `function` declares, keyed by a `Ref` to the declaring
        node."""
        return self._effects.get(Ref(function), {})
