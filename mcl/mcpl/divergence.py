"""What the units of one foreach do differently: barriers not all of them reach, and
elements all of them write (docs/checker.md, "Units that disagree").

The units of a foreach run the same body (paper section 4.3), each with its own index. A
value computed from the index, or assigned under a condition on it, may differ between
them: it is *divergent*. Two rules follow:

- A barrier synchronises the units of its foreach: every one of them must reach it, the
  same number of times. A barrier under a divergent condition (`if (t < 16)`), in a loop
  whose trip count is divergent (`k < t`), or after a `return` that only some units take,
  is reached by some units only; in OpenCL that is undefined behaviour, in practice a
  hang or a wrong result. Reported as an error.
- An element of an array declared outside the foreach, written with subscripts that do
  not depend on the unit (`a[0] = ...` for every thread, `a[t]` in every block), is
  written by all units at once, with no order between them: a write-write race. Reported
  as a warning unless a divergent condition guards the write (`if (t == 0)` picks one
  unit; which units a condition picks is beyond a syntactic check) or the foreach has
  one unit.
"""

from __future__ import annotations

from collections.abc import Iterator

from mcl.diagnostics import Diagnostic, error, warning
from mcl.hdl.model import HardwareDescription
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.mcpl.varying import header_names, names_in
from mcl.mcpl.visitor import unknown_node


def divergence_diagnostics(function: ast.Function, hwd: HardwareDescription | None = None
                           ) -> list[Diagnostic]:
    """Divergent barriers (errors) and write-write races (warnings) in `function`; with
    `hwd`, the level it is written for, a barrier also synchronises the units of the
    enclosing foreach statements of its block that share its memory space."""
    found: list[Diagnostic] = []
    # integer parameters: sizes, taken to be positive (docs/checker.md)
    sizes = {p.name for p in function.params if p.type == ast.Prim("int")}
    # scalar parameters: a written one is a result (docs/codegen.md, "written scalars")
    scalars = {p.name for p in function.params if isinstance(p.type, ast.Prim)}
    for foreach, outer in _foreach_chains(function.body, ()):
        divergent = divergent_names(foreach.body, {foreach.var})
        if not _has_nested_foreach(foreach.body):
            _check_barriers(foreach, outer, hwd, divergent, found)
        if not (isinstance(foreach.count, ast.IntLit) and foreach.count.value == 1):
            _Races(foreach, divergent, sizes, scalars, found).stmt(foreach.body, guarded=False)
    return found


def _foreach_chains(node: object, outer: tuple[ast.Foreach, ...]
                    ) -> Iterator[tuple[ast.Foreach, tuple[ast.Foreach, ...]]]:
    """Each foreach statement under `node`, outermost first, with those around it.
    (A stack, not recursion: a nest of hundreds of loops is walked in constant depth.)"""
    stack: list[tuple[object, tuple[ast.Foreach, ...]]] = [(node, outer)]
    while stack:
        at, around = stack.pop()
        for child in reversed(list(ast.children(at))):
            if isinstance(child, ast.Foreach):
                yield child, around  # (before any foreach inside it)
                stack.append((child.body, (*around, child)))
            else:
                stack.append((child, around))


def _foreach_statements(node: object) -> Iterator[ast.Foreach]:
    for n in ast.walk(node):
        if isinstance(n, ast.Foreach):
            yield n


def _check_barriers(foreach: ast.Foreach, outer: tuple[ast.Foreach, ...],
                    hwd: HardwareDescription | None, divergent: set[str],
                    found: list[Diagnostic]) -> None:
    """The barriers of the innermost `foreach` that some units do not reach. A barrier
    of a space that the units of enclosing foreach statements share too (`shared` at
    fermi: the warps and the threads of a block) waits for all of them (paper section
    4.3), so a condition on an enclosing index (`if (w == 0)`) splits them as well."""
    spaces = sorted({b.space for b in ast.walk(foreach.body) if isinstance(b, ast.Barrier)})
    joined = {space: _synchronised(outer, hwd, space) for space in spaces}
    if not any(joined.values()):
        _Barriers(foreach, divergent, found).stmt(foreach.body, divergent=False)
        return
    for space in spaces:
        units = {f.var: f for f in (*joined[space], foreach)}
        scope = joined[space][0] if joined[space] else foreach
        names = divergent_names(scope.body, set(units))
        _Barriers(foreach, names, found, space, units).stmt(foreach.body, divergent=False)


def _synchronised(outer: tuple[ast.Foreach, ...], hwd: HardwareDescription | None,
                  space: str) -> list[ast.Foreach]:
    """The enclosing foreach statements whose units `barrier(space)` waits for as well:
    those of a par_group that shares the space, within one block (the outermost par_group
    is the grid, whose blocks a barrier never joins, as in OpenCL's work-groups)."""
    if hwd is None:
        return []
    groups = hwd.par_groups()
    sharing = [g for g in hwd.shared_by(space) if g is not groups[0]]
    return [f for f in outer if any(g.name == f.group for g in sharing)]


