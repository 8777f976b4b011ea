"""Elements and fields of local arrays and structs read where no statement has set them
(docs/checker.md, "Uninitialised variables").

The scalar check (`mcl.mcpl.uninitialised`) follows paths. Arrays and user types are set
element by element, mostly in loops (`for (k = 0; k < 8; k++) sums[k] = 0.0;`), so a rule
along paths would call every element after such a loop "maybe unset". This check asks
instead which elements (which fields) a statement *may* have set before a read, and
reports a read of one outside that set, which no path gives a value (the generated
OpenCL reads whatever the private or local memory held):

- a local array no statement writes (`float[4] t; a[i] = t[i % 4];`; a `local` tile
  that no unit fills);
- an element no write reaches: writes and reads are enumerated over the for loops around
  them whose ends are constants (`for (q = 0; q < 2; q++) t[q] = ...` sets t[0] and t[1],
  so `t[2]` is unset), and over foreach statements of constant count;
- a field of a local struct that no statement sets (`p.x = 1.0; a[i] = p.y;`);
- a read that comes before every write of what it reads (`x = t[0]; t[0] = 1.0;`).

"Before" is program order, widened wherever a later write may still come first: every
write of a for loop counts for every read in it (an earlier iteration), and inside a
foreach whose units share the array (one declared outside that foreach) every write up
to the next barrier at the top of its body counts (another unit may run ahead to there;
MCL paper section 4.3: units meet only at a barrier). Both branches of an `if` count as
before what follows them. A read is reported only when it is certain: every element it
may read lies outside what may have been set before it, or nothing of the variable has
been set before it at all. A read that only some paths reach unset (a write under an
`if`, or in a loop that may run no iteration) is left alone, and so is an array or
struct passed whole (to a function, a view, another variable) or declared twice in the
function.
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

from mcl.diagnostics import Diagnostic, error
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.extents import index_value
from mcl.mcpl.printer import print_expr
from mcl.mcpl.varying import assigned_names
from mcl.mcpl.visitor import unknown_node

MAX_VALUES = 4096  # combinations of loop values enumerated for one subscript tuple

Element = tuple[int, ...]
Part = tuple[int | str, ...]  # an element, or a field of a struct as ("x",)


@dataclass
class _Candidate:
    """A local array of constant extents, or a local struct, declared without a value."""

    decl: ast.Decl
    rank: int  # subscripts to an element (0 for a struct)
    written: set[Element] = field(default_factory=set)  # elements (fields: (k,)) set
    fields: set[str] = field(default_factory=set)  # the fields of a struct set
    unknown: bool = False  # a write the enumeration cannot list: no element is sure unset


def unset_element_errors(function: ast.Function, constants: Mapping[str, int] | None = None
                         ) -> list[Diagnostic]:
    """An error for each local array or struct of `function` read at an element or field
    that no statement sets, or that no statement can have set before the read;
    `constants`: the program's integer constants."""
    known = {k: v for k, v in (constants or {}).items()
             if isinstance(v, int) and not isinstance(v, bool)}
    for p in function.params:
        known.pop(p.name, None)
    candidates = _candidates(function, known)
    if not candidates:
        return []
    walk = _Accesses(known)
    accesses = list(walk.walk(function.body))
    by_root: dict[str, list[_Access]] = {}
    for access in accesses:
        if access.root in candidates:
            by_root.setdefault(access.root, []).append(access)
    found: list[Diagnostic] = []
    for name, mine in by_root.items():
        c = candidates[name]
        writes = [a for a in mine if a.write]
        for access in writes:
            _record_write(c, access)
        reads = [a for a in mine if not a.write]
        for read in _reads_before_writes(c, reads, writes, walk.depths.get(name, 0)):
            message = _unset_read(c, read) if not c.unknown else None
            if message is None:
                message = _read_first(c, read, writes)
            if message is not None:
                found.append(error(
                    "mcpl-uninitialised", message, read.node.span,
                    f"set '{c.decl.name}' before reading it (no statement before this read, "
                    "nor a loop or another unit that may run first, writes what it reads)"))
                break
    return found
