"""What every analysis needs to know about one function: its variables, loops, statements
and array accesses, gathered in one walk of the AST (paper section 6: "the analysis
techniques work directly on the abstract syntax tree").

Which declaration a name use stands for is the checker's: the walk reads the checked
program's side tables (`mcl.mcpl.sidetables`; MCPL names may be re-declared in sibling
blocks, e.g. two `for (int ei ...)` loops, and the tables tell them apart). It records, for
every statement part ("item", the paper's control-flow-graph block at statement
granularity), which variables it defines and uses in value and in index positions, the
operations it performs per execution, and the loops and `if`s around it. Symbolic values
are computed afterwards by `mcl.feedback.facts.symbolic.SymbolicEvaluator`, which follows
the recorded scopes (`Scope`: what feedback adds to the checker's bindings). The records
of the walk (`DeclaredName`, `Scope`, `Loop`, `Access`, `Item`, ...) are in
`mcl.feedback.facts.declarations`, below the evaluator, which reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from mcl.feedback.facts.declarations import (
    COND,
    COUNT,
    IF,
    INDEX,
    INIT,
    STEP,
    STMT,
    VALUE,
    Access,
    DeclaredName,
    Guard,
    Item,
    Loop,
    Names,
    Scope,
    Write,
    access_subscripts,
    array_rank,
    dims,
)
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.builtins import SIGNATURE_CALLS
from mcl.mcpl.nesting import ARRAY, PARAMETER, SCALAR, default_space
from mcl.mcpl.scopes import Kind
from mcl.mcpl.visitor import unknown_node

if TYPE_CHECKING:
    from mcl.feedback.facts.symbolic import SymbolicEvaluator
    from mcl.feedback.program_view import ProgramView
    from mcl.hdl.model import HardwareDescription
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program
    from mcl.mcpl.sidetables import Declaring

# The records of the walk (mcl.feedback.facts.declarations) are the facts' vocabulary:
# the analyses import them from here with the facts that hold them.
__all__ = ["COND", "COUNT", "IF", "INDEX", "INIT", "STEP", "STMT", "VALUE", "Access",
           "DeclaredName", "Derived", "Guard", "Item", "KernelFacts", "Loop", "Names",
           "Scope", "SpaceFacts", "Write", "build_facts", "dims"]


class Derived:
    """A fact derived from the facts of one function and shared by the analyses that need
    it: an analysis asks `ctx.get(ReuseFacts)` (or `facts.get(...)`) instead of importing
    the analysis that computes it, so analyses depend on facts and never on each other
    (docs/architecture.md, "Feedback in layers")."""

    @classmethod
    def derive(cls: type[D], facts: KernelFacts) -> D:
        raise NotImplementedError(f"{cls.__name__} does not say how it is derived")


D = TypeVar("D", bound=Derived)


@dataclass(eq=False)
class KernelFacts:
    """What the analyses of one function at one level read, made once (`kernel_facts`)."""

    function: ast.Function
    hwd: HardwareDescription
    checked: CheckedProgram
    params: list[DeclaredName]
    bindings: list[DeclaredName]
    loops: list[Loop]
    items: list[Item]
    accesses: list[Access]
    evaluator: SymbolicEvaluator
    view: ProgramView
    param_modes: dict[str, str]  # parameter -> "r", "w", "rw" or "" (section 4.3)
    spaces: SpaceFacts
    stack: tuple[str, ...] = ()  # the functions being analysed around a callee
    _callees: dict[Ref[ast.Function], KernelFacts] = field(default_factory=dict)
    _derived: dict[type[Derived], Derived] = field(default_factory=dict, repr=False)

    def get(self, kind: type[D]) -> D:
        """The derived fact `kind` of this function (its reuse findings, its operation
        counts, ...), derived on the first request: every analysis that asks later gets
        the same object."""
        found = self._derived.get(kind)
        if found is None:
            found = self._derived[kind] = kind.derive(self)
        assert isinstance(found, kind)
        return found

    @property
    def program(self) -> Program:
        return self.checked.program

    def param(self, name: str) -> DeclaredName | None:
        return next((p for p in self.params if p.name == name), None)

    def callee(self, call: ast.Call) -> KernelFacts | None:
        """Facts of the MCPL function `call` calls, as the checker bound it (None for
        built-ins, a name bound to nothing and recursion), analysed at the same
        description: section 6.2 analyses the call graph from the leaves up."""
        bound = self.checked.binding_of(call)
        callee = bound.node if bound is not None else None
        if not isinstance(callee, ast.Function) or callee.name in self.stack:
            return None
        key = Ref(callee)
        if key not in self._callees:
            self._callees[key] = build_facts(callee, self.checked, self.hwd, self.stack)
        return self._callees[key]


# ----------------------------------------------------------------------------- builder


class _Builder:
    """One walk over one function body."""

    def __init__(self, function: ast.Function, hwd: HardwareDescription, spaces: SpaceFacts,
                 view: ProgramView, names: Names):
        self.function = function
        self.hwd = hwd
        self.spaces = spaces
        self.view = view
        self.names = names
        self.bindings: list[DeclaredName] = []
        self.loops: list[Loop] = []
        self.items: list[Item] = []
        self.accesses: list[Access] = []

    # -- declarations --------------------------------------------------------------
    def bind(self, name: str, kind: str, type_: ast.Type | None, node: Any, scope: Scope | None,
             loops: tuple[Loop, ...], declaration: Declaring | None = None,
             init: ast.Expr | None = None) -> DeclaredName:
        """The binding of `declaration` (the node the checker's side tables know it by;
        None for a `for` that reuses a variable declared before it), with the memory
        space the checker's binding declares, else the default at this description
        (`SpaceFacts.resolve`). The written type is kept: its sizes are what the symbolic
        evaluator computes with, where the checker's type only has the shape."""
        checked = self.names.tables.binding_declared_by(declaration) \
            if declaration is not None else None
        spaces = checked.spaces if checked is not None else ()
        space = self.spaces.resolve(spaces, type_, kind, loops)
        b = DeclaredName(name, kind, type_, node, getattr(node, "span", None), space, loops, scope,
                    init)
        if declaration is not None:
            self.names.by_declaration[Ref(declaration)] = b
        self.bindings.append(b)
        return b

    # -- statements ----------------------------------------------------------------
    def block(self, stmts: tuple[ast.Stmt, ...], scope: Scope, loops: tuple[Loop, ...],
              guards: tuple[Guard, ...]) -> None:
        for stmt in stmts:
            scope = self.stmt(stmt, scope, loops, guards)

    def stmt(self, s: ast.Stmt, scope: Scope, loops: tuple[Loop, ...],
             guards: tuple[Guard, ...]) -> Scope:
        """Walk one statement; returns the scope after it (declarations extend it)."""
        match s:
            case ast.Block():
                self.block(s.stmts, scope, loops, guards)
                return scope
            case ast.Decl():
                return self.decl(s, scope, loops, guards)
            case ast.ViewDecl():
                checked = self.names.tables.binding_of(s)
                source = self.names.by_declaration.get(Ref(checked.node)) \
                    if checked is not None else None
                view = self.bind(s.view.name, "view", s.view.type, s.view, scope, loops, s.view)
                view.storage = source
                view.space = source.root.space if source else view.space
                if s.part is not None:
                    view.part = s.part
                    self.part_subscripts(s, scope, loops, guards)
                return scope.declare(view)
            case ast.Assign():
                item = self.item(STMT, s, scope, loops, guards)
                compound = s.op != "="
                self.lvalue(item, s.target, "rw" if compound else "w", s.value)
                if compound:
                    item.ops[VALUE] += 1
                self.expr(item, s.value, VALUE)
            case ast.IncDec():
                item = self.item(STMT, s, scope, loops, guards)
                self.lvalue(item, s.target, "rw", None)
                item.ops[VALUE] += 1
            case ast.CallStmt():
                item = self.item(STMT, s, scope, loops, guards)
                self.expr(item, s.call, VALUE)
            case ast.Swap():
                item = self.item(STMT, s, scope, loops, guards)
                self.lvalue(item, s.left, "rw", None)
                self.lvalue(item, s.right, "rw", None)
                for side in (s.left, s.right):
                    b = scope.lookup_root(side)
                    if b is not None:
                        item.value_uses.add(b)
            case ast.Return():
                item = self.item(STMT, s, scope, loops, guards)
                item.returns = True
                if s.value is not None:
                    self.expr(item, s.value, VALUE)
            case ast.If():
                item = self.item(IF, s, scope, loops, guards)
                self.expr(item, s.cond, VALUE)
                self.stmt(s.then, scope, loops, (*guards, Guard(s, True, scope)))
                if s.orelse is not None:
                    self.stmt(s.orelse, scope, loops, (*guards, Guard(s, False, scope)))
            case ast.Foreach():
                self.foreach(s, scope, loops, guards)
            case ast.For():
                return self.for_(s, scope, loops, guards)
            case ast.Barrier():
                pass  # synchronisation only, no operations
            case _:
                # A statement kind without a rule here would be left out of every count:
                # fail loudly instead of giving feedback on part of the kernel
                # (docs/architecture.md).
                unknown_node(s, "feedback")
        return scope

    def part_subscripts(self, s: ast.ViewDecl, scope: Scope, loops: tuple[Loop, ...],
                        guards: tuple[Guard, ...]) -> None:
        """A view of a part computes the part's subscripts once, where it is declared
        (indexing work, paper 6.2); the part itself is not loaded."""
        assert s.part is not None
        subscripts = access_subscripts(s.part)[0]
        if subscripts:
            item = self.item(STMT, s, scope, loops, guards)
            for sub in subscripts:
                self.expr(item, sub, INDEX)

    def foreach(self, s: ast.Foreach, scope: Scope, loops: tuple[Loop, ...],
                guards: tuple[Guard, ...]) -> None:
        var = self.bind(s.var, "loop", ast.Prim("int"), s, scope, loops, s)
        body_scope = scope.declare(var)
        loop = Loop("foreach", s, var, loops, guards, scope, body_scope)
        var.loop = loop
        self.loops.append(loop)
        count = self.item(COUNT, s, scope, loops, guards, loop)
        count.defs.add(var)
        self.expr(count, s.count, VALUE)
        self.stmt(s.body, body_scope, (*loops, loop), guards)

    def decl(self, s: ast.Decl, scope: Scope, loops: tuple[Loop, ...],
             guards: tuple[Guard, ...]) -> Scope:
        b = self.bind(s.name, "local", s.type, s, scope, loops, s, s.init)
        if s.init is not None:
            item = self.item(STMT, s, scope, loops, guards)
            item.defs.add(b)
            if b.space is not None and self.spaces.addressable(b.space) and not b.is_array:
                # The access is to the declared name (printed in feedback), not the Decl.
                written = ast.Name(s.name, span=s.span)
                self.names.made[Ref(written)] = b
                self.add_access(item, written, b, "w", (), VALUE)
            self.expr(item, s.init, VALUE)
        scope = scope.declare(b)
        if s.view is not None:
            view = self.bind(s.view.name, "view", s.view.type, s.view, scope, loops, s.view)
            view.storage = b
            view.space = b.space
            scope = scope.declare(view)
        return scope

    def for_(self, s: ast.For, scope: Scope, loops: tuple[Loop, ...],
             guards: tuple[Guard, ...]) -> Scope:
        init = self.item(INIT, s.init, scope, loops, guards)
        if isinstance(s.init, ast.Decl):
            outer = None
            var = self.bind(s.init.name, "loop", s.init.type, s, scope, loops, s.init,
                            s.init.init)
            if s.init.init is not None:
                self.expr(init, s.init.init, VALUE)
        else:
            # `for (k = 0; ...)` reuses a variable declared before: inside the loop the
            # name means the loop index; outside it the variable is simply written.
            outer = scope.lookup(s.init.target)
            var = self.bind(s.var, "loop", ast.Prim("int"), s, scope, loops,
                            init=s.init.value)
            var.reuses = outer
            if outer is not None:
                self.names.reused.add(outer.origin)
            self.expr(init, s.init.value, VALUE)
            if outer is not None:
                outer.writes.append(Write(init, s.init.target, s.init.value))
                init.defs.add(outer)
        init.defs.add(var)
        body_scope = scope.declare(var)
        loop = Loop("for", s, var, loops, guards, scope, body_scope)
        var.loop = loop
        init.loop = loop
        self.loops.append(loop)
        cond = self.item(COND, s.cond, body_scope, loops, guards, loop)
        self.expr(cond, s.cond, VALUE)
        step = self.item(STEP, s.step, body_scope, loops, guards, loop)
        step.defs.add(var)
        step.value_uses.add(var)
        step.ops[VALUE] += 1
        if isinstance(s.step, ast.Assign):
            self.expr(step, s.step.value, VALUE)
        if outer is not None:
            outer.writes.append(Write(step, None, None))
            step.defs.add(outer)
        self.stmt(s.body, body_scope, (*loops, loop), guards)
        return scope

    def item(self, kind: str, node: Any, scope: Scope, loops: tuple[Loop, ...],
             guards: tuple[Guard, ...], loop: Loop | None = None) -> Item:
        it = Item(kind, node, scope, loops, guards, loop)
        self.items.append(it)
        return it

    # -- expressions ---------------------------------------------------------------
    def lvalue(self, item: Item, target: ast.Expr, mode: str, value: ast.Expr | None) -> None:
        """A written place: records the definition, the store (and the load of a compound
        assignment) and the uses of its subscripts."""
        b = item.scope.lookup_root(target)
        if b is None:
            return
        storage = b.root
        storage.writes.append(Write(item, target, value))
        item.defs.add(storage)
        if b is not storage:
            b.writes.append(Write(item, target, value))
            item.defs.add(b)
        if "r" in mode:
            item.value_uses.add(b)
        indices, field_name = access_subscripts(target)
        for sub in indices:
            self.expr(item, sub, INDEX)
        if indices and len(indices) >= array_rank(b):
            self.add_access(item, target, b, mode, indices, VALUE, field_name)
        elif not indices and not b.is_array and self.spaces.addressable(b.space):
            self.add_access(item, target, b, mode, (), VALUE, field_name)

    def add_access(self, item: Item, node: ast.Expr, b: DeclaredName, mode: str,
                   indices: tuple[ast.Expr, ...], role: str, field_name: str | None = None
                   ) -> None:
        if indices:  # an element of a view of a part: of the part's element (DeclaredName.prefix)
            indices = b.prefix + tuple(indices)
        acc = Access(node, b, mode, tuple(indices), item, role, field_name)
        item.accesses.append(acc)
        self.accesses.append(acc)

    def expr(self, item: Item, e: ast.Expr | None, role: str, mode: str = "r") -> None:
        """Record the uses, operations and accesses of an expression evaluated in `role`.
        `mode` is how the enclosing call accesses this argument ("r", "w", "rw")."""
        match e:
            case None | ast.IntLit() | ast.FloatLit() | ast.BoolLit() | ast.HwdConst():
                pass
            case ast.Name():
                self.name(item, e, role, mode)
            case ast.Index() | ast.Field():
                self.element(item, e, role, mode)
            case ast.Unary():
                item.ops[role] += 1
                self.expr(item, e.operand, role)
            case ast.Binary():
                item.ops[role] += 1
                self.expr(item, e.left, role)
                self.expr(item, e.right, role)
            case ast.Call():
                self.call(item, e, role)
            case _:
                unknown_node(e, "feedback")

    def name(self, item: Item, e: ast.Name, role: str, mode: str) -> None:
        b = item.scope.lookup(e)
        if b is None:
            return
        if "w" in mode:
            self.lvalue(item, e, mode, None)
            return
        (item.value_uses if role == VALUE else item.index_uses).add(b)
        if not b.is_array and b.kind in ("local", "param") and self.spaces.addressable(
                b.space):
            self.add_access(item, e, b, "r", (), role)

    def element(self, item: Item, e: ast.Index | ast.Field, role: str, mode: str) -> None:
        b = item.scope.lookup_root(e)
        indices, field_name = access_subscripts(e)
        if b is not None and "w" in mode:
            self.lvalue(item, e, mode, None)
            return
        for sub in indices:
            self.expr(item, sub, INDEX)
        if b is None:
            return
        (item.value_uses if role == VALUE else item.index_uses).add(b)
        if indices and len(indices) >= array_rank(b):
            self.add_access(item, e, b, "r", indices, role, field_name)
        elif not indices and not b.is_array and self.spaces.addressable(b.space):
            self.add_access(item, e, b, "r", (), role, field_name)

    def call(self, item: Item, call: ast.Call, role: str) -> None:
        if call.func in SIGNATURE_CALLS:
            return
        item.calls.append((call, role))
        checked = self.names.tables.binding_of(call)
        modes = self.view.callee_modes(checked.node) if checked is not None else None
        if checked is not None and checked.kind is Kind.BUILTIN:
            item.ops[role] += 1  # a built-in is one instruction (section 6.2)
        for k, arg in enumerate(call.args):
            mode = modes[k] if modes is not None and k < len(modes) else "r"
            self.expr(item, arg, role, mode)