def _has_nested_foreach(body: ast.Stmt) -> bool:
    return any(True for _ in _foreach_statements(body))


def divergent_names(body: ast.Stmt, seeds: set[str]) -> set[str]:
    """The variables of `body` whose value may differ between its units: the seeds (the
    index), what is computed from a divergent value, and what is assigned under a divergent
    condition or in a loop with a divergent trip count."""
    names = set(seeds)
    while True:
        before = len(names)
        _DivergentNames(names).stmt(body, False)
        if len(names) == before:
            return names


def loop_header_divergent(loop: ast.For, divergent: set[str]) -> bool:
    """Whether the trip count of `loop` may differ between units: its header reads a
    divergent value. A loop that declares its variable (`for (int i = n / 2; ...)`) starts
    it afresh, so an earlier loop's `i` of the same name (`for (int i = t; ...)`) does not
    make it divergent."""
    names = header_names(loop)  # (its step's reads included: `i += t` is divergent)
    if isinstance(loop.init, ast.Decl):
        names = names - {loop.var}
    return bool(names & divergent)


class _DivergentNames:
    def __init__(self, names: set[str]) -> None:
        self.names = names

    def reads_divergent(self, e: object) -> bool:
        return e is not None and bool(names_in(e) & self.names)

    def bind(self, target: ast.Expr, divergent: bool) -> None:
        name = ast.root_name(target)
        if name is not None and divergent:
            self.names.add(name)

    def stmt(self, s: ast.Stmt | None, ctx: bool) -> None:
        match s:
            case ast.Block():
                for stmt in s.stmts:
                    self.stmt(stmt, ctx)
            case ast.Decl():
                if s.init is not None and (ctx or self.reads_divergent(s.init)):
                    self.names.add(s.name)
            case ast.Assign():
                self.bind(s.target, ctx or self.reads_divergent(s.value)
                          or self.reads_divergent(s.target))
            case ast.IncDec():
                self.bind(s.target, ctx or self.reads_divergent(s.target))
            case ast.Swap():
                either = ctx or self.reads_divergent(s.left) or self.reads_divergent(s.right)
                self.bind(s.left, either)
                self.bind(s.right, either)
            case ast.If():
                inner = ctx or self.reads_divergent(s.cond)
                self.stmt(s.then, inner)
                self.stmt(s.orelse, inner)
            case ast.For():
                header = loop_header_divergent(s, self.names)
                if header:  # (a loop variable is scoped to its loop: a divergent branch
                    self.names.add(s.var)  # around the loop alone leaves its values alike)
                self.stmt(s.body, ctx or header)
            case ast.Foreach():
                self.stmt(s.body, ctx)
            case None | ast.ViewDecl() | ast.CallStmt() | ast.Barrier() | ast.Return():
                pass  # binds no value (a call's output arguments are arrays: elements)
            case _:
                unknown_node(s, "the divergence analysis")

