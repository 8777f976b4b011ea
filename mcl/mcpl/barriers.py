"""A static check for missing barriers (docs/checker.md).

An array declared inside the body of a foreach is one array per unit of that foreach,
and the units of the foreach statements nested inside share it (paper section 4.3: the
memory space of the declaration says where it lives, and the hierarchy which units see
it). Those units only meet at a barrier. So when one unit writes an element of a shared
array and another unit reads it (or the other way round) with no barrier on some path
between the two accesses, the result depends on timing: a data race, the kind Oclgrind
reports at run time.

The check walks the body of each foreach whose units share an array, in program order,
and keeps the accesses of shared arrays since the last barrier; a loop is walked twice,
so that an access late in one iteration meets the accesses early in the next. Two
accesses conflict when at least one writes and the second touches another unit's
element: its subscripts differ from the first one's in a position that depends on the
unit (a foreach index, or a value computed from one), unless the subscripts prove that
no other unit touches that element (mcl.mcpl.unit_elements: never equal, or equal only
for the same unit). Accesses under a condition that
picks units by equality or remainder (`if (t == 0)`, `if (t % (2 * s) == 0)`, as in a
tree reduction) are left out: which units take part there is beyond a syntactic check,
and a warning there would be wrong more often than right.

An array parameter is shared the same way by every unit of a top-level foreach (it lives
in memory all of them see). One unit reading an element another unit writes
(`a[i] = a[(i + 1) % n]`) is a read-write race, reported as `mcpl-read-write-race`: the
units of a kernel run in no order (paper section 4.3), and the blocks of a GPU level can
meet at no barrier at all. (Two writes are left to the write-race check of
mcl.mcpl.divergence.) Only the parameters a foreach writes and names with more than one
subscript are walked: one subscript (`a[i] = a[i] + 1.0`) is each unit's own element,
or a write race the divergence check reports.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from mcl.diagnostics import Diagnostic, Span, warning
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.divergence import divergent_names
from mcl.mcpl.printer import print_expr
from mcl.mcpl.size_bounds import forced_by_sizes, size_names, size_ranges
from mcl.mcpl.uniform_states import States, UniformStates, tracked_names
from mcl.mcpl.unit_elements import (
    OTHER_UNIT,
    Poly,
    difference,
    forced_equal,
    loop_facts,
    never_equal,
    polynomial,
    renamed,
    substituted,
)
from mcl.mcpl.varying import assigned_names, names_in
from mcl.mcpl.visitor import unknown_node


@dataclass(frozen=True)
class _BarrierAccess:
    """A read or write of an array between barriers, with the conditions around it."""

    kind: str  # "read" or "write"
    array: str
    indices: tuple[ast.Expr, ...]
    node: ast.Expr
    # The branch conditions around the access (condition, holds), and the variables whose
    # value changed since the first pass of the loops around it (their second pass).
    guards: tuple[tuple[ast.Expr, bool], ...] = ()
    epoch: frozenset[str] = frozenset()
    # The subscripts as polynomials, with the program's constants and the unit's local
    # definitions put in (mcl.mcpl.unit_elements); None where one is not a polynomial.
    # (Not compared: the node, guards and epoch tell accesses apart.)
    expanded: tuple[Poly | None, ...] = field(default=(), compare=False)
    # The values of the small uniform variables here (mcl.mcpl.uniform_states), or None.
    states: States | None = field(default=None, compare=False)


def barrier_warnings(function: ast.Function, constants: Mapping[str, int] | None = None
                     ) -> list[Diagnostic]:
    """Warnings for the accesses of shared arrays in `function` that no barrier orders;
    `constants`: the program's integer constants (`const int TILE = 32;`)."""
    found: dict[frozenset[Span | None], Diagnostic] = {}
    params = frozenset(p.name for p in function.params if isinstance(p.type, ast.ArrayType))
    _visit(function.body, set(params), found, dict(constants or {}), params,
           size_names(function))
    # (pending accesses are a set: two warnings at one place come in the order of their
    # messages, not of hashes)
    return sorted(found.values(), key=lambda d: d.message)


