"""The typed MCPL abstract syntax tree: the truth every pass works on.

textX parses; `mcl.mcpl.build` converts the textX model once into these frozen dataclasses.
Passes never touch textX objects and never mutate a tree: they build new ones with
`dataclasses.replace`. Passes traverse the tree with `mcl.mcpl.visitor` (`NodeVisitor`,
`StrictVisitor`) or, for simple searches, with `walk`/`children` below, and rewrite it with
`transform` below; all of them raise `UnknownNodeError` on an object whose class is not
in `NODE_CLASSES`, so a node kind the passes were not taught fails loudly.

Equality ignores source spans (`span` is declared with `compare=False`), so the
round-trip property `parse(print(ast)) == ast` can be tested directly.

Shapes worth knowing:
- `float[n, m] c`        -> ArrayType(Prim('float'), dims=((n, m),))
- `float[h][w] img`      -> ArrayType(Prim('float'), dims=((h,), (w,)))
- `int[2,2][3,3] d2`     -> ArrayType(Prim('int'), dims=((2, 2), (3, 3)))  (2x2 tiles of 3x3)
- `c[i, j]`              -> Index(Name('c'), (i, j))
- `d2[ti, tj][ei, ej]`   -> Index(Index(Name('d2'), (ti, tj)), (ei, ej))
- `input[i].r`           -> Field(Index(Name('input'), (i,)), 'r')
- `gpu.hierarchy.blocks.block.threads.max_nr_units` -> HwdConst(('gpu', 'hierarchy', ...))
- `foreach (int i in n threads) S` -> Foreach('i', Name('n'), 'threads', S)
- `for (int k = 0; k < p; k++) S`  -> For(Decl(...k...), Binary('<', k, p), IncDec(k, '++'), S)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields, replace
from typing import TypeVar, Union, get_args, get_type_hints

from mcl.diagnostics import Span


def _span() -> Span | None:
    return field(default=None, compare=False, repr=False, kw_only=True)


# --------------------------------------------------------------------------- types


@dataclass(frozen=True)
class Prim:
    """A primitive type: void, int, float, double, byte, bool."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class NamedType:
    """A user type (CamelCase), possibly with arguments: `Tile(16)`."""

    name: str
    args: tuple[Expr, ...] = ()
    span: Span | None = _span()


@dataclass(frozen=True)
class ArrayType:
    """A (possibly tiled) multi-dimensional array. `dims` holds one tuple per bracket group,
    outermost group first; each tuple holds the sizes of that group's dimensions."""

    element: Prim | NamedType
    dims: tuple[tuple[Expr, ...], ...]
    span: Span | None = _span()

    @property
    def rank(self) -> int:
        """Total number of indices needed to reach an element (all groups together)."""
        return sum(len(g) for g in self.dims)


Type = Union[Prim, NamedType, ArrayType]

# --------------------------------------------------------------------------- expressions


@dataclass(frozen=True)
class IntLit:
    """An int literal."""

    value: int
    span: Span | None = _span()


@dataclass(frozen=True)
class FloatLit:
    """A float literal."""

    value: float
    text: str = field(default="", compare=False)  # original spelling, kept for printing
    span: Span | None = _span()


@dataclass(frozen=True)
class BoolLit:
    """`true` or `false`."""

    value: bool
    span: Span | None = _span()


@dataclass(frozen=True)
class Name:
    """A reference to a variable, parameter or constant."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class HwdConst:
    """A hardware-description constant read in code, e.g.
    `gpu.hierarchy.blocks.block.threads.max_nr_units`; path[0] is the description name."""

    path: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Index:
    """One bracket group of indices applied to `base`."""

    base: Expr
    indices: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Field:
    """`base.name`: a field of a value of a user type."""

    base: Expr
    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    """`func(args)`: a call of a function or a built-in."""

    func: str
    args: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Unary:
    """`-operand` or `!operand`."""

    op: str  # '-' or '!'
    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Binary:
    """Binary operation. op is one of:
    || && | & == != < <= > >= << >> + - * / % ^   (^ is power, right-associative)."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


Expr = Union[IntLit, FloatLit, BoolLit, Name, HwdConst, Index, Field, Call, Unary, Binary]

# Precedence table shared by parser tests and the pretty-printer (higher binds tighter).
BINARY_PRECEDENCE: dict[str, int] = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "&": 4,
    "==": 5,
    "!=": 5,
    "<": 6,
    "<=": 6,
    ">": 6,
    ">=": 6,
    "<<": 7,
    ">>": 7,
    "+": 8,
    "-": 8,
    "*": 9,
    "/": 9,
    "%": 9,
    "^": 11,  # power, right-associative
}
# Unary `-` and `!` bind tighter than every binary operator, `^` included, as in the
# original MCL and C: `-a ^ 2` is `(-a) ^ 2`.
UNARY_PRECEDENCE = 12
RIGHT_ASSOCIATIVE = frozenset({"^"})
NON_ASSOCIATIVE = frozenset({"==", "!=", "<", "<=", ">", ">="})  # comparisons do not chain

# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Decl:
    """`[const] [space...] TYPE NAME [= init] [as TYPE2 NAME2];`

    `spaces` are the memory-space modifiers in source order (`reg main float r` gives
    ('reg', 'main')). `view` is an optional second shape for the same storage."""

    type: Type
    name: str
    spaces: tuple[str, ...] = ()
    const: bool = False
    init: Expr | None = None
    view: View | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class View:
    """`as float[n/t][t] a2` — another shape for existing storage."""

    type: ArrayType
    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class ViewDecl:
    """Statement `a as float[n/t][t] a2;` declaring a view of existing array `source`.

    `part` is set for a view of a part of `source`, as the original MCL writes it: an
    element or a field (`a[i] as float[4][4] d;`, `b.data as float[4][4] d;`). It is the
    part's expression, rooted at `source`; its subscripts are evaluated where the view is
    declared, as for a part passed to a function (mcpl.md 4)."""

    source: str
    view: View
    span: Span | None = _span()
    part: Expr | None = None

    @property
    def viewed(self) -> Expr:
        """What the view views: the part, or the whole array as a name."""
        return self.part if self.part is not None else Name(self.source, span=self.span)


@dataclass(frozen=True)
class Assign:
    """`target OP value;` with OP one of = += -= *= /= %= <<= >>=."""

    target: Expr
    op: str
    value: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class IncDec:
    """`target++` or `target--`."""

    target: Expr
    op: str  # '++' or '--'
    span: Span | None = _span()


@dataclass(frozen=True)
class CallStmt:
    """A call as a statement."""

    call: Call
    span: Span | None = _span()


@dataclass(frozen=True)
class Swap:
    """`swap(left, right)`."""

    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class If:
    """`if (cond) then else orelse`."""

    cond: Expr
    then: Stmt
    orelse: Stmt | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class For:
    """`for (init; cond; step) body`; init is a Decl (`int k = 0`) or an Assign (`k = 0`);
    step is an IncDec or a compound Assign (`k += 2`)."""

    init: Decl | Assign
    cond: Expr
    step: IncDec | Assign
    body: Stmt
    span: Span | None = _span()

    @property
    def var(self) -> str:
        init = self.init
        return init.name if isinstance(init, Decl) else _target_name(init.target)


@dataclass(frozen=True)
class Foreach:
    """`foreach (int var in count group) body` — `count` units of par_group `group`."""

    var: str
    count: Expr
    group: str
    body: Stmt
    span: Span | None = _span()


@dataclass(frozen=True)
class Barrier:
    """`barrier(space)`."""

    space: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Return:
    """`return` or `return value`."""

    value: Expr | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class Block:
    """`{ stmts }`."""

    stmts: tuple[Stmt, ...]
    span: Span | None = _span()


Stmt = Union[
    Decl, ViewDecl, Assign, IncDec, CallStmt, Swap, If, For, Foreach, Barrier, Return, Block
]


@dataclass(frozen=True)
class Launch:
    """Host-program statement made by code generation, never by the parser: run kernel
    number `kernel` of the function here (it stands where the top-level foreach stood).
    Not a `Stmt`: only the host passes of code generation meet it."""

    kernel: int
    span: Span | None = _span()

# --------------------------------------------------------------------------- top level


@dataclass(frozen=True)
class Param:
    """A function or type parameter: `[const] [space...] TYPE NAME`."""

    type: Type
    name: str
    spaces: tuple[str, ...] = ()
    const: bool = False
    span: Span | None = _span()


@dataclass(frozen=True)
class Function:
    """`HWD RET NAME(PARAMS) BODY` — `hwd` is the level the function is written for."""

    hwd: str
    ret: Type
    name: str
    params: tuple[Param, ...]
    body: Block
    span: Span | None = _span()