class _Barriers:
    """Barriers that some units of the innermost foreach do not reach."""

    def __init__(self, foreach: ast.Foreach, divergent: set[str], found: list[Diagnostic],
                 space: str | None = None, units: dict[str, ast.Foreach] | None = None
                 ) -> None:
        self.foreach = foreach
        self.divergent = divergent
        self.found = found
        self.space = space  # only the barriers of this space (None: all of them)
        self.units = units or {foreach.var: foreach}  # the foreach statements it joins
        self.exit: ast.Return | None = None  # a return only some units take, seen before
        self.only_if: str | None = None  # the condition under which every unit takes it

    def is_divergent(self, e: object) -> bool:
        return bool(names_in(e) & self.divergent)

    def stmt(self, s: ast.Stmt | None, divergent: bool, why: str = "") -> None:
        match s:
            case ast.Block():
                for stmt in s.stmts:
                    self.stmt(stmt, divergent, why)
            case ast.If():
                outer = self.only_if
                # (under a condition that is divergent only for some sizes, a condition
                # that certainly is still makes the barrier an error)
                if (not divergent or outer is not None) and self.is_divergent(s.cond):
                    taken = unit_range_test(s.cond, self.units, self.divergent)
                    if taken is None or taken is False:
                        divergent, self.only_if = True, None
                        why = f"inside 'if ({print_expr(s.cond)})', which not every unit takes"
                    elif isinstance(taken, str) and not divergent:
                        divergent, self.only_if = True, taken
                        why = f"inside 'if ({print_expr(s.cond)})', which {taken}"
                self.stmt(s.then, divergent, why)
                self.stmt(s.orelse, divergent, why)
                self.only_if = outer
            case ast.For():
                outer = self.only_if
                if (not divergent or outer is not None) and loop_header_divergent(
                        s, self.divergent):
                    divergent, self.only_if = True, None
                    why = (f"in for-loop '{s.var}', whose number of iterations differs "
                           "between the units")
                self.stmt(s.body, divergent, why)
                self.only_if = outer
            case ast.Return():
                if divergent and self.exit is None:
                    self.exit = s
            case ast.Barrier():
                self.barrier(s, divergent, why)
            case (None | ast.Foreach() | ast.Decl() | ast.ViewDecl() | ast.Assign() | ast.IncDec()
                  | ast.CallStmt() | ast.Swap()):
                # A nested foreach's barriers are checked with its own units (the caller
                # walks the innermost foreach); the rest holds no barrier and no return.
                pass
            case _:
                unknown_node(s, "the barrier divergence check")

    def barrier(self, s: ast.Barrier, divergent: bool, why: str) -> None:
        if self.space is not None and s.space != self.space:
            return  # checked with the units of its own space
        if not divergent and self.exit is not None:
            line = self.exit.span.line if self.exit.span else "?"
            why = f"after the return at line {line}, which some units take"
        elif not divergent:
            return
        hint = ("every unit must reach a barrier, the same number of times (OpenCL leaves it "
                "undefined; it usually hangs); move the barrier out of the condition or loop, "
                "and guard only the work")
        if self.only_if is not None and self.exit is None:
            # Decided by sizes the check does not know: said as a possibility, with the
            # condition that makes it safe (the interpreter and the run decide it).
            self.found.append(warning(
                "mcpl-barrier-divergence",
                f"barrier({s.space}) may not be reached by every unit of its foreach: it "
                f"stands {why}", s.span, hint))
            return
        self.found.append(error(
            "mcpl-barrier-divergence",
            f"barrier({s.space}) is not reached by every unit of its foreach: it stands {why}",
            s.span, hint))


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def unit_range_test(cond: ast.Expr, units: dict[str, ast.Foreach], divergent: set[str]
                    ) -> bool | str | None:
    """Whether every unit of the foreach statements `units` (by index; indices 0 .. count
    - 1) takes `cond` when it
    compares the index with a value the same for every unit (`t < n`, `16 > t`): True
    when every unit or none takes it (decided on constants), False when some do and some
    do not, or, where it depends on a size, what it depends on as the end of a sentence
    (`every unit takes only if n >= 256`; for a value computed from the index, `some units
    may skip, depending on n`); None for any other condition (then it is divergent)."""
    if not isinstance(cond, ast.Binary) or cond.op not in _FLIPPED:
        return None
    op, left, right = cond.op, cond.left, cond.right
    if names_in(right) & divergent and not names_in(left) & divergent:
        op, left, right = _FLIPPED[op], right, left
    if names_in(right) & divergent or not names_in(left) & divergent:
        return None
    foreach = units.get(left.name) if isinstance(left, ast.Name) else None
    if foreach is None:
        # a value computed from the index (`ti = w * 32 + t` after translation): which
        # units pass depends on the size, but on how is beyond a syntactic check
        return None if isinstance(right, ast.IntLit) else \
            f"some units may skip, depending on {print_expr(right)}"
    count = foreach.count
    bound, size = print_expr(right), print_expr(count)
    every = {"<": f"{bound} >= {size}", "<=": f"{bound} >= {size} - 1",
             ">": f"{bound} < 0", ">=": f"{bound} <= 0"}[op]
    if isinstance(right, ast.IntLit) and isinstance(count, ast.IntLit):
        e, c = right.value, count.value
        takes = [{"<": u < e, "<=": u <= e, ">": u > e, ">=": u >= e}[op] for u in (0, c - 1)]
        return takes[0] == takes[1]  # monotone in the index: the ends decide
    return f"every unit takes only if {every}"