def _visit(s: ast.Stmt | None, shared: set[str], found: dict, constants: dict[str, int],
           params: frozenset[str] = frozenset(), sizes: frozenset[str] = frozenset()) -> None:
    """Find the foreach statements whose units share arrays declared around them (and,
    for a top-level foreach, the array parameters in `params`)."""
    match s:
        case ast.Block():
            declared = set(shared)
            for stmt in s.stmts:
                _visit(stmt, declared, found, constants, params, sizes)
                if isinstance(stmt, ast.Decl) and isinstance(stmt.type, ast.ArrayType):
                    declared.add(stmt.name)
                    params = params - {stmt.name}  # (shadowed by a local array)
        case ast.Foreach():
            walked = (shared - params) | _raced_parameters(s, shared & params)
            if walked:
                _Walker(s, walked, found, constants, params, sizes).run()
            # Arrays declared in this body are shared by the units of foreach statements
            # in it (those declared further out were covered by the walk just made).
            _visit(s.body, set(), found, constants, sizes=sizes)
        case ast.For():
            _visit(s.body, shared, found, constants, params, sizes)
        case ast.If():
            _visit(s.then, shared, found, constants, params, sizes)
            _visit(s.orelse, shared, found, constants, params, sizes)
        case (None | ast.Decl() | ast.ViewDecl() | ast.Assign() | ast.IncDec() | ast.CallStmt()
              | ast.Swap() | ast.Barrier() | ast.Return()):
            pass  # holds no statement, so no foreach
        case _:
            unknown_node(s, "the barrier check")


def _raced_parameters(foreach: ast.Foreach, params: set[str]) -> set[str]:
    """The array parameters among `params` that `foreach` writes and names with more than
    one subscript: only those can have one unit read another unit's element. (The rest
    are left out of the walk, which goes around each loop twice: a deep loop nest that
    reads and writes `a[i]` alone would cost two to the depth.)"""
    written: set[str] = set()
    subscripts: dict[str, set[str]] = {}
    for node in ast.walk(foreach.body):
        if isinstance(node, ast.Assign | ast.IncDec):
            root = ast.root_name(node.target)
            if root is not None:
                written.add(root)
        elif isinstance(node, ast.Swap):
            written |= {r for r in (ast.root_name(node.left), ast.root_name(node.right))
                        if r is not None}
        if isinstance(node, ast.Index) and isinstance(node.base, ast.Name) \
                and node.base.name in params:
            subscripts.setdefault(node.base.name, set()).add(
                ", ".join(print_expr(i) for i in node.indices))
    return {name for name in params & written if len(subscripts.get(name, ())) > 1}