def _candidates(function: ast.Function, constants: Mapping[str, int]
                ) -> dict[str, _Candidate]:
    declared: dict[str, list[ast.Decl]] = {}
    for n in ast.walk(function.body):
        if isinstance(n, ast.Decl):
            declared.setdefault(n.name, []).append(n)
    params = {p.name for p in function.params}
    whole = _used_whole(function.body)
    found: dict[str, _Candidate] = {}
    for name, decls in declared.items():
        if len(decls) != 1 or name in params or name in whole:
            continue
        d = decls[0]
        if d.init is not None or d.view is not None:
            continue
        if isinstance(d.type, ast.NamedType):
            found[name] = _Candidate(d, 0)
        elif isinstance(d.type, ast.ArrayType) and all(
                isinstance(index_value(size, constants), int)
                for group in d.type.dims for size in group):
            found[name] = _Candidate(d, d.type.rank)
    return found


def _used_whole(body: ast.Stmt) -> set[str]:
    """The variables named other than as the root of an element or a field: passed to a
    function, assigned whole, viewed (`t as float[2][2] v`)."""
    roots: set[Ref[ast.Name]] = set()
    names: list[ast.Name] = []
    for n in ast.walk(body):
        match n:
            case ast.Index(base=ast.Name() as root) | ast.Field(base=ast.Name() as root):
                roots.add(Ref(root))
            case ast.Name():
                names.append(n)
            case ast.ViewDecl():
                names.append(ast.Name(n.source))
    return {n.name for n in names if Ref(n) not in roots}


@dataclass(eq=False)
class _Window:
    """A stretch of the walk in which a write may come before a read that precedes it in
    the text: a for loop (an earlier iteration), or the part of a foreach body up to its
    next top-level barrier (another unit may run ahead to there)."""

    foreach_depth: int | None  # for a foreach: the foreach statements around it; None: a loop
    end: int = -1  # the number of the last access inside it


@dataclass(frozen=True)
class _Access:
    """An element or field of a local variable, read or written, with the values its
    subscripts take (None: not enumerable), numbered in program order."""

    root: str
    node: ast.Expr
    write: bool
    subscripts: tuple[ast.Expr, ...]
    first_field: str | None  # the field right after the root (`p.y`), if any
    elements: frozenset[Element] | None
    seq: int = 0
    windows: tuple[_Window, ...] = ()

    def horizon(self, declared_depth: int) -> int:
        """The number of the last access whose write may come before this one, for a
        variable declared inside `declared_depth` foreach statements (the units of those
        have copies of their own: only foreach statements inside them share it)."""
        return max([self.seq] + [w.end for w in self.windows
                                 if w.foreach_depth is None or w.foreach_depth >= declared_depth])


