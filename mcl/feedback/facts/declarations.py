"""The records of one function's walk (mcl.feedback.facts.kernel): the names it
declares (`DeclaredName`), the scopes that say what a name means at a point, its loops,
the `if`s around its statements, its items (statements and loop-header parts) and their
accesses. Plain records of the syntax tree: the symbolic evaluator
(mcl.feedback.facts.symbolic) reads them without importing the walk that builds them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Span
from mcl.identity import Ref
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.mcpl.sidetables import SideTables


# Roles of an operation inside an item: in the value it computes, or inside array
# subscripts (paper 6.2: indexing is overhead, not computation).
VALUE, INDEX = "value", "index"

# Item kinds: a simple statement, or one part of a loop / if header.
STMT, INIT, COND, STEP, COUNT, IF = "stmt", "init", "cond", "step", "count", "if"


@dataclass(eq=False)
class Names:
    """The bindings of one function's walk by declaration: the checker's side tables say
    which declaration a name use stands for, this says which `DeclaredName` of the walk that
    declaration is."""

    tables: SideTables
    by_declaration: dict[Ref[Any], DeclaredName] = field(default_factory=dict)
    # Nodes the walk made itself (the declared name of an initialised scalar, as the
    # access that writes it), which the checker never saw.
    made: dict[Ref[ast.Expr], DeclaredName] = field(default_factory=dict)
    # The variables a `for (k = 0; ...)` reuses as its index: only their uses look for
    # the loop that carries them (`Scope.lookup`).
    reused: set[DeclaredName] = field(default_factory=set)

    def declared(self, use: ast.Expr) -> DeclaredName | None:
        checked = self.tables.binding_of(use) if isinstance(use, ast.Name) else None
        if checked is None:
            return self.made.get(Ref(use))
        return self.by_declaration.get(Ref(checked.node))


@dataclass(eq=False)
class Scope:
    """An immutable link in the chain of declarations made by one point of the walk; a
    snapshot is just a reference, so items remember exactly what their names meant.

    It is not a binding table: which declaration a name use stands for is the checker's
    (`Names`). A scope holds what feedback adds to it, the variable that carries a
    declaration's value along the path at this point: inside `for (k = 0; ...)` the
    loop's own index `k`, whose value the symbolic evaluator follows iteration by
    iteration, where the checker's `k` is the variable declared before the loop; and,
    by name, the binding behind a symbol of a symbolic value (SymPy symbols carry names,
    not nodes: `named`)."""

    name: str | None
    binding: DeclaredName | None
    parent: Scope | None
    names: Names | None = None  # None: an empty scope, outside every function

    def lookup(self, use: ast.Expr) -> DeclaredName | None:
        """The binding whose value the name `use` reads here."""
        declared = self.names.declared(use) if self.names is not None else None
        if declared is None or self.names is None or declared not in self.names.reused:
            return declared
        scope: Scope | None = self
        while scope is not None:  # a `for (k = 0; ...)` around this point carries k
            carrier = scope.binding
            if carrier is not None and carrier.reuses is not None \
                    and carrier.origin is declared:
                return carrier
            scope = scope.parent
        return declared

    def lookup_root(self, e: ast.Expr) -> DeclaredName | None:
        """`lookup` of the array or struct an access (`a[i].x`) reads."""
        while isinstance(e, (ast.Index, ast.Field)):
            e = e.base
        return self.lookup(e)

    def named(self, name: str) -> DeclaredName | None:
        """The innermost binding called `name` declared by this point."""
        scope: Scope | None = self
        while scope is not None:
            if scope.name == name:
                return scope.binding
            scope = scope.parent
        return None

    def declare(self, binding: DeclaredName) -> Scope:
        return Scope(binding.name, binding, self, self.names)


@dataclass(frozen=True, eq=False)
class Guard:
    """An `if` around a statement: the branch it is in and the scope of the condition."""

    node: ast.If
    then: bool
    scope: Scope

    @property
    def cond(self) -> ast.Expr:
        return self.node.cond

    @property
    def span(self) -> Span | None:
        return self.node.span


@dataclass(eq=False)
class Write:
    """One place where a binding is written (assignment, ++, swap, call argument)."""

    item: Item
    target: ast.Expr | None  # the lvalue (None when a call writes a whole array)
    value: ast.Expr | None  # the assigned expression, None when not a plain assignment


@dataclass(eq=False)
class DeclaredName:
    """A declared name: parameter, local variable or array, loop index, view or constant."""

    name: str
    kind: str  # "param" | "local" | "loop" | "view" | "constant"
    type: ast.Type | None
    node: Any
    span: Span | None
    space: str | None  # resolved memory space (declared, or the default, hdl.md 3.2)
    loops: tuple[Loop, ...]  # loops around the declaration
    scope: Scope | None  # names visible to its initialiser
    init: ast.Expr | None = None
    storage: DeclaredName | None = None  # a view names the memory of another array
    part: ast.Expr | None = None  # what a view of a part views (`a[i]`, `b.data`)
    loop: Loop | None = None  # the loop it indexes, for loop variables
    writes: list[Write] = field(default_factory=list)
    # `for (k = 0; ...)`: the variable declared before the loop whose name the loop's
    # index takes inside it
    reuses: DeclaredName | None = None
    # `for_loops_around_writes`, with the number of writes it was made from
    _write_loops: tuple[int, frozenset[Loop]] | None = field(default=None, init=False, repr=False)

    def for_loops_around_writes(self) -> frozenset[Loop]:
        """The for-loops around any write of this name, made once (and again if it has
        gained writes since): made for every read, N reads and N writes of an array were
        quadratic. Kept on the name itself, so that it goes when the facts go."""
        kept = self._write_loops
        if kept is None or kept[0] != len(self.writes):
            kept = self._write_loops = (len(self.writes), frozenset(
                loop for write in self.writes for loop in write.item.loops
                if loop.kind == "for"))
        return kept[1]

    @property
    def origin(self) -> DeclaredName:
        """The declared variable behind a loop index that reuses it (through a `for (k =
        ...)` inside another); the binding itself otherwise."""
        b = self
        while b.reuses is not None:
            b = b.reuses
        return b

    @property
    def is_array(self) -> bool:
        return isinstance(self.type, ast.ArrayType)

    @property
    def root(self) -> DeclaredName:
        return self.storage.root if self.storage is not None else self

    @property
    def prefix(self) -> tuple[ast.Expr, ...]:
        """The subscripts that select, in the root's storage, the part a view views: those
        of `a[i] as float[4][4] d` (and of the views it views), outermost first. An
        access `d[x][y]` is an access of `a` at `prefix + (x, y)`: the view's accesses
        are accesses of the underlying array (mcpl.md 4)."""
        if self.storage is None:
            return ()
        own = access_subscripts(self.part)[0] if self.part is not None else ()
        return self.storage.prefix + own

    @property
    def through_field(self) -> bool:
        """Does a view (or a view it views) view a field (`b.data as ...`)? Its elements
        then lie inside records: their offset is not a count of its elements."""
        if self.storage is None:
            return False
        step = self.part
        while isinstance(step, ast.Index | ast.Field):  # the chain, not its subscripts
            if isinstance(step, ast.Field):
                return True
            step = step.base
        return self.storage.through_field

    @property
    def single_assignment(self) -> bool:
        """A scalar whose only definition is its initialiser: its value can be
        substituted wherever it is used (`int j = bj * nrThreadsM + tj;`)."""
        return self.kind in ("local", "constant") and self.init is not None and not self.writes

    def __repr__(self) -> str:
        return f"DeclaredName({self.name!r}, {self.kind})"


@dataclass(eq=False)
class Loop:
    """A `foreach` or `for` statement. `parents` are the loops around it, outermost
    first. Trip counts and the loop variable's value are filled in by the SymbolicEvaluator."""

    kind: str  # "foreach" | "for"
    node: ast.Foreach | ast.For
    var: DeclaredName
    parents: tuple[Loop, ...]
    guards: tuple[Guard, ...]
    scope: Scope  # names visible in the header (outer scope)
    body_scope: Scope  # names visible in the body (with the loop variable)

    @property
    def group(self) -> str | None:
        return self.node.group if isinstance(self.node, ast.Foreach) else None

    @property
    def name(self) -> str:
        return self.var.name

    @property
    def span(self) -> Span | None:
        return self.node.span

    @property
    def label(self) -> str:
        line = f" (line {self.span.line})" if self.span else ""
        if self.kind == "foreach":
            return f"foreach {self.name} in {self.group}{line}"
        return f"for {self.name}{line}"

    def __repr__(self) -> str:
        return f"Loop({self.kind} {self.name})"