class _Walker:
    def __init__(self, foreach: ast.Foreach, shared: set[str], found: dict,
                 constants: dict[str, int], params: frozenset[str] = frozenset(),
                 sizes: frozenset[str] = frozenset()) -> None:
        self.shared = shared
        self.params = params  # the array parameters among `shared` (all units see them)
        self.found = found
        indices = {n.var for n in ast.walk(foreach) if isinstance(n, ast.Foreach)}
        # What differs between units: the indices and what is computed from them (a
        # variable every unit updates alike, such as the `cur` of a double buffer, is the
        # same in all of them).
        self.varying = divergent_names(foreach.body, indices)
        self.counts = {n.var: n.count for n in ast.walk(foreach) if isinstance(n, ast.Foreach)}
        self.flat = _flat_indices(foreach.body, self.counts)
        self.body = foreach.body
        self.private: set[str] = set()  # shadowing declarations inside the units
        self.guards: tuple[tuple[ast.Expr, bool], ...] = ()
        self.epoch: frozenset[str] = frozenset()
        self.constants = constants
        # The unit's scalar definitions in force (`int ai = off * (2 * t + 1) - 1;`), while
        # no name they read is assigned (mcl.mcpl.unit_elements puts them in).
        self.definitions: dict[str, ast.Expr] = {}
        # The names each definition reads, found once: `forget` asks at every statement
        # that assigns, for every definition in force (a walk of each initialiser per
        # statement was two fifths of the check of the larger kernels).
        self.definition_reads: dict[str, set[str]] = {}
        self.loops = loop_facts(foreach.body, constants)
        self.nonzero = {name + suffix for name, f in self.loops.items() if f.nonzero
                        for suffix in ("", "'", OTHER_UNIT)}
        # How far two values of each unit index and bounded loop variable lie apart.
        self.spans = {name: f.span for name, f in self.loops.items() if f.span is not None}
        self.unit_counts = {}
        for name, count in self.counts.items():
            size = polynomial(count, constants, {})
            if size is not None and set(size) <= {()}:
                self.unit_counts[name] = size.get((), 0)
                self.spans[name] = self.unit_counts[name] - 1

        # The ranges that grow with the sizes (mcl.mcpl.size_bounds): a row of m elements.
        self.size_names = sizes
        self.ranges = size_ranges(foreach.body, self.counts, constants, sizes)
        self.uniform = UniformStates(tracked_names(foreach.body, self.varying, constants),
                                     constants)
        self.touching, self.sizes = _loops_touching(foreach.body, shared)
        self.scalars: dict[Ref[ast.For], frozenset[str]] = {}
        self.steps = 0

    def run(self) -> None:
        try:
            self.stmt(self.body, frozenset(), selected=False)
        except _OutOfSteps:
            pass  # (what was found so far stands; the rest of the body is not judged)

    def step(self, work: int) -> None:
        self.steps += work
        if self.steps > MAX_STEPS:
            raise _OutOfSteps

    # Each statement maps the accesses pending since the last barrier to those after it.
    def stmt(self, s: ast.Stmt, pending: frozenset[_BarrierAccess], selected: bool
             ) -> frozenset[_BarrierAccess]:
        self.step(1)
        match s:
            case ast.Barrier():
                self.uniform.barrier(s)
                return frozenset()
            case ast.Block():
                for stmt in s.stmts:
                    pending = self.stmt(stmt, pending, selected)
                return pending
            case ast.Foreach():
                return self.stmt(s.body, pending | self.expr(s.count, pending, selected),
                                 selected)
            case ast.If():
                return self.if_(s, pending, selected)
            case ast.For():
                return self.for_(s, pending, selected)
            case ast.Decl():
                return self.decl(s, pending, selected)
            case ast.Assign():
                self.forget_target(s.target)
                pending = self.access(self.reads(s.value) + self.subscript_reads(s.target),
                                      pending, selected)
                if s.op != "=":
                    pending = self.access(self.element(s.target, "read"), pending, selected)
                pending = self.access(self.element(s.target, "write"), pending, selected)
                self.uniform.assign(s)
                return pending
            case ast.IncDec():
                self.forget_target(s.target)
                pending = self.access(self.subscript_reads(s.target) + self.element(
                    s.target, "read"), pending, selected)
                pending = self.access(self.element(s.target, "write"), pending, selected)
                self.uniform.assign(s)
                return pending
            case ast.Swap():
                self.forget_target(s.left)
                self.forget_target(s.right)
                for side in (s.left, s.right):
                    pending = self.access(self.subscript_reads(side) + self.element(side, "read"),
                                          pending, selected)
                for side in (s.left, s.right):
                    pending = self.access(self.element(side, "write"), pending, selected)
                return pending
            case ast.CallStmt():
                return self.expr(s.call, pending, selected)
            case ast.Return():
                return self.expr(s.value, pending, selected) if s.value is not None else pending
            case ast.ViewDecl():
                # names memory declared before: no access of its own, but the subscripts
                # of a viewed element are read
                if s.part is None:
                    return pending
                return self.access(self.subscript_reads(s.part), pending, selected)
            case _:
                unknown_node(s, "the barrier check")

    def decl(self, s: ast.Decl, pending: frozenset[_BarrierAccess], selected: bool
             ) -> frozenset[_BarrierAccess]:
        if s.name in self.shared:
            self.private.add(s.name)
        pending = self.expr(s.init, pending, selected) if s.init is not None else pending
        self.forget(s.name)
        if s.init is not None and not isinstance(s.type, ast.ArrayType):
            self.definitions[s.name] = s.init
            self.definition_reads[s.name] = names_in(s.init)
        self.uniform.assign(s)
        return pending

    def forget(self, name: str) -> None:
        """`name` takes a new value: the definitions of it and of names read from it no
        longer hold."""
        for defined in list(self.definitions):
            if defined == name or name in self.definition_reads[defined]:
                del self.definitions[defined]

    def forget_target(self, target: ast.Expr) -> None:
        if isinstance(target, ast.Name):
            self.forget(target.name)

    def if_(self, s: ast.If, pending: frozenset[_BarrierAccess], selected: bool
            ) -> frozenset[_BarrierAccess]:
        pending = self.access(self.reads(s.cond), pending, selected)
        picks = selected or self.selects_units(s.cond)
        around, entry = self.guards, self.uniform.states
        self.guards = (*around, (s.cond, True))
        then = self.stmt(s.then, pending, picks)
        after_then, self.uniform.states = self.uniform.states, entry
        self.guards = (*around, (s.cond, False))
        # Units that decide the condition differently run both branches in one phase:
        # one unit's else-branch meets another's then-branch.
        before_else = then if self.depends(s.cond) else pending
        orelse = self.stmt(s.orelse, before_else, picks) if s.orelse is not None else pending
        self.guards = around
        self.uniform.join(after_then, self.uniform.states)
        return then | orelse

    def for_(self, s: ast.For, pending: frozenset[_BarrierAccess], selected: bool
             ) -> frozenset[_BarrierAccess]:
        self.step(self.sizes[Ref(s)])  # (the loop's assigned and divergent names)
        pending = self.stmt(s.init, pending, selected)
        # What the loop assigns holds another value from the second iteration on: the
        # definitions that read it (or define it) no longer hold anywhere in the loop.
        for name in {s.var} | assigned_names(s.body):
            self.forget(name)
        self.uniform.loop_head(s)
        head = self.uniform.states
        entry, before, around = pending, self.epoch, self.varying
        if isinstance(s.init, ast.Decl):
            # A loop that declares its variable starts it afresh: an earlier loop's `i`
            # (`for (int i = t; ...)`, divergent) says nothing of this one's (`for (int i =
            # n / 2; ...)`), which is divergent only when its own header or body makes it so.
            self.varying = divergent_names(s, around - {s.var})
        # The second pass sees the previous iteration's accesses; a loop that accesses no
        # shared array has none to see (one pass keeps a deep nest of such loops linear).
        for _ in range(2 if Ref(s) in self.touching else 1):
            self.uniform.states = head
            pending = self.access(self.reads(s.cond), pending, selected)
            pending = self.stmt(s.body, pending, selected)
            pending = self.stmt(s.step, pending, selected)
            pending = entry | pending
            # In the next iteration the loop variable, and what the body assigns,
            # hold other values than in the accesses pending from this one. (Those
            # that differ between units keep their name: the same expression of the
            # unit's own values is taken to be its own element, as in one iteration.)
            # (A scalar the body declares is another variable in each iteration: a
            # double buffer's `int cur = s % 2`.)
            self.epoch = before | (({s.var} | assigned_names(s.body)
                                    | self.declared(s)) - self.varying)
        self.epoch, self.varying = before, around
        self.uniform.states = head
        return pending

    def declared(self, loop: ast.For) -> frozenset[str]:
        """The scalars declared in the body of `loop` (found once per loop)."""
        key = Ref(loop)
        if key not in self.scalars:
            self.scalars[key] = frozenset(
                n.name for n in ast.walk(loop.body)
                if isinstance(n, ast.Decl) and not isinstance(n.type, ast.ArrayType))
        return self.scalars[key]

    def expr(self, e: ast.Expr | None, pending: frozenset[_BarrierAccess], selected: bool
             ) -> frozenset[_BarrierAccess]:
        return self.access(self.reads(e), pending, selected) if e is not None else pending

    # -- accesses --------------------------------------------------------------------
    def element(self, e: ast.Expr, kind: str) -> list[_BarrierAccess]:
        """The access of a shared array's element that `e` denotes, if it is one."""
        groups: list[tuple[ast.Expr, ...]] = []
        base = e
        while isinstance(base, ast.Index):
            groups.insert(0, base.indices)
            base = base.base
        if not (isinstance(base, ast.Name) and groups and base.name in self.shared
                and base.name not in self.private):
            return []
        indices = tuple(i for g in groups for i in g)
        return [_BarrierAccess(kind, base.name, indices, e, self.guards, self.epoch, tuple(
            polynomial(i, self.constants, self.definitions) for i in indices),
            self.uniform.states)]

    def subscript_reads(self, e: ast.Expr) -> list[_BarrierAccess]:
        out: list[_BarrierAccess] = []
        while isinstance(e, (ast.Index, ast.Field)):
            if isinstance(e, ast.Index):
                for index in e.indices:
                    out += self.reads(index)
            e = e.base
        return out

    def reads(self, e: ast.Expr | None) -> list[_BarrierAccess]:
        """Element reads of shared arrays in `e`, innermost (evaluated first) first."""
        if e is None:
            return []
        if isinstance(e, ast.Index):
            return self.subscript_reads(e) + self.element(e, "read")
        out: list[_BarrierAccess] = []
        for child in ast.children(e):
            if isinstance(child, (ast.Index, ast.Field, ast.Call, ast.Unary, ast.Binary,
                                  ast.Name)):
                out += self.reads(child)
        return out

    def access(self, accesses: Iterable[_BarrierAccess], pending: frozenset[_BarrierAccess],
               selected: bool) -> frozenset[_BarrierAccess]:
        if selected:
            return pending
        for a in accesses:
            self.step(len(pending))  # (each pending access is compared with this one)
            for p in pending:
                if p.array == a.array and self.conflict(p.kind, a.kind, a.array) \
                        and self.other_unit(p, a):
                    self.report(p, a)
            pending = pending | {a}
        return pending

    def conflict(self, first: str, second: str, array: str) -> bool:
        """Can accesses of these kinds race? A write with any access of a shared array; a
        read with a write of a parameter (two writes of a parameter's elements are the
        divergence check's: tiles of output stored by blocks whose extents the subscripts
        do not prove apart are no race it could tell)."""
        if array in self.params:
            return first != second
        return "write" in (first, second)

    def other_unit(self, first: _BarrierAccess, second: _BarrierAccess) -> bool:
        """Can `second` touch an element another unit touched in `first`? Not when the
        two agree on every subscript that depends on the unit."""
        if len(first.indices) != len(second.indices):
            if first.array not in self.params:
                return True
            # a tile of a tiled parameter (`d2[t, 1]` passed to a function) holds the
            # elements whose leading subscripts are its own: compare those
            first, second = _leading(first, second), _leading(second, first)
        changed = first.epoch ^ second.epoch  # values from another iteration: renamed
        earlier = tuple(_renamed(i, changed) for i in first.indices)
        pairs = list(zip(earlier, second.indices, strict=True))
        if any(self.disjoint(x, [(_renamed(c, changed), h) for c, h in first.guards],
                             y, second.guards) for x, y in pairs):
            return False  # the units touch different parts: a guarded tree or scan step
        if any(not self.depends(x) and not self.depends(y) and _never_equal(x, y)
               for x, y in pairs):
            return False  # another part of the array: `l_a[cur]` and `l_a[1 - cur]`
        if not any(self.depends(x) for x in earlier):
            return True  # every unit touches the same element
        positions = [k for k, x in enumerate(earlier) if self.depends(x)]
        if all(earlier[k] == second.indices[k] for k in positions) and \
                not self.redefined(first, positions, changed):
            return False  # the same expression of the unit's own values: its own element
        return not self.apart(first, second, changed)

    @staticmethod
    def redefined(first: _BarrierAccess, positions: list[int], changed: frozenset[str]) -> bool:
        """Does a per-unit subscript of `first` read, through a local definition, a name
        that another iteration changed (`ii = r * ROWS + w` in the next iteration of r)?"""
        return any(p is not None and any(set(k) & changed for k in p)
                   for p in (first.expanded[k] for k in positions))

    def apart(self, first: _BarrierAccess, second: _BarrierAccess, changed: frozenset[str]) -> bool:
        """Do the subscripts prove that no other unit touches `second`'s element in
        `first` (mcl.mcpl.unit_elements): one pair never equal (the scan's `off * (2 * t
        + 2) - 1` and another unit's `off * (2 * t + 1) - 1`), or the pairs together force
        every unit index equal (a strided tile loop's `tile[ty + k, tx]`)? With the values
        the small uniform variables can hold at both (`src` and `dst` of a double buffer,
        mcl.mcpl.uniform_states), it must hold for each pair of them."""
        names = {name: name + OTHER_UNIT for name in self.varying}
        names |= {name: name + "'" for name in changed}
        joint = self.joint_values(first, second)
        if not joint:
            return False  # (no values seen together: nothing to reason from)
        for one, two in joint:
            forced: set[str] = set()
            for x, y in zip(first.expanded, second.expanded, strict=True):
                if x is None or y is None:
                    continue
                d = difference(renamed(substituted(x, one), names), substituted(y, two))
                if never_equal(d, self.nonzero):
                    break
                around = {v.rstrip("'" + OTHER_UNIT) for k in (*x, *y) for v in k}
                forced |= forced_equal(d, self.spans, self.loops) | forced_by_sizes(
                    d, self.ranges, self.size_names, around)
            else:
                if not forced >= set(self.counts):
                    return False
        return True

    def joint_values(self, first: _BarrierAccess, second: _BarrierAccess
                     ) -> list[tuple[dict[str, int], dict[str, int]]]:
        """The values of the uniform variables at the two accesses that can go together
        (reached from the same values at the last barrier); one pair of none where they
        are not tracked."""
        if first.states is None or second.states is None:
            return [({}, {})]
        values = self.uniform.values
        return [(values(c1), values(c2)) for o1, c1 in first.states
                for o2, c2 in second.states if o1 == o2]

    def disjoint(self, x: ast.Expr, x_guards: list[tuple[ast.Expr, bool]], y: ast.Expr,
                 y_guards: Iterable[tuple[ast.Expr, bool]]) -> bool:
        """Do subscripts `x` and `y`, each of the form `t + c` for a unit index t, cover
        disjoint ranges for the units their guards admit (`if (t < s) tmp[t] += tmp[t +
        s]`: the writes cover 0 .. s-1, the reads s .. 2s-1)? Decided when the bounds
        differ by a constant; anything else may overlap."""
        rx, ry = self.element_range(x, x_guards), self.element_range(y, list(y_guards))
        if rx is None or ry is None:
            return False
        return any(_constant_below(high, low) for high, low in ((rx[1], ry[0]), (ry[1], rx[0]))
                   if high is not None and low is not None)

    def element_range(self, e: ast.Expr, guards: list[tuple[ast.Expr, bool]]
                      ) -> tuple[dict | None, dict | None] | None:
        form = _linear(e)
        if form is None:
            return None
        units = [v for v in form if v in self.counts or v in self.flat]
        if len(units) != 1 or form[units[0]] != 1 or any(
                v.rstrip("'") in self.varying for v in form if v not in (units[0], "")):
            return None
        unit = units[0]
        offset = {k: v for k, v in form.items() if k != unit}
        count = _linear(self.counts[unit]) if unit in self.counts else None
        low: dict | None = {"": 0}  # (a flattened index starts at 0 too; its end is left open)
        high = _add(count, {"": -1}) if count is not None else None
        for cond, holds in guards:
            bound = _unit_bound(cond, holds, unit)
            if (bound is not None
                    and not {v.rstrip("'") for v in _linear_names(bound[1])} & self.varying):
                low, high = (bound[1], high) if bound[0] == "low" else (low, bound[1])
        return (_add(low, offset) if low is not None else None,
                _add(high, offset) if high is not None else None)

    def depends(self, e: ast.Expr) -> bool:
        return any(isinstance(n, ast.Name) and n.name.rstrip("'") in self.varying
                   for n in ast.walk(e))

    def selects_units(self, cond: ast.Expr) -> bool:
        return any(isinstance(n, ast.Binary) and n.op in ("==", "%") and self.depends(n)
                   for n in ast.walk(cond))

    def report(self, first: _BarrierAccess, second: _BarrierAccess) -> None:
        key = frozenset((first.node.span, second.node.span))  # each pair once, either order
        if key in self.found or first.node.span is None:
            return
        where = first.node.span
        verb = {"read": "reads", "write": "writes"}
        if second.array in self.params:
            self.found[key] = warning(
                "mcpl-read-write-race",
                f"'{print_expr(second.node)}' {verb[second.kind]} an element of array "
                f"'{second.array}' that another unit may {first.kind} at line {where.line}, "
                f"column {where.column} ('{print_expr(first.node)}'), with no order between "
                "the units",
                second.node.span,
                "write the results to another array (the units of a kernel run in no "
                "order), or index only this unit's elements")
            return
        self.found[key] = warning(
            "mcpl-missing-barrier",
            f"'{print_expr(second.node)}' {verb[second.kind]} an element of shared array "
            f"'{second.array}' that another unit may access at line {where.line}, column "
            f"{where.column} ('{print_expr(first.node)}', which {verb[first.kind]} it), with no "
            "barrier between the two",
            second.node.span,
            f"put a barrier on every path from line {where.line} to line "
            f"{second.node.span.line if second.node.span else '?'}, or index only this "
            "unit's elements",
        )