class _Accesses:
    """Every access chain (`t[q]`, `p.x`, `ps[0].x`) of the body, with the values of the
    for loops (constant ends) and foreach statements (constant count) around it."""

    def __init__(self, constants: Mapping[str, int]) -> None:
        self.constants = dict(constants)
        self.seq = 0  # the number of the next access
        self.windows: list[_Window] = []  # the windows open at this point of the walk
        self.foreach_depth = 0  # the foreach statements around this point
        self.depths: dict[str, int] = {}  # each declared name: the foreach statements around it

    def opened(self, foreach_depth: int | None) -> _Window:
        window = _Window(foreach_depth)
        self.windows.append(window)
        return window

    def close(self, window: _Window) -> None:
        window.end = self.seq - 1
        self.windows.remove(window)

    def walk(self, body: ast.Stmt) -> Iterator[_Access]:
        yield from self.stmt(body, {})

    def stmt(self, s: ast.Stmt | None, loops: dict[str, list[int]]) -> Iterator[_Access]:
        match s:
            case None | ast.Barrier():
                return
            case ast.Block():
                for one in s.stmts:
                    yield from self.stmt(one, loops)
            case ast.For():
                yield from self.stmt(s.init, loops)
                window = self.opened(None)  # (the condition is read again after each step)
                yield from self.reads(s.cond, loops)
                inner = dict(loops)
                values = self.loop_values(s)
                if values is None:
                    inner.pop(s.var, None)
                else:
                    inner[s.var] = values
                yield from self.stmt(s.body, inner)
                yield from self.stmt(s.step, inner)
                self.close(window)
            case ast.Foreach():
                yield from self.reads(s.count, loops)
                inner = dict(loops)
                count = index_value(s.count, self.constants)
                if isinstance(count, int) and 1 <= count <= MAX_VALUES:
                    inner[s.var] = list(range(count))
                else:
                    inner.pop(s.var, None)
                yield from self.units(s, inner)
            case ast.If():
                yield from self.reads(s.cond, loops)
                yield from self.stmt(s.then, loops)
                yield from self.stmt(s.orelse, loops)
            case ast.Decl():
                self.depths[s.name] = self.foreach_depth
                yield from self.reads(s.init, loops)
            case ast.ViewDecl():
                yield from self.reads(s.part, loops)
            case ast.Assign():
                # in the order they happen: a compound assignment reads its target first
                yield from self.reads(s.value, loops)
                if s.op != "=":
                    yield from self.reads(s.target, loops)
                yield from self.target(s.target, loops)
            case ast.IncDec():
                yield from self.reads(s.target, loops)
                yield from self.target(s.target, loops)
            case ast.Swap():
                yield from self.reads(s.left, loops)
                yield from self.reads(s.right, loops)
                yield from self.target(s.left, loops)
                yield from self.target(s.right, loops)
            case ast.CallStmt():
                yield from self.reads(s.call, loops)
            case ast.Return():
                yield from self.reads(s.value, loops)
            case _:
                unknown_node(s, "the unset-element check")

    def units(self, s: ast.Foreach, loops: dict[str, list[int]]) -> Iterator[_Access]:
        """The body of a foreach, one window per stretch between its top-level barriers:
        a unit may write there before another unit reads what precedes the write."""
        stmts = s.body.stmts if isinstance(s.body, ast.Block) else (s.body,)
        self.foreach_depth += 1
        window = self.opened(self.foreach_depth - 1)
        for one in stmts:
            if isinstance(one, ast.Barrier):
                self.close(window)
                window = self.opened(self.foreach_depth - 1)
            yield from self.stmt(one, loops)
        self.close(window)
        self.foreach_depth -= 1

    def loop_values(self, s: ast.For) -> list[int] | None:
        """The values of a for loop's variable, when its start, bound and step are
        constants and its body does not assign it."""
        init, cond, step = s.init, s.cond, s.step
        start = index_value(init.init if isinstance(init, ast.Decl) else init.value,
                            self.constants)
        if not (isinstance(start, int) and isinstance(cond, ast.Binary)
                and isinstance(cond.left, ast.Name) and cond.left.name == s.var
                and s.var not in assigned_names(s.body)):
            return None
        bound = index_value(cond.right, self.constants)
        delta = 1 if isinstance(step, ast.IncDec) and step.op == "++" else (
            index_value(step.value, self.constants)
            if isinstance(step, ast.Assign) and step.op == "+=" else None)
        if not (isinstance(bound, int) and isinstance(delta, int) and delta > 0
                and isinstance(step.target, ast.Name) and step.target.name == s.var):
            return None
        end = {"<": bound, "<=": bound + 1}.get(cond.op)
        if end is None or (end - start) // delta > MAX_VALUES:
            return None
        return list(range(start, end, delta))

    def reads(self, e: ast.Expr | None, loops: dict[str, list[int]]) -> Iterator[_Access]:
        if e is None:
            return
        for n in ast.walk(e):
            if isinstance(n, ast.Call):
                # an element passed to a function (or a built-in's result argument) may
                # be set there
                for arg in n.args:
                    if isinstance(arg, ast.Index | ast.Field):
                        yield from self.target(arg, loops)
            access = self.chain(n, loops, write=False) \
                if isinstance(n, ast.Index | ast.Field) else None
            if access is not None:
                yield access

    def target(self, e: ast.Expr, loops: dict[str, list[int]]) -> Iterator[_Access]:
        node = e  # the subscripts of a written element are read first
        while isinstance(node, ast.Index | ast.Field):
            if isinstance(node, ast.Index):
                for index in node.indices:
                    yield from self.reads(index, loops)
            node = node.base
        access = self.chain(e, loops, write=True)
        if access is not None:
            yield access

    def chain(self, e: ast.Expr, loops: dict[str, list[int]], write: bool) -> _Access | None:
        """The access `e` makes when it is a whole chain from a variable: its outermost
        link (`t[q]` of `t[q].x` is walked as part of the latter)."""
        if not isinstance(e, ast.Index | ast.Field):
            return None
        links: list[ast.Index | ast.Field] = []
        node: ast.Expr = e
        while isinstance(node, ast.Index | ast.Field):
            links.insert(0, node)
            node = node.base
        if not isinstance(node, ast.Name):
            return None
        subscripts: list[ast.Expr] = []
        for link in links:
            if not isinstance(link, ast.Index):
                break
            subscripts.extend(link.indices)
        first = links[0]
        first_field = first.name if isinstance(first, ast.Field) else None
        self.seq += 1
        return _Access(node.name, e, write, tuple(subscripts), first_field,
                       self.elements(tuple(subscripts), loops), self.seq - 1,
                       tuple(self.windows))

    def elements(self, subscripts: tuple[ast.Expr, ...], loops: dict[str, list[int]]
                 ) -> frozenset[Element] | None:
        names = sorted({n.name for s in subscripts for n in ast.walk(s)
                        if isinstance(n, ast.Name) and n.name in loops})
        ranges = [loops[name] for name in names]
        total = 1
        for r in ranges:
            total *= len(r)
        if total > MAX_VALUES:
            return None
        out: set[Element] = set()
        for values in itertools.product(*ranges):
            env = {**self.constants, **dict(zip(names, values, strict=True))}
            element: list[int] = []
            for subscript in subscripts:
                value = index_value(subscript, env)
                if not isinstance(value, int) or isinstance(value, bool):
                    return None  # (data, a division by zero: not listed)
                element.append(value)
            out.add(tuple(element))
        return frozenset(out)