@dataclass(frozen=True)
class TypeDef:
    """`type Name(params) { fields }`."""

    name: str
    params: tuple[Param, ...]
    fields: tuple[Decl, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Import:
    """`import a.b.c;` — a module (dotted path) or a hardware description (single name)."""

    path: tuple[str, ...]
    span: Span | None = _span()

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Module:
    """One source file. `package`/`name` are None for a lone file without those lines (the
    loader then uses the file stem). `exports` is None when there is no export line
    (everything is visible)."""

    package: tuple[str, ...] | None
    name: str | None
    exports: tuple[str, ...] | None
    imports: tuple[Import, ...]
    constants: tuple[Decl, ...]
    types: tuple[TypeDef, ...]
    functions: tuple[Function, ...]
    file: str = field(default="", compare=False)
    span: Span | None = _span()

    def function(self, name: str) -> Function | None:
        return next((f for f in self.functions if f.name == name), None)


Node = Union[Type, Expr, Stmt, Launch, Param, Function, TypeDef, Import, Module, View]

# Every node class of the tree. Traversals check membership so that an object of any other
# class (a node kind added without teaching the passes, a stray textX object) stops the
# pass with an error instead of being skipped.
NODE_CLASSES: frozenset[type] = frozenset(get_args(Node))


class UnknownNodeError(TypeError):
    """A traversal met an object that is not an MCPL AST node, or a pass met a node kind
    it has no rule for. Always a bug in the compiler, never a user error."""


def check_node(node: object) -> None:
    """Raise `UnknownNodeError` unless `node` is an instance of one of `NODE_CLASSES`."""
    if type(node) not in NODE_CLASSES:
        raise UnknownNodeError(f"{type(node).__qualname__} is not an MCPL AST node kind")

# --------------------------------------------------------------------------- walking helpers

T = TypeVar("T")


def _target_name(e: Expr) -> str:
    while isinstance(e, (Index, Field)):
        e = e.base
    return e.name if isinstance(e, Name) else "?"


def root_name(e: Expr) -> str | None:
    """The variable an lvalue/access expression ultimately refers to (`c` for `c[i].r`)."""
    while isinstance(e, (Index, Field)):
        e = e.base
    return e.name if isinstance(e, Name) else None


def _node_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold child nodes, looked up once per class:
    `children` runs for every node of every pass (a fifth of the check of a long kernel).
    Those declared to hold a node or a tuple of them; never `span`, nor names, operators
    and values (`Name.name`, `Binary.op`, `IntLit.value`), which most nodes are made of."""
    names = _NODE_FIELDS.get(cls)
    if names is None:
        try:
            hints = get_type_hints(cls)
        except (NameError, TypeError):  # an annotation that does not resolve: look at all
            hints = {}
        names = tuple(f.name for f in fields(cls) if f.name != "span"
                      and (f.name not in hints or _may_hold_node(hints[f.name])))
        _NODE_FIELDS[cls] = names
    return names


def _may_hold_node(annotation: object) -> bool:
    """Does a field of this type hold a node class somewhere (alone, in a union, in a
    tuple)?"""
    if annotation in NODE_CLASSES:
        return True
    return any(_may_hold_node(arg) for arg in get_args(annotation))


_NODE_FIELDS: dict[type, tuple[str, ...]] = {}


def children(node: object) -> Iterator[object]:
    """Direct child nodes of any AST node (dataclass fields that are nodes or tuples of nodes).
    Raises `UnknownNodeError` for an object that is not an AST node."""
    return iter(_children(node))


# What is found once about a node's subtree (its children, the names in it): nodes are
# frozen (no field changes after construction), so what a subtree holds never changes, and
# the check walks the same function's tree about ten times per edit. Kept in the
# instance's `__dict__`, beside the fields: equality, hashing, `replace` and `asdict` read
# only the fields. An unchanged definition keeps its nodes across the language server's
# edits (mcl.mcpl.parse.reuse_definitions), and with them what was found here.
def kept_on(node: object, key: str, compute: Callable[[], T]) -> T:
    """`compute()`, found once per node under `key` (a pure function of the subtree below
    `node`; the caller returns a copy of anything mutable). An object without a `__dict__`
    keeps nothing."""
    kept = getattr(node, "__dict__", None)
    if kept is None:
        return compute()
    if key not in kept:
        kept[key] = compute()
    return kept[key]


def kept_union(node: object, key: str, children_of: Callable[[object], list[object]],
               own: Callable[[object], Iterable[str]]) -> frozenset[str]:
    """`own(node)` with the same of every node `children_of` gives below it, found once
    per node and kept under `key` (`kept_on`'s place): a question each loop of a nest
    asks of its body, where a walk of the subtree per node would take time quadratic in
    the nest's depth (a generated nest of 500 loops). Iterative, and stopping at the
    subtrees already done: no recursion on a deep tree."""
    stack: list[tuple[object, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        kept = current.__dict__
        if key in kept:
            continue
        below = children_of(current)
        if not expanded:
            stack.append((current, True))
            stack.extend((c, False) for c in below if key not in c.__dict__)
            continue
        kept[key] = frozenset(own(current)).union(*(c.__dict__[key] for c in below))
    return node.__dict__[key]


def _children(node: object) -> list[object]:
    """`children` as a list: a generator per node was half of the time of every walk."""
    try:
        return list(node.__dict__["_children"])  # (as `kept_on` keeps, read inline)
    except (AttributeError, KeyError):
        pass  # not found yet (or not a node: check_node says so)
    cls = type(node)
    if cls not in NODE_CLASSES:
        check_node(node)
    out: list[object] = []
    for name in _node_fields(cls):
        value = getattr(node, name)
        if isinstance(value, tuple):
            for item in value:
                if isinstance(item, tuple):
                    out.extend(x for x in item if hasattr(x, "__dataclass_fields__"))
                elif hasattr(item, "__dataclass_fields__"):
                    out.append(item)
        elif hasattr(value, "__dataclass_fields__"):
            out.append(value)
    node.__dict__["_children"] = tuple(out)
    return out


def walk(node: object) -> Iterator[object]:
    """Pre-order traversal of all nodes below and including `node`."""
    if type(node) in _KEPT_WALKS:
        kept = node.__dict__.get("_walk")  # (as `kept_on` keeps, read inline)
        if kept is None:
            kept = node.__dict__["_walk"] = _flat_walk(node)
        return iter(kept)
    return _walk(node)


# The nodes whose walks are kept (`kept_on`): the check's passes each walk the function,
# its foreach statements and their bodies again (about twenty walks of a long kernel per
# edit). Only functions and compound statements: a walk kept at every level of a long
# operator chain would take memory quadratic in its length.
_KEPT_WALKS: frozenset[type] = frozenset({Function, Block, Foreach, For, If})


def _flat_walk(node: object) -> tuple[object, ...]:
    """`walk(node)` as a tuple, taking the kept walks of the statements below whole."""
    out: list[object] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current is not node and type(current) in _KEPT_WALKS:
            kept = current.__dict__.get("_walk")
            if kept is not None:
                out.extend(kept)
                continue
        out.append(current)
        kids = _children(current)
        if kids:
            kids.reverse()
            stack.extend(kids)
    return tuple(out)


def _walk(node: object) -> Iterator[object]:
    # An explicit stack, not `yield from walk(child)`: nested generators cost O(depth) per
    # node, quadratic on the long operator chains of generated code (a sum of 3000 terms).
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        kids = _children(current)
        if kids:
            kids.reverse()
            stack.extend(kids)


def post_order(node: object) -> Iterator[tuple[object, tuple[object, ...]]]:
    """Every node below and including `node` with its children, each after all of its
    children: what a pass that builds a node's result from its children's walks. An
    explicit stack, as `walk`, and each node's children listed once."""
    stack: list[tuple[object, tuple[object, ...] | None]] = [(node, None)]
    while stack:
        current, kids = stack.pop()
        if kids is None:
            kids = tuple(_children(current))
            stack.append((current, kids))
            stack.extend((kid, None) for kid in kids)
        else:
            yield current, kids


def has_foreach(f: Function) -> bool:
    """Does `f` hold foreach statements (a kernel, run on the device, rather than a host
    or device function)?"""
    return any(isinstance(n, Foreach) for n in walk(f.body))


def transform(node: T, fn: Callable[[object], object | None],
              moved: Callable[[object, object], None] | None = None) -> T:
    """Bottom-up rebuild: children are transformed first, then `fn(new_node)` may return a
    replacement (or None to keep it). Never mutates the input; raises `UnknownNodeError`
    on an object that is not an AST node. `moved(old, new)` is told of every node that
    the result has in another node's place (rebuilt around a changed child, or
    replaced), so that a table about the old node's place can follow it (the checker's
    side tables follow a rewrite this way: `SideTables.rewrite`)."""
    check_node(node)
    changes = {}
    # check_node says `node` is an AST node, a dataclass; `T` is bound to no dataclass type,
    # so mypy cannot see it (here and below)
    for f in fields(node):  # type: ignore[arg-type]
        if f.name == "span":
            continue
        value = getattr(node, f.name)
        new = _transform_value(value, fn, moved)
        if new is not value:
            changes[f.name] = new
    # `node` is a dataclass (above)
    rebuilt = replace(node, **changes) if changes else node  # type: ignore[type-var]
    result = fn(rebuilt)
    out = rebuilt if result is None else result
    if moved is not None and out is not node:
        moved(node, out)
    # `fn` gives a node of `node`'s place; its signature says `object`
    return out  # type: ignore[return-value]


def _transform_value(value: object, fn: Callable[[object], object | None],
                     moved: Callable[[object, object], None] | None) -> object:
    if hasattr(value, "__dataclass_fields__"):
        return transform(value, fn, moved)
    if isinstance(value, tuple):
        items = tuple(_transform_value(v, fn, moved) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value