# The work of one walk at most: statements visited, the nodes of each loop entered (what
# its names are gathered from) and the pairs of accesses compared. It goes around each
# loop twice, so a nest of loops that access a shared array costs two to the depth; past
# this the walk stops, and only what it found so far is reported.
MAX_STEPS = 1_000_000


class _OutOfSteps(Exception):
    """The walk of one foreach ran past MAX_STEPS."""


def _loops_touching(body: ast.Stmt, names: set[str]
                    ) -> tuple[set[Ref[ast.For]], dict[Ref[ast.For], int]]:
    """The for loops of `body` that name one of `names`, and the nodes of every for
    loop (what the walk's work on entering it grows with). (A loop's walk is kept on
    it, mcl.mcpl.ast.walk: the other passes of the check walk the same loops.)"""
    touching: set[Ref[ast.For]] = set()
    sizes: dict[Ref[ast.For], int] = {}
    for loop in ast.walk(body):
        if isinstance(loop, ast.For):
            nodes = tuple(ast.walk(loop))
            sizes[Ref(loop)] = len(nodes)
            if any(isinstance(n, ast.Name) and n.name in names for n in nodes):
                touching.add(Ref(loop))
    return touching, sizes


def _leading(access: _BarrierAccess, other: _BarrierAccess) -> _BarrierAccess:
    """`access` cut to as many subscripts as `other` has (the tile both lie in)."""
    n = min(len(access.indices), len(other.indices))
    return replace(access, indices=access.indices[:n], expanded=access.expanded[:n])


