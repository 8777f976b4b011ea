"""Checking one MCPL function: where statements, declarations and barriers stand, foreach
nesting, and the rules that need the whole body (mcpl.md §5; the paper's section 4.3 and
Figure 6).

The walk keeps the chain of enclosing foreach statements: their par_groups decide where
statements may stand (via `mcl.mcpl.nesting`), and their indices may not reach a foreach
count. Expressions, names and calls are checked by the base class
(`mcl.mcpl.check_expressions`). Rules that need the whole body (is this variable ever
written? used?) are checked when the walk is done, from the read/write inference of
`mcl.mcpl.access`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcl.diagnostics import Diagnostic, Span, did_you_mean
from mcl.hdl.model import HardwareDescription, ParGroup
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.access import lvalue_parts, written_names
from mcl.mcpl.builtins import BUILTINS, SIGNATURE_CALLS
from mcl.mcpl.capacity import CapacityTally, array_bytes
from mcl.mcpl.check_expressions import INTEGER_OPS, ExpressionChecker
from mcl.mcpl.constfold import FoldError, fold_binary
from mcl.mcpl.environment import ModuleEnv
from mcl.mcpl.nesting import (
    barrier_problem,
    declaration_problem,
    effective_spaces,
    is_executing_level,
    nesting_problem,
)
from mcl.mcpl.positions import SourceText, head
from mcl.mcpl.printer import print_expr, print_type
from mcl.mcpl.scopes import Kind, Symbol
from mcl.mcpl.unit_capacity import OwnArrayLimit, in_registers, level_limit
from mcl.mcpl.visitor import unknown_node

# Placement of a statement (Fig. 6): where executing statements may stand.
DEVICE = "device"  # innermost foreach of the executing unit, or a function without foreach
HOST = "host"  # outside all foreach statements of a function that has some
OUTER = "outer"  # inside a foreach, but not the innermost one of the executing unit

# The statements that execute (rule 4 places them); declarations, blocks and foreach
# statements have rules of their own.
Executing = (ast.Assign | ast.IncDec | ast.CallStmt | ast.Swap | ast.If | ast.For | ast.Barrier
             | ast.Return)


@dataclass
class _Frame:
    """An enclosing foreach statement and its par_group (None when unknown)."""

    foreach: ast.Foreach
    group: ParGroup | None


def _contains_foreach(node: object) -> bool:
    return any(isinstance(n, ast.Foreach) for n in ast.walk(node))


class FunctionChecker(ExpressionChecker):
    def __init__(
        self,
        env: ModuleEnv,
        function: ast.Function,
        hwd: HardwareDescription | None,
        source: SourceText,
        fields: bool = False,
    ) -> None:
        super().__init__(env, function, hwd, source)
        self.fields = fields  # checking the fields of a user type, not a function body
        self.frames: list[_Frame] = []
        self.effects = env.table.effects(function)
        self.param_modes = env.table.params(function)
        self.has_foreach = _contains_foreach(function.body)
        # Foreach statements with another foreach inside: their bodies are not innermost.
        self.nesting = {
            Ref(n)
            for n in ast.walk(function.body)
            if isinstance(n, ast.Foreach) and _contains_foreach(n.body)
        }
        self.misplaced = 0  # > 0 inside a statement already reported as misplaced
        self._written: frozenset[str] | None = None  # `rewritten`'s names, once asked
        self._capacity: CapacityTally | None = None  # arrays against the level's memories
        self._unit_limit: tuple[OwnArrayLimit | None] | None = None  # at the first own array
        self.is_signature_only = any(
            isinstance(s, ast.CallStmt) and s.call.func in SIGNATURE_CALLS
            for s in ast.walk(function.body)
        )

    def run(self) -> list[Diagnostic]:
        f = self.function
        params: list[tuple[ast.Param, Symbol]] = []
        for p in f.params:
            sym = Symbol(
                p.name,
                Kind.PARAM,
                T.UNKNOWN,
                p,
                p.span,
                spaces=p.spaces,
                const=p.const,
            )
            if self.scopes.declare(p.name, sym) is not None:
                self.error(
                    "mcpl-duplicate",
                    f"parameter '{p.name}' is declared twice in '{f.name}'",
                    p.span,
                    "rename one of them",
                )
            params.append((p, sym))
        # Types after all names: `float[n] a` may use any scalar parameter as a size.
        for p, sym in params:
            sym.type = self.resolve_type(p.type)
            self.check_spaces(p.spaces, p.span)
            self.declared.append(sym)
        self.resolve_type(f.ret, allow_void=True)
        self.block(f.body.stmts)
        self.finish()
        return self.diags

    def placement(self) -> str:
        if self.hwd is None:
            return DEVICE
        if not self.frames:
            return HOST if self.has_foreach else DEVICE
        frame = self.frames[-1]
        if frame.group is None:
            return DEVICE  # unknown par_group: already reported, do not cascade
        if Ref(frame.foreach) in self.nesting or not is_executing_level(self.hwd, frame.group):
            return OUTER
        return DEVICE

    def level(self) -> ParGroup | None:
        """The par_group whose unit runs the current statement (None: host side)."""
        if self.frames:
            return self.frames[-1].group
        if self.hwd is not None and not self.has_foreach:
            # A function without foreach runs inside the caller's innermost foreach.
            return self.hwd.executing_unit().group
        return None

    def block(self, stmts: tuple[ast.Stmt, ...]) -> None:
        with self.scopes.nested():
            for s in stmts:
                self.stmt(s)

    def nested(self, s: ast.Stmt) -> None:
        if isinstance(s, ast.Block):
            self.block(s.stmts)
        else:
            with self.scopes.nested():
                self.stmt(s)

    def stmt(self, s: ast.Stmt) -> None:
        self.visit(s)

    def visit_Block(self, s: ast.Block) -> None:
        self.block(s.stmts)

    def visit_Decl(self, s: ast.Decl) -> None:
        self.decl(s)

    def visit_ViewDecl(self, s: ast.ViewDecl) -> None:
        self.view_decl(s)

    def visit_Foreach(self, s: ast.Foreach) -> None:
        self.foreach(s)

    def _placed(self, s: Executing) -> None:
        """An executing statement: where it stands (rule 4), then what it does."""
        misplaced = self.check_placement(s)
        self.misplaced += misplaced
        try:
            self.executing(s)
        finally:
            self.misplaced -= misplaced

    visit_Assign = visit_IncDec = visit_CallStmt = visit_Swap = _placed
    visit_If = visit_For = visit_Barrier = visit_Return = _placed

    def check_placement(self, s: ast.Stmt) -> bool:
        """Rule 4: executing statements stand in the innermost foreach of the executing
        par_unit, or (scalar size computations, Fig. 9) outside all foreach statements."""
        if self.misplaced:
            return False
        where = self.placement()
        if where == DEVICE:
            return False
        assert self.hwd is not None
        unit = self.hwd.executing_unit()
        innermost = f"the innermost foreach over '{unit.group.name}'"
        # Mark the keyword of a compound statement, not all of its lines.
        span = (
            head(s.span, {ast.If: 2, ast.For: 3}[type(s)])
            if isinstance(s, (ast.If, ast.For))
            else s.span
        )
        if where == OUTER:
            frame = self.frames[-1]
            assert frame.group is not None and frame.group.unit is not None
            if isinstance(s, ast.Barrier):
                return False  # barrier placement has its own rule (5)
            here = frame.group.unit.name
            if frame.group.unit is unit:
                # Nested foreach statements over one par_group are one multi-dimensional
                # foreach (Fig. 2): only the innermost one holds statements.
                self.error(
                    "mcpl-statement-level",
                    "executing statements stand only in the innermost foreach; this one "
                    f"stands in a foreach over '{frame.group.name}' that holds another foreach",
                    span,
                    "move it into the innermost foreach",
                )
            else:
                self.error(
                    "mcpl-statement-level",
                    f"this statement stands at the level of par_unit '{here}', but only the "
                    f"executing par_unit '{unit.name}' runs statements",
                    span,
                    f"move it into {innermost}; only declarations in memory spaces of "
                    f"'{here}' may stand here",
                )
            return True
        # HOST: scalar computations only
        match s:
            case ast.If() | ast.For() | ast.Return():
                return False
            case ast.Assign(target=ast.Name() as target) | ast.IncDec(target=ast.Name() as target):
                sym = self.scopes.lookup(target.name)
                if sym is None or not isinstance(sym.type, T.Array):
                    return False
            case ast.Barrier():
                return False  # reported by the barrier rule
        self.error(
            "mcpl-statement-level",
            "outside all foreach statements (host code) only scalar declarations and "
            "assignments may stand",
            span,
            f"move it into {innermost}",
        )
        return True

    def executing(self, s: Executing) -> None:
        match s:
            case ast.Assign():
                self.assign(s)
            case ast.IncDec():
                self.inc_dec(s)
            case ast.CallStmt():
                if s.call.func in SIGNATURE_CALLS:
                    self.signature_call(s.call)
                else:
                    self.env.tables.record_type(s.call, self.call(s.call, statement=True))
            case ast.Swap():
                self.swap(s)
            case ast.If():
                self.condition(s.cond, "if")
                self.nested(s.then)
                if s.orelse is not None:
                    self.nested(s.orelse)
            case ast.For():
                self.for_(s)
            case ast.Barrier():
                self.barrier(s)
            case ast.Return():
                self.return_(s)
            case _:
                unknown_node(s, "the checker")

    def inc_dec(self, s: ast.IncDec) -> None:
        t = self.expr(s.target)
        self.check_lvalue(s.target, f"'{s.op}'")
        if not T.is_numeric(t):
            self.error(
                "mcpl-type-mismatch",
                f"'{s.op}' needs a number, not {t}",
                s.span,
            )
        self.write_site(s.target, s.target.span, None)

    def swap(self, s: ast.Swap) -> None:
        lt, rt = self.expr(s.left), self.expr(s.right)
        self.check_lvalue(s.left, "'<=>'")
        self.check_lvalue(s.right, "'<=>'")
        if not (T.assignable(lt, rt) and T.assignable(rt, lt)):
            self.error(
                "mcpl-type-mismatch",
                f"cannot swap {lt} and {rt}: both sides need the same type",
                s.span,
            )
        self.write_site(s.left, s.left.span, None)
        self.write_site(s.right, s.right.span, None)

    def for_(self, s: ast.For) -> None:
        with self.scopes.nested():
            if isinstance(s.init, ast.Decl):
                self.decl(s.init, kind=Kind.LOOP)
            else:
                self.assign(s.init)
            self.condition(s.cond, "for")
            if isinstance(s.step, ast.Assign):
                self.assign(s.step)
            else:
                self.executing(s.step)
            self.nested(s.body)

    def condition(self, e: ast.Expr, what: str) -> None:
        t = self.expr(e)
        if not T.is_bool(t):
            self.error(
                "mcpl-condition-type",
                f"the condition of '{what}' must be bool, not {t}",
                e.span,
                "compare explicitly, e.g. `x != 0`",
            )

    def assign(self, s: ast.Assign) -> None:
        value = self.expr(s.value)
        target = self.expr(s.target)
        if not self.check_lvalue(s.target, "an assignment"):
            return
        if isinstance(target, T.Array):
            self.error(
                "mcpl-type-mismatch",
                "an array cannot be assigned as a whole",
                s.target.span,
                "assign its elements, e.g. in a for loop",
            )
        elif s.op == "=":
            if not T.assignable(target, value):
                self.error(
                    "mcpl-type-mismatch",
                    f"cannot assign {value} to {self.describe(s.target)} of type {target}",
                    s.value.span,
                    T.conversion_hint(target, value),
                )
            else:
                self.check_narrow(target, s.value)
        else:
            op = s.op[:-1]
            self.compound_operand(op, s.value)
            needs_int = op in INTEGER_OPS
            ok = T.is_integral if needs_int else T.is_numeric
            if not (ok(target) and ok(value)):
                kind = "integers" if needs_int else "numbers"
                self.error(
                    "mcpl-type-mismatch",
                    f"'{s.op}' needs {kind}, not {target} and {value}",
                    s.span,
                )
            elif not T.assignable(target, T.wider(target, value)):
                self.error(
                    "mcpl-type-mismatch",
                    f"'{s.op}' stores {T.wider(target, value)} in {self.describe(s.target)} "
                    f"of type {target}",
                    s.value.span,
                    T.conversion_hint(target, value),
                )
        self.write_site(s.target, s.target.span, None)
        root, _ = lvalue_parts(s.target)
        if root is not None and self.depends_on_index(s.value):
            sym = self.scopes.lookup(root.name)
            if sym is not None:
                self.tainted.add(sym)

    def decl(self, d: ast.Decl, kind: Kind = Kind.LOCAL) -> None:
        vt = self.resolve_type(d.type)
        self.check_spaces(d.spaces, d.span)
        if d.init is not None:
            it = self.expr(d.init)
            if isinstance(vt, T.Array) and isinstance(it, T.Array):
                # The original MCL accepts `float[w] row = input[2];` but prints it as C
                # (`float row[w] = input[...]`), which C compilers refuse: neither a copy
                # nor an alias is defined, so mcl does not pick one (docs/mcpl.md 10).
                self.error(
                    "mcpl-array-initialiser",
                    f"'{d.name}' is initialised from an array; the original MCL leaves "
                    "open whether that copies or aliases it, so mcl does neither",
                    d.init.span,
                    f"to alias, declare a view of it: `{print_expr(d.init)} as "
                    f"{print_type(d.type)} {d.name};`; to copy, assign the elements in a "
                    "for loop",
                )
            elif isinstance(vt, T.Array):
                self.error(
                    "mcpl-type-mismatch",
                    "an array cannot be initialised with a value",
                    d.init.span,
                    "assign its elements, e.g. in a for loop",
                )
            elif not T.assignable(vt, it):
                self.error(
                    "mcpl-type-mismatch",
                    f"cannot initialise '{d.name}' of type {vt} with {it}",
                    d.init.span,
                    T.conversion_hint(vt, it),
                )
            else:
                self.check_narrow(vt, d.init)
        host = not self.frames and self.has_foreach and self.hwd is not None
        self.check_declaration_level(d, isinstance(vt, T.Array), host)
        self.check_capacity(d, vt)
        sym = Symbol(
            d.name,
            kind,
            vt,
            d,
            d.span,
            spaces=d.spaces,
            const=d.const,
            host=host and not d.spaces and not isinstance(vt, T.Array),
        )
        if d.init is not None:
            sym.deps = self.constant_deps(d.init)
            if self.depends_on_index(d.init):
                self.tainted.add(sym)
            if not isinstance(vt, T.Array):
                sym.value = self.constant(d.init)
        self.declare(sym, d.span)
        if d.view is not None:
            self.view(d.view, sym, d.span)

    def declare(self, sym: Symbol, span: Span | None) -> None:
        previous = self.scopes.declare(sym.name, sym)
        if previous is not None:
            self.error(
                "mcpl-duplicate",
                f"'{sym.name}' is already declared in this block",
                self.source.word(sym.name, span) if sym.kind is not Kind.PARAM else span,
                f"the first declaration is at line {previous.span.line}"
                if previous.span
                else "rename one of them",
            )
        self.declared.append(sym)

    def constant_deps(self, e: ast.Expr) -> list[Symbol] | None:
        """The variables an initialiser is computed from, if it could be an array size
        (no array elements, no calls of user functions); None otherwise."""
        deps: list[Symbol] = []
        for node in ast.walk(e):
            match node:
                case ast.Index():
                    return None
                case ast.Call() if node.func not in BUILTINS:
                    return None
                case ast.Name():
                    sym = self.scopes.lookup(node.name)
                    if sym is not None:
                        if sym.kind in (Kind.INDEX, Kind.LOOP):
                            return None
                        deps.append(sym)
        return deps

    def write_site(
        self, target: ast.Expr, span: Span | None, through: tuple[str, str] | None
    ) -> None:
        super().write_site(target, span, through)
        root, _ = lvalue_parts(target)
        sym = self.scopes.lookup(root.name) if root is not None else None
        if sym is not None and sym.host and self.frames:
            # Section 4: a scalar declared outside every foreach is one value of the host,
            # shared by all units; each unit writing it would race with the others (the
            # generated code holds it as a constant of the kernel).
            by = f" (through '{through[0]}')" if through else ""
            self.error(
                "mcpl-host-scalar-write",
                f"'{sym.name}' is declared outside all foreach statements, one value "
                f"shared by every unit; writing it inside a foreach{by} is a race between "
                "the units",
                span,
                "declare it inside the foreach, so that each unit has its own copy, or "
                "write it outside all foreach statements",
            )

    def compound_operand(self, op: str, value: ast.Expr) -> None:
        """`x /= 0`, `x %= 0`, `x <<= 33`: the rules of `x / 0`, `x % 0`, `x << 33`."""
        if op in ("<<", ">>"):
            self.shift_count(value, value.span)
        elif op in ("/", "%"):
            try:
                fold_binary(op, None, self.constant(value))
            except FoldError as exc:
                self.error(exc.code, exc.message, value.span, exc.hint)

    def never_rewritten(self, sym: Symbol) -> bool:
        return not self.rewritten(sym.name)

    def rewritten(self, name: str) -> bool:
        """Whether the function may write a variable called `name` after declaring it: an
        assignment, ++/--, a swap, or passing it to a call (which may write it)."""
        if self._written is None:  # one walk of the body for all its declarations
            self._written = frozenset(written_names(self.function.body))
        return name in self._written

    def check_declaration_level(self, d: ast.Decl, is_array: bool, host: bool) -> None:
        """Fig. 6: a declaration's nesting matches the nesting of its memory space; host
        scalars without a space hold sizes (Fig. 9) and live on the host."""
        if self.hwd is None or self.misplaced or (self.frames and self.frames[-1].group is None):
            return
        if host and not d.spaces and not is_array:
            return
        if not d.spaces and not is_array and d.init is not None and not self.rewritten(d.name):
            # The original MCL declares scalars between foreach levels (`int base = b * 32;`
            # inside the blocks, outside the threads): each unit below holds the value in
            # its registers. Never written again, every reading gives the same value.
            return
        level = self.level()
        spaces = effective_spaces(self.hwd, d.spaces, is_array, level)
        problem = declaration_problem(self.hwd, level, spaces)
        if problem is not None:
            message, hint = problem
            span = d.span
            if d.spaces:
                span = self.source.word(spaces[0].name, d.span)
            self.error("mcpl-declaration-level", f"'{d.name}': {message}", span, hint)

    def check_capacity(self, d: ast.Decl, vt: T.VType) -> None:
        """A constant-size array that the level's memory cannot hold (mcl.mcpl.capacity)."""
        if self.hwd is None or self.misplaced or not isinstance(d.type, ast.ArrayType):
            return
        size = array_bytes(vt, self.element_count(_sizes(d.type)))
        if size is None:
            return
        if self._capacity is None:
            self._capacity = CapacityTally(self.hwd)
        spaces = effective_spaces(self.hwd, d.spaces, True, self.level())
        if in_registers(self.hwd, spaces):
            self.check_unit_capacity(d, size, self.hwd.executing_unit().name)
            return
        # Between foreach levels every declared array exists at once (module docstring).
        together = self.placement() != DEVICE
        level = Ref(self.frames[-1].foreach) if together and self.frames else (
            Ref(self.function) if together else None)
        excess = self._capacity.add(level, d.name, spaces, size)
        if excess is not None:
            self.error("mcpl-memory-capacity", excess.message(), d.span,
                       "use smaller arrays (a smaller tile), or keep part of the data in a "
                       "larger, slower memory space")

    def check_unit_capacity(self, d: ast.Decl, size: int, unit: str) -> None:
        """A unit's own array (its registers) against the most any leaf below the level
        keeps for one unit (mcl.mcpl.unit_capacity)."""
        assert self.hwd is not None
        if self._unit_limit is None:
            self._unit_limit = (level_limit(self.env.library, self.hwd.name),)
        limit = self._unit_limit[0]
        if limit is None or size <= limit.bytes:
            return
        at_leaf = limit.leaf == self.hwd.name
        where = (f"'{self.hwd.name}' keeps at most" if at_leaf else
                 f"no leaf below '{self.hwd.name}' keeps more than")
        self.error("mcpl-memory-capacity",
                   f"'{d.name}' needs {size:,} B in each {unit}, but {where} "
                   f"{limit.describe(name_leaf=not at_leaf)}",
                   d.span,
                   "what a unit's registers do not hold is kept in device memory, one copy "
                   "for each unit the device holds at once: use a smaller array, or a "
                   "memory space that the units share")

    def view(self, v: ast.View, source: Symbol, span: Span | None,
             part: ast.Expr | None = None) -> None:
        """`source as T v`, or a view of a part of `source` (an element or a field): one
        rule for both, on the type of what is viewed."""
        vt = self.resolve_type(v.type)
        viewed = source.type if part is None else self.expr(part)
        what = source.name if part is None else print_expr(part)
        if not isinstance(viewed, (T.Array, T.Unknown)):
            self.error(
                "mcpl-type-mismatch",
                f"'{what}' is not an array, so it has no view",
                span,
                "a view gives another shape to an array, or to an element or a field that "
                "is an array",
            )
        elif isinstance(vt, T.Array) and isinstance(viewed, T.Array):
            if vt.element != viewed.element and not isinstance(viewed.element, T.Unknown):
                self.error(
                    "mcpl-type-mismatch",
                    f"view '{v.name}' has elements of type {vt.element}, but "
                    f"'{what}' holds {viewed.element}",
                    v.span or span,
                )
            self.view_size(v, self.viewed_sizes(source, part), what, span)
        sym = Symbol(
            v.name,
            Kind.VIEW,
            vt,
            v,
            v.span or span,
            spaces=source.spaces,
            const=source.const,
            storage=source,
        )
        self.declare(sym, v.span or span)

    def view_size(self, v: ast.View, sizes: tuple[ast.Expr, ...] | None, what: str,
                  span: Span | None) -> None:
        """A view needs no more elements than the storage it views holds (the rule the
        interpreter applies when it runs), checked here where both counts are constants."""
        needed, held = self.element_count(_sizes(v.type)), self.element_count(sizes)
        if needed is not None and held is not None and needed > held:
            self.error(
                "mcpl-array-size",
                f"view '{v.name}' needs {needed} elements, but '{what}' holds {held}",
                v.span or span,
                "a view gives the storage it views another shape: its sizes multiply to at "
                "most the elements that storage holds",
            )

    def element_count(self, sizes: tuple[ast.Expr, ...] | None) -> int | None:
        count = 1
        for size in sizes if sizes is not None else (None,):
            value = self.constant(size) if size is not None else None
            if not isinstance(value, int) or isinstance(value, bool):
                return None
            count *= value
        return count

    @staticmethod
    def viewed_sizes(source: Symbol, part: ast.Expr | None) -> tuple[ast.Expr, ...] | None:
        """The sizes of the storage a view views, as declared: the whole array's, or those
        an element of it leaves (`a[i]` of `float[n][16] a`: 16); None for a field (its
        sizes belong to its type) and for what is not a declared array."""
        declared = getattr(source.node, "type", None)
        steps = 0
        while isinstance(part, ast.Index):
            steps, part = steps + 1, part.base
        if part is not None and not isinstance(part, ast.Name) or not isinstance(
                declared, ast.ArrayType):
            return None
        return _sizes(declared, steps)

    def view_decl(self, s: ast.ViewDecl) -> None:
        source = self.scopes.lookup(s.source)
        if source is None:
            self.unknown_name(s.source, self.source.word(s.source, s.span))
            source = Symbol(s.source, Kind.LOCAL, T.UNKNOWN, s, s.span)
            part = None
        else:
            source.used = True
            self.bind(s, source)
            part = s.part
        self.view(s.view, source, s.span, part)

    def foreach(self, s: ast.Foreach) -> None:
        group: ParGroup | None = None
        if self.hwd is not None:
            group = self.hwd.par_group(s.group)
            if group is None:
                self.unknown_par_group(s)
        count = self.expr(s.count)
        if not T.is_integral(count):
            self.error(
                "mcpl-type-mismatch",
                f"the count of a foreach must be an integer, not {count}",
                s.count.span,
            )
        self.check_count_sign(s)
        if group is not None:
            self.check_count_limit(s, group)
        for node in ast.walk(s.count):
            if isinstance(node, ast.Name):
                sym = self.scopes.lookup(node.name)
                if sym is not None and sym in self.tainted:
                    why = (
                        "is the index of an enclosing foreach"
                        if sym.kind is Kind.INDEX
                        else "is computed from the index of an enclosing foreach"
                    )
                    self.error(
                        "mcpl-foreach-count",
                        "the count of a foreach may not depend on the index of an enclosing "
                        f"foreach: '{node.name}' {why}",
                        node.span,
                        "use a count that is the same for every unit, e.g. a parameter",
                    )
                    break
        if self.hwd is not None and group is not None:
            outer_frame = self.frames[-1] if self.frames else None
            if outer_frame is None or outer_frame.group is not None:
                problem = nesting_problem(
                    self.hwd, outer_frame.group if outer_frame else None, group
                )
                if problem is not None:
                    self.error("mcpl-foreach-nesting", problem[0], head(s.span, 7), problem[1])
        shadowed = self.scopes.lookup(s.var)
        if shadowed is not None and shadowed.kind is Kind.INDEX:
            # Translation puts the indices of nested foreach statements side by side in
            # one block (paper Appendix A), where one name cannot mean two indices.
            self.error(
                "mcpl-duplicate",
                f"'{s.var}' is already the index of an enclosing foreach",
                self.source.word(s.var, s.span),
                f"the enclosing foreach is at line {shadowed.span.line}; give this index "
                "another name" if shadowed.span else "give this index another name",
            )
        self.frames.append(_Frame(s, group))
        try:
            with self.scopes.nested():
                index = Symbol(s.var, Kind.INDEX, T.INT, s, s.span, const=True)
                self.tainted.add(index)
                self.declare(index, s.span)
                index.used = True  # an unused index is normal (`foreach (int i in 1 ...)`)
                self.nested(s.body)
        finally:
            self.frames.pop()

    def check_count_sign(self, s: ast.Foreach) -> None:
        """A foreach runs `count` units: a constant count below 1 runs none (and OpenCL
        cannot launch it); `n - 100` runs none for every n up to 100, which is worth a
        warning since parameters are only known at run time."""
        value = self.constant(s.count)
        if value is not None:
            if value < 1:
                self.error(
                    "mcpl-foreach-count",
                    f"the count of this foreach is {value}: it runs no units",
                    s.count.span,
                    "a foreach count must be at least 1",
                )
            return
        e = s.count
        if isinstance(e, ast.Binary) and e.op == "-":
            subtracted = self.constant(e.right)
            if subtracted is not None and subtracted > 0:
                self.warn(
                    "mcpl-foreach-count",
                    f"the count '{print_expr(e)}' of this foreach is not positive when "
                    f"'{print_expr(e.left)}' is {subtracted} or less: it runs no units then",
                    s.count.span,
                    "make sure the count is at least 1, e.g. max(1, ...) or a guard",
                )

    def check_count_limit(self, s: ast.Foreach, group: ParGroup) -> None:
        """`foreach (int t in 5000 threads)` where the level allows 1,024 threads per block:
        the description bounds the units of a par_group (paper section 4.2), and a launch
        beyond it fails, or the generated kernel demands a work-group size the device
        rejects."""
        value = self.constant(s.count)
        limit = group.count
        if not isinstance(value, int):
            return
        if value <= limit:
            self.check_nested_limit(s, group, value)
            return
        self.error(
            "mcpl-foreach-limit",
            f"this foreach runs {value} {s.group}, but '{self.hwd.name if self.hwd else ''}' "
            f"allows at most {limit:g} in one group",
            s.count.span,
            f"use at most {limit:g} {s.group} and let each unit do more work (a for loop), "
            "or move the extra units to an enclosing par_group",
        )

    def unknown_par_group(self, s: ast.Foreach) -> None:
        assert self.hwd is not None
        groups = [g.name for g in self.hwd.par_groups()]
        unit = self.hwd.par_unit(s.group)
        if unit is not None:
            hint = f"'{s.group}' is a par_unit; a foreach takes its par_group '{unit.group.name}'"
        else:
            hint = did_you_mean(s.group, groups) or (
                f"par_groups of '{self.hwd.name}': " + ", ".join(groups)
            )
        within = s.span
        start = s.count.span
        self.error(
            "mcpl-unknown-par-group",
            f"unknown par_group '{s.group}' in hardware description '{self.hwd.name}'",
            self.source.word(s.group, within, start),
            hint,
        )

    def check_nested_limit(self, s: ast.Foreach, group: ParGroup, value: int) -> None:
        """Foreach statements of one par_group nested in each other (`foreach (u in 64
        threads) { foreach (t in 32 threads) ...`) are one multi-dimensional foreach (the
        paper's Figure 2, `i` and `j`): one group of their product's units, held to the
        limit as one count would be (a work-group's size is the product of its
        dimensions)."""
        product, counts = value, [value]
        for frame in reversed(self.frames):
            if frame.group is not group:
                break
            outer = self.constant(frame.foreach.count)
            if not isinstance(outer, int):
                return  # (a count from a size: decided at the launch)
            product *= outer
            counts.insert(0, outer)
        if product <= group.count or len(counts) == 1:
            return
        self.error(
            "mcpl-foreach-limit",
            f"the nested foreach statements of {s.group} here run "
            f"{' * '.join(str(c) for c in counts)} = {product} {s.group} together, but "
            f"'{self.hwd.name if self.hwd else ''}' allows at most {group.count:g} in one group",
            s.count.span,
            f"use at most {group.count:g} {s.group} in all, and let each unit do more work "
            "(a for loop)",
        )

    def barrier(self, s: ast.Barrier) -> None:
        if self.hwd is None:
            return
        if self.frames and self.frames[-1].group is None:
            return  # inside a foreach over an unknown par_group: already reported
        space = self.hwd.memory_space(s.space)
        if space is None:
            self.check_spaces((s.space,), s.span)
            return
        problem = barrier_problem(self.hwd, self.level(), space)
        if problem is not None:
            self.error("mcpl-barrier", problem[0], s.span, problem[1])

    def return_(self, s: ast.Return) -> None:
        ret = self.env.return_type(self.function)
        if s.value is None:
            if ret != T.VOID:
                self.error(
                    "mcpl-return",
                    f"'{self.function.name}' returns {ret}, so return needs a value",
                    s.span,
                )
            return
        value = self.expr(s.value)
        if ret == T.VOID:
            self.error(
                "mcpl-return",
                f"'{self.function.name}' returns void, so return takes no value",
                s.value.span,
            )
        elif not T.assignable(ret, value):
            self.error(
                "mcpl-type-mismatch",
                f"'{self.function.name}' returns {ret}, not {value}",
                s.value.span,
                T.conversion_hint(ret, value),
            )

    def finish(self) -> None:
        self.check_sizes()
        self.record_bindings()
        for sym in self.declared:
            self.check_needs_space(sym)
            if (
                sym.kind is Kind.LOCAL
                and not sym.used
                and not self.is_signature_only
                and not self.fields
            ):
                self.warn(
                    "mcpl-unused-variable",
                    f"variable '{sym.name}' is declared but never used",
                    self.source.word(sym.name, sym.span),
                    "remove it",
                )

    def written(self, sym: Symbol) -> bool:
        if sym.kind is Kind.PARAM:
            return "w" in self.param_modes.get(sym.name, "")
        return "w" in self.effects.get(Ref(sym.node), "")

    def check_sizes(self) -> None:
        """Rule 6, decided now that every write is known."""
        reported: set[tuple[Symbol, Span | None]] = set()
        for sym, span, via in self.size_uses:
            key = (sym, span)
            if key in reported:
                continue
            if sym.kind is Kind.LOCAL:
                decl = sym.node
                if not isinstance(decl, ast.Decl) or decl.init is None or sym.deps is None:
                    reported.add(key)
                    self.error(
                        "mcpl-array-size",
                        f"an array size cannot use '{sym.name}': it is a variable, not a constant",
                        span,
                        "sizes may only use constants, parameters that are never written, "
                        "and variables initialised from those",
                    )
                    continue
            if sym.kind in (Kind.PARAM, Kind.LOCAL) and self.written(sym):
                reported.add(key)
                through = f" (through '{via.name}')" if via is not sym else ""
                self.error(
                    "mcpl-array-size",
                    f"an array size cannot use '{sym.name}'{through}: "
                    f"'{sym.name}' is written in '{self.function.name}'",
                    span,
                    "sizes may only use constants and parameters that are never written; "
                    f"write to a copy of '{sym.name}' instead",
                )

    def check_needs_space(self, sym: Symbol) -> None:
        """Section 4.3: 'variables that have an array type or that are written need to have
        a memory space modifier unless the hardware description has the property default'."""
        if self.hwd is None or sym.spaces or sym.host or sym.kind in (Kind.INDEX, Kind.VIEW):
            return
        if self.hwd.default_spaces():
            return
        is_array = isinstance(sym.type, T.Array)
        if not (is_array or self.written(sym)):
            return
        what = "an array" if is_array else "written"
        spaces = [s.name for s in self.hwd.memory_spaces()]
        self.error(
            "mcpl-missing-space",
            f"'{sym.name}' is {what}, so it needs a memory space: '{self.hwd.name}' has no "
            "default memory space",
            self.source.word(sym.name, sym.span) if sym.kind is not Kind.PARAM else sym.span,
            "add a memory-space modifier, one of: " + ", ".join(spaces),
        )


def _sizes(t: ast.ArrayType, skip: int = 0) -> tuple[ast.Expr, ...]:
    """The sizes of an array type past its first `skip` bracket groups."""
    return tuple(size for group in t.dims[skip:] for size in group)