class SpaceFacts:
    """Memory-space facts of the description the function is analysed for."""

    def __init__(self, hwd: HardwareDescription, function: ast.Function | None = None):
        self.hwd = hwd
        # A function without foreach runs in its caller's executing unit.
        inside = function is not None and not any(
            isinstance(n, ast.Foreach) for n in ast.walk(function.body))
        self.host_level = hwd.executing_unit().group if inside else None
        self._addressable: dict[str, bool] = {}

    def resolve(self, spaces: tuple[str, ...], type_: ast.Type | None, kind: str,
                loops: tuple[Loop, ...] = ()) -> str | None:
        """The declared space, else the default of `mcl.mcpl.nesting.default_space` (the
        rule the checker, translation and code generator follow): parameters and
        constant arrays the outermost default, an array declared in the executing unit
        its registers, scalars the innermost default."""
        if spaces:
            return spaces[0]
        if not isinstance(type_, ast.ArrayType) or kind == "loop":
            what = SCALAR
        elif kind in ("param", "constant"):
            what = PARAMETER
        else:
            what = ARRAY
        groups = [loop.group for loop in loops if loop.kind == "foreach"]
        level = self.hwd.par_group(groups[-1] or "") if groups else self.host_level
        space = default_space(self.hwd, what, level)
        return space.name if space is not None else None

    def addressable(self, space: str | None) -> bool:
        """Is `space` held by addressable memory? Scalars in registers (or in a space no
        memory holds, like perfect's `reg`) are not data accesses (paper Table II counts
        2nmp + nm accesses for matmul: the `sum` register is free)."""
        if space is None:
            return False
        if space not in self._addressable:
            memories = [m for m in self.hwd.memories_for(space) if not m.is_cache]
            self._addressable[space] = bool(memories) and all(m.addressable for m in memories)
        return self._addressable[space]