def _flat_indices(body: ast.Stmt, counts: dict[str, ast.Expr]) -> set[str]:
    """The variables that number the units of nested foreach statements from 0, as
    translation writes a thread's index within its block (`int t = wt * nrThreadsBlock +
    tt;`, docs/translation.md): declared once from a sum of indices, each times nothing or
    an inner foreach's count, and never assigned. Each is at least 0, like an index."""
    declared = [d for d in ast.walk(body) if isinstance(d, ast.Decl)]
    names = [d.name for d in declared]
    assigned = assigned_names(body)
    return {d.name for d in declared
            if d.init is not None and names.count(d.name) == 1 and d.name not in assigned
            and _is_flat(d.init, counts)}


def _is_flat(e: ast.Expr, counts: dict[str, ast.Expr]) -> bool:
    match e:
        case ast.Binary(op="+"):
            return _is_flat(e.left, counts) and _is_flat(e.right, counts)
        case ast.Binary(op="*"):
            return any(_is_flat(index, counts) and factor in counts.values()
                       for index, factor in ((e.left, e.right), (e.right, e.left)))
        case ast.Name():
            return e.name in counts
    return False


def _never_equal(x: ast.Expr, y: ast.Expr) -> bool:
    """Do two integer subscripts differ for every value of their variables? Decided for
    linear forms: x - y = c + sum(k_i v_i) has no integer root when gcd(k_i) does not
    divide c (`cur` and `1 - cur` differ by 1 - 2 cur, which is odd); and for remainders
    by one constant M whose operands differ by a constant that M does not divide (`(k +
    1) % 2` and `k % 2`, a double buffer's halves: C's remainder of x is x modulo M, also
    for a negative x)."""
    match x, y:
        case (ast.Binary(op="%", right=ast.IntLit(value=m)),
              ast.Binary(op="%", right=ast.IntLit(value=m2))) if m == m2 and m != 0:
            dx, dy = _linear(x.left), _linear(y.left)
            if dx is None or dy is None:
                return False
            difference = _add(dx, {k: -v for k, v in dy.items()})
            return set(difference) <= {""} and difference.get("", 0) % m != 0
    dx, dy = _linear(x), _linear(y)
    if dx is None or dy is None:
        return False
    difference = dict(dx)
    for name, k in dy.items():
        difference[name] = difference.get(name, 0) - k
    constant = difference.pop("", 0)
    divisor = 0
    for k in difference.values():
        divisor = math.gcd(divisor, k)
    return constant != 0 if divisor == 0 else constant % divisor != 0