def _record_write(c: _Candidate, access: _Access) -> None:
    if c.rank == 0:  # a struct: the field set, or all of them when written whole
        if access.first_field is None:
            c.unknown = True
        else:
            c.fields.add(access.first_field)
        return
    if access.elements is None or len(access.subscripts) != c.rank:
        c.unknown = True  # (a tile or a row written at once, or a subscript not listed)
        return
    c.written |= access.elements


def _unset_read(c: _Candidate, access: _Access) -> str | None:
    name = c.decl.name
    if c.rank == 0:
        if access.first_field is None or access.first_field in c.fields:
            return None
        return (f"'{print_expr(access.node)}' is read, but no statement sets field "
                f"'{access.first_field}' of '{name}': it has no value here")
    if not c.written:
        return (f"'{print_expr(access.node)}' is read, but no statement sets any element of "
                f"'{name}': it has no value here")
    if access.elements is None or len(access.subscripts) != c.rank \
            or not access.elements or access.elements & c.written:
        return None
    return (f"'{print_expr(access.node)}' is read, but no statement sets "
            f"{_listed(access.elements)} of '{name}' (only {_listed(c.written)}): "
            "it has no value here")


def _parts(c: _Candidate, access: _Access) -> frozenset[Part] | None:
    """What a write sets or a read needs: elements, or the field of a struct; None where
    that cannot be listed (a whole tile or struct, a subscript from data)."""
    if c.rank == 0:
        return None if access.first_field is None else frozenset({(access.first_field,)})
    if access.elements is None or len(access.subscripts) != c.rank:
        return None
    return frozenset(access.elements)


def _reads_before_writes(c: _Candidate, reads: list[_Access], writes: list[_Access],
                         declared_depth: int) -> list[_Access]:
    """The reads of `c`, in program order, that nothing which may come before them sets
    any part of: no write may come first at all, or every part the read needs lies
    outside what the writes that may come first set. (Reads are taken in the order of
    their horizons, the writes before each added once: linear in the accesses.)"""
    before: set[Part] = set()
    listed = True  # every write so far sets parts that could be listed
    taken = 0  # the writes (in program order) that may come before the current read
    flagged: list[_Access] = []
    for read in sorted(reads, key=lambda a: a.horizon(declared_depth)):
        horizon = read.horizon(declared_depth)
        while taken < len(writes) and writes[taken].seq <= horizon:
            parts = _parts(c, writes[taken])
            if parts is None:
                listed = False
            else:
                before |= parts
            taken += 1
        needs = _parts(c, read)
        if taken == 0 or (listed and needs and not needs & before):
            flagged.append(read)
    return sorted(flagged, key=lambda a: a.seq)


def _read_first(c: _Candidate, read: _Access, writes: list[_Access]) -> str:
    """The message for a read that comes before every write of what it reads."""
    needs = _parts(c, read)
    later = next((w for w in writes if w.seq > read.seq and (
        needs is None or (parts := _parts(c, w)) is None or parts & needs)), None)
    if needs is None:
        what = "a field" if c.rank == 0 else "an element"
    elif c.rank == 0:
        what = f"field '{read.first_field}'"
    else:
        what = _listed(needs)
    where = f" (the first that does is at line {later.node.span.line})" \
        if later is not None and later.node.span is not None else ""
    return (f"'{print_expr(read.node)}' is read before any statement sets {what} of "
            f"'{c.decl.name}'{where}: it has no value here")


def _listed(elements: Collection[Part], most: int = 4) -> str:
    shown = sorted(elements)
    text = ", ".join("[" + ", ".join(str(v) for v in e) + "]" for e in shown[:most])
    more = f" and {len(shown) - most} more" if len(shown) > most else ""
    return f"element{'s' if len(shown) != 1 else ''} {text}{more}"