class _Races:
    """Writes of one element of an outer array by every unit of a foreach."""

    def __init__(self, foreach: ast.Foreach, divergent: set[str], sizes: set[str],
                 scalars: set[str], found: list[Diagnostic]) -> None:
        self.foreach = foreach
        self.divergent = divergent
        self.sizes = sizes
        self.scalars = scalars
        self.found = found
        self.inner: set[str] = set()  # arrays and scalars declared inside the foreach

    def is_divergent(self, e: object) -> bool:
        return bool(names_in(e) & self.divergent)

    def stmt(self, s: ast.Stmt | None, guarded: bool) -> None:
        stmts = s.stmts if isinstance(s, ast.Block) else () if s is None else (s,)
        for one in stmts:
            self.single(one, guarded)

    def single(self, s: ast.Stmt, guarded: bool) -> None:
        match s:
            case ast.Block():
                self.stmt(s, guarded)
            case ast.Decl():
                self.inner.add(s.name)
                if s.view is not None:
                    self.inner.add(s.view.name)
            case ast.ViewDecl():
                self.inner.add(s.view.name)
            case ast.If():
                inner = guarded or self.is_divergent(s.cond)
                self.stmt(s.then, inner)
                self.stmt(s.orelse, inner)
            case ast.For():
                self.inner.add(s.var)
                self.stmt(s.body, guarded or bool(header_names(s) & self.divergent))
            case ast.Foreach():
                self.inner.add(s.var)
                self.stmt(s.body, guarded)
            case ast.Assign() | ast.IncDec():
                if not guarded:
                    self.write(s.target)
            case ast.Swap():
                if not guarded:
                    self.write(s.left)
                    self.write(s.right)
            case ast.CallStmt() | ast.Barrier() | ast.Return():
                pass  # writes no element by assignment
            case _:
                unknown_node(s, "the write race check")

    def write(self, target: ast.Expr) -> None:
        root = ast.root_name(target)
        if isinstance(target, ast.Name) and root in self.scalars and root not in self.inner:
            self.race(target, f"every unit of {self.units()} writes the scalar result "
                              f"'{root}'", "guard the write to one unit")
            return
        if root is None or root in self.inner or not isinstance(target, ast.Index):
            return
        varying = [index for index in _subscripts(target)
                   if self.is_divergent(index) and not _same_for_every_unit(index, self)]
        f = self.foreach
        units = self.units()
        if not varying:
            said = f"every unit of {units} writes '{print_expr(target)}', the same element"
        elif len(varying) == 1 and _coarse(varying[0], f.var, self):
            said = (f"several units of {units} write '{print_expr(target)}', one element: "
                    f"'{print_expr(varying[0])}' is one value for consecutive '{f.var}'")
        else:
            return  # each unit writes its own element
        self.race(target, said, f"index the element by '{f.var}' (or a value computed from "
                                "it), guard the write to one unit")

    def units(self) -> str:
        f = self.foreach
        return f"foreach '{f.var}' ({print_expr(f.count)} {f.group})"

    def race(self, target: ast.Expr, said: str, remedy: str) -> None:
        if any(d.span == target.span and d.code == "mcpl-write-race" for d in self.found):
            return  # said already for the units of an inner foreach
        self.found.append(warning(
            "mcpl-write-race", f"{said}, with no order between them", target.span,
            f"{remedy} (`if ({self.foreach.var} == 0)`), or use atomicAdd"))


def _same_for_every_unit(e: ast.Expr, races: _Races) -> bool:
    """Does `e`, though it names a divergent value, take one value for every unit? A
    product with 0, a remainder by 1, and `min(i, c)` of the foreach index i (never
    negative) with a constant c <= 0 do (C's arithmetic; the constant folder leaves them,
    as they name a variable)."""
    if not races.is_divergent(e):
        return True
    match e:
        case ast.Binary(op="*", left=ast.IntLit(value=0)) | ast.Binary(
                op="*", right=ast.IntLit(value=0)) | ast.Binary(op="%", right=ast.IntLit(value=1)):
            return True
        case ast.Call(func="min", args=(ast.Name(name=name), ast.IntLit(value=c))) | ast.Call(
                func="min", args=(ast.IntLit(value=c), ast.Name(name=name))):
            return name == races.foreach.var and c <= 0
        case ast.Binary(left=left, right=right):
            return _same_for_every_unit(left, races) and _same_for_every_unit(right, races)
        case ast.Unary(operand=operand):
            return _same_for_every_unit(operand, races)
    return False


def _coarse(e: ast.Expr, var: str, races: _Races) -> bool:
    """Is `e` the foreach index divided so that consecutive units share its value: `i / 2`,
    `i >> 1`, `i / (n + 1)` (a size n is positive, so the divisor is at least 2)? Units 2u
    and 2u + 1 then write one element."""
    match e:
        case ast.Binary(op="/", left=ast.Name(name=name), right=divisor):
            return name == var and _at_least_two(divisor, races)
        case ast.Binary(op=">>", left=ast.Name(name=name), right=ast.IntLit(value=shift)):
            return name == var and shift >= 1
    return False


def _at_least_two(e: ast.Expr, races: _Races) -> bool:
    match e:
        case ast.IntLit(value=value):
            return value >= 2
        case ast.Binary(op="+", left=ast.Name() as name, right=ast.IntLit(value=value)) | \
                ast.Binary(op="+", left=ast.IntLit(value=value), right=ast.Name() as name):
            return value >= 1 and not races.is_divergent(name) and name.name in races.sizes
    return False


def _subscripts(e: ast.Expr) -> Iterator[ast.Expr]:
    """The subscripts along an lvalue (`c[i].re[k]`: i and k), not its root variable."""
    while isinstance(e, ast.Index | ast.Field):
        if isinstance(e, ast.Index):
            yield from e.indices
        e = e.base