def _linear(e: ast.Expr) -> dict[str, int] | None:
    """`e` as {variable: coefficient, "": constant}, or None when it is not linear."""
    match e:
        case ast.IntLit():
            return {"": e.value}
        case ast.Name():
            return {e.name: 1}
        case ast.Unary(op="-"):
            inner = _linear(e.operand)
            return None if inner is None else {k: -v for k, v in inner.items()}
        case ast.Binary(op="+" | "-" | "*"):
            left, right = _linear(e.left), _linear(e.right)
            if left is None or right is None:
                return None
            if e.op == "*":
                if set(left) == {""}:
                    return {k: v * left[""] for k, v in right.items()}
                if set(right) == {""}:
                    return {k: v * right[""] for k, v in left.items()}
                return None
            sign = 1 if e.op == "+" else -1
            out = dict(left)
            for k, v in right.items():
                out[k] = out.get(k, 0) + sign * v
            return out
    return None  # any other kind is not a linear form of names


def _renamed(e: ast.Expr, names: frozenset[str]) -> ast.Expr:
    """`e` with each of `names` replaced by a fresh name (its value in another iteration)."""
    if not names:
        return e
    return ast.transform(e, lambda n: ast.Name(n.name + "'", span=n.span)
                         if isinstance(n, ast.Name) and n.name in names else None)