# ----------------------------------------------------------------------------- entry


def build_facts(function: ast.Function, checked: CheckedProgram, hwd: HardwareDescription,
                _stack: tuple[str, ...] = ()) -> KernelFacts:
    """Gather the facts of `function` of the checked program, analysed at description
    `hwd`."""
    from mcl.feedback.facts.symbolic import SymbolicEvaluator
    from mcl.feedback.program_view import ProgramView

    view = ProgramView.of(checked.program, function)
    spaces = SpaceFacts(hwd, function)
    names = Names(checked.tables)
    builder = _Builder(function, hwd, spaces, view, names)
    scope = Scope(None, None, None, names)
    for const in view.constants():
        b = builder.bind(const.name, "constant", const.type, const, scope, (), const,
                         const.init)
        scope = scope.declare(b)
    params = []
    for p in function.params:
        b = builder.bind(p.name, "param", p.type, p, scope, (), p)
        params.append(b)
        scope = scope.declare(b)
    for b in params:  # array sizes may name any parameter of the signature
        b.scope = scope
    builder.block(function.body.stmts, scope, (), ())

    evaluator = SymbolicEvaluator(hwd, builder.bindings, builder.loops)
    facts = KernelFacts(function, hwd, checked, params, builder.bindings, builder.loops,
                        builder.items, builder.accesses, evaluator, view,
                        view.param_modes(function), spaces, (*_stack, function.name))
    return facts