@dataclass(eq=False)
class Access:
    """An access to an array element (or a struct field of one), or to a scalar that lives
    in addressable memory. `indices` are all subscripts, outermost bracket group first
    (`d2[ti, tj][ei, ej]` -> ti, tj, ei, ej)."""

    node: ast.Expr
    binding: DeclaredName
    mode: str  # "r" | "w" | "rw"
    indices: tuple[ast.Expr, ...]
    item: Item
    role: str  # VALUE or INDEX: a load inside a subscript is an indexing load
    field: str | None = None

    @property
    def element(self) -> bool:
        return bool(self.indices)

    @property
    def space(self) -> str | None:
        return self.binding.root.space

    @property
    def reads(self) -> bool:
        return "r" in self.mode

    @property
    def writes(self) -> bool:
        return "w" in self.mode


@dataclass(eq=False)
class Item:
    """A statement, or one part of a loop or if header, executed as a unit.

    `loops` are the loops around it; a loop's own header items (`init`, `cond`, `step`,
    `count`) stand outside it and name it in `loop`. `ops` counts arithmetic operations
    per execution by role; loads and stores are its `accesses`, and the costs of called
    MCPL functions are added from their own facts (`calls`)."""

    kind: str
    node: Any
    scope: Scope
    loops: tuple[Loop, ...]
    guards: tuple[Guard, ...]
    loop: Loop | None = None
    defs: set[DeclaredName] = field(default_factory=set)
    value_uses: set[DeclaredName] = field(default_factory=set)
    index_uses: set[DeclaredName] = field(default_factory=set)
    ops: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    accesses: list[Access] = field(default_factory=list)
    calls: list[tuple[ast.Call, str]] = field(default_factory=list)  # (call, role)
    returns: bool = False
    notes: list[str] = field(default_factory=list)  # reasons its costs are approximate

    @property
    def span(self) -> Span | None:
        return getattr(self.node, "span", None)

    @property
    def on_host(self) -> bool:
        return not any(loop.kind == "foreach" for loop in self.loops) and not (
            self.loop is not None and self.loop.kind == "foreach"
        )


def access_subscripts(e: ast.Expr) -> tuple[tuple[ast.Expr, ...], str | None]:
    """All subscripts of an access, outermost bracket group first, and its field name."""
    field_name = None
    if isinstance(e, ast.Field):
        field_name = e.name
        e = e.base
    groups: list[tuple[ast.Expr, ...]] = []
    while isinstance(e, ast.Index):
        groups.append(e.indices)
        e = e.base
        while isinstance(e, ast.Field):  # a field of a struct element inside a chain
            e = e.base
    out: list[ast.Expr] = []
    for g in reversed(groups):
        out.extend(g)
    return tuple(out), field_name


def array_rank(b: DeclaredName) -> int:
    return b.type.rank if isinstance(b.type, ast.ArrayType) else 0


def dims(b: DeclaredName) -> tuple[ast.Expr, ...]:
    """The extents of all dimensions of an array, outermost bracket group first."""
    if not isinstance(b.type, ast.ArrayType):
        return ()
    return tuple(d for group in b.type.dims for d in group)