def _add(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return {k: v for k, v in out.items() if v or k == ""}


def _constant_below(high: dict, low: dict) -> bool:
    """Is high < low for every value of the variables (their difference a constant)?"""
    difference = _add(high, {k: -v for k, v in low.items()})
    return set(difference) <= {""} and difference.get("", 0) < 0


def _linear_names(form: dict) -> set[str]:
    return {k for k in form if k}


def _unit_bound(cond: ast.Expr, holds: bool, unit: str) -> tuple[str, dict] | None:
    """A bound `t < e` (as ("high", e - 1)) or `t >= e` (("low", e)) that the branch
    condition puts on unit index `t`, also negated (the else branch)."""
    if not (isinstance(cond, ast.Binary) and cond.op in ("<", "<=", ">", ">=")):
        return None
    op, left, right = cond.op, cond.left, cond.right
    if isinstance(right, ast.Name) and right.name == unit:
        op, left, right = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}[op], right, left
    if not (isinstance(left, ast.Name) and left.name == unit):
        return None
    if not holds:
        op = {"<": ">=", "<=": ">", ">": "<=", ">=": "<"}[op]
    form = _linear(right)
    if form is None:
        return None
    return {"<": ("high", _add(form, {"": -1})), "<=": ("high", form),
            ">": ("low", _add(form, {"": 1})), ">=": ("low", form)}[op]
