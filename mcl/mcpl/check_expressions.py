"""Checking MCPL expressions and the names and types in them (mcpl.md §5 rules 1, 2, 6, 7).

`ExpressionChecker` holds what a walk over one function needs for expressions: the block
scopes, the module's names (`mcl.mcpl.environment`), and the function's hardware
description. It types every expression (`mcl.mcpl.types`), resolves names with
did-you-mean hints, checks calls against parameter counts and types (user functions,
library functions, built-ins), records the places where variables are written (constants
and read-only memory spaces may not be) and catches aliasing of written arrays at calls.
Statements are `mcl.mcpl.check_function`'s business.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from mcl.diagnostics import Diagnostic, Span, did_you_mean, error, warning
from mcl.hdl.model import HardwareDescription, Quantity
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.access import call_arg_modes, lvalue_parts
from mcl.mcpl.build import is_negative_literal
from mcl.mcpl.builtins import BUILTINS, SIGNATURE_CALLS, Builtin
from mcl.mcpl.constfold import Constant, FoldError, fold_binary, fold_unary
from mcl.mcpl.environment import ModuleEnv
from mcl.mcpl.nesting import effective_spaces
from mcl.mcpl.positions import SourceText, head
from mcl.mcpl.printer import print_expr, print_type
from mcl.mcpl.scopes import Kind, ScopeStack, Symbol
from mcl.mcpl.sidetables import Binding, Declaring, Use
from mcl.mcpl.typed import BITWISE, EQUALITY, LOGICAL, ORDER, binary_type
from mcl.mcpl.visitor import StrictVisitor

_ARITHMETIC = frozenset({"+", "-", "*", "/", "^"})
INTEGER_OPS = frozenset({"%", "<<", ">>"})


def _ordinal(i: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(i, f"{i}th")


class ExpressionChecker(StrictVisitor):
    def __init__(
        self,
        env: ModuleEnv,
        function: ast.Function,
        hwd: HardwareDescription | None,
        source: SourceText,
    ) -> None:
        self.env = env
        self.function = function
        self.hwd = hwd
        self.source = source
        self.diags: list[Diagnostic] = []
        self.scopes: ScopeStack[Symbol] = ScopeStack()
        self.tainted: set[Symbol] = set()  # symbols that depend on a foreach index
        self.declared: list[Symbol] = []  # every symbol declared so far, in or out of scope
        # Array sizes that use parameters or locals: (symbol, where, through which local);
        # decided once all writes are known (rule 6).
        self.size_uses: list[tuple[Symbol, Span | None, Symbol]] = []
        # Values of the constant expressions typed so far, by the node (a `Ref`: equal
        # expressions elsewhere may name other variables): filled
        # bottom-up as `expr` descends, so folding costs nothing extra (mcl.mcpl.constfold).
        self.folded: dict[Ref[ast.Expr], Constant] = {}
        # The names resolved to variables so far, for the side tables (`record_bindings`).
        self.uses: list[tuple[Use, Symbol]] = []

    def error(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(error(code, message, span or self.function.span, hint))

    def warn(self, code: str, message: str, span: Span | None, hint: str | None = None) -> None:
        self.diags.append(warning(code, message, span or self.function.span, hint))

    def resolve_type(self, t: ast.Type, allow_void: bool = False) -> T.VType:
        """The checker type of a written type; reports unknown user types and checks array
        sizes (rule 6: only constants and parameters that are never written)."""
        if isinstance(t, ast.Prim):
            if t.name == "void" and not allow_void:
                self.error("mcpl-type-mismatch", "a variable cannot have type void", t.span)
                return T.UNKNOWN
            return T.Scalar(t.name)
        if isinstance(t, ast.NamedType):
            typedef = self.env.typedef(t.name)
            if typedef is None:
                self.diags.append(self.env.type_problem(t.name, t.span))
                for arg in t.args:
                    self.expr(arg)
                return T.UNKNOWN
            self.env.tables.bind(t, self.env.typedef_binding(typedef))
            for arg in t.args:
                self.size_expr(arg)
            if len(t.args) != len(typedef.params):
                want = len(typedef.params)
                self.error(
                    "mcpl-argument-count",
                    f"type '{t.name}' takes {want} argument{'s' if want != 1 else ''}, "
                    f"{len(t.args)} given",
                    t.span,
                    f"type {t.name}(" + ", ".join(_param_text(p) for p in typedef.params) + ")",
                )
            return T.Struct(t.name)
        element = self.resolve_type(t.element)
        for group in t.dims:
            for size in group:
                self.size_expr(size)
        if isinstance(element, T.Array):  # cannot happen with the grammar; stay total
            element = T.UNKNOWN
        return T.Array(element, tuple(len(g) for g in t.dims))

    def size_expr(self, e: ast.Expr) -> None:
        """An array size (or type argument): an integer computed from constants, parameters
        that are never written and variables initialised from those (section 4.3: 'variables
        that are used in array-size specifications have to be constant')."""
        t = self.expr(e)
        if not T.is_integral(t):
            self.error(
                "mcpl-array-size",
                f"an array size must be an integer, not {t}",
                e.span,
                "convert with toInt(...)",
            )
        value = self.constant(e)
        if value is not None and value < 1:
            # OpenCL cannot allocate it, and every access of it is out of bounds.
            self.error(
                "mcpl-array-size",
                f"this array size is {value}: an array needs at least 1 element",
                e.span,
                "check the size expression; a size must be at least 1",
            )
        for node in ast.walk(e):
            if isinstance(node, ast.Index):
                self.error(
                    "mcpl-array-size",
                    "an array size cannot read array elements",
                    node.span,
                    "sizes may only use constants and parameters that are never written",
                )
                return
            if isinstance(node, ast.Name):
                sym = self.scopes.lookup(node.name)
                if sym is not None:
                    self.size_use(sym, node.span, sym)

    def size_use(self, sym: Symbol, span: Span | None, via: Symbol) -> None:
        if sym.kind in (Kind.INDEX, Kind.LOOP):
            self.error(
                "mcpl-array-size",
                f"an array size cannot use the {sym.kind.value} '{sym.name}'",
                span,
                "sizes may only use constants and parameters that are never written",
            )
            return
        # Parameters and locals: decided in finish(), once all writes are known.
        self.size_uses.append((sym, span, via))
        if sym.kind is Kind.LOCAL and isinstance(sym.node, ast.Decl) and sym.node.init is not None:
            for dep in sym.deps or []:
                if dep is not sym:
                    self.size_use(dep, span, via)

    def check_lvalue(self, e: ast.Expr, what: str) -> bool:
        root, _ = lvalue_parts(e)
        if root is None:
            self.error(
                "mcpl-not-assignable",
                f"the target of {what} must be a variable, an array element or a field",
                e.span,
            )
            return False
        return True

    def describe(self, e: ast.Expr) -> str:
        return f"'{print_expr(e)}'"

    def write_site(
        self, target: ast.Expr, span: Span | None, through: tuple[str, str] | None
    ) -> None:
        """A place where `target` is written (rule 2: not a constant; rule 7: not in a
        read-only memory space). `through` is (callee, "parameter 'x'" or "2nd argument")
        for a write by a call."""
        root, _ = lvalue_parts(target)
        if root is None:
            return
        sym = self.scopes.lookup(root.name)
        by = f" ('{through[0]}' writes its {through[1]})" if through else ""
        if sym is None:
            if self.env.constant(root.name) is not None:
                self.error(
                    "mcpl-assign-const",
                    f"cannot write to the constant '{root.name}'{by}",
                    span,
                    "top-level constants cannot change; declare a local variable instead",
                )
            return
        if sym.kind is Kind.INDEX:
            self.error(
                "mcpl-assign-const",
                f"cannot write to the foreach index '{root.name}'{by}",
                span,
                "copy it into a variable first: `int k = " + root.name + ";`",
            )
            return
        if sym.const:
            self.error(
                "mcpl-assign-const",
                f"cannot write to '{root.name}', which is declared const{by}",
                span,
                "remove `const` from its declaration, or write to a copy",
            )
            return
        storage = sym.root
        if self.hwd is not None and storage.spaces:
            spaces = effective_spaces(self.hwd, storage.spaces, isinstance(storage.type, T.Array))
            if spaces and all(s.read_only for s in spaces):
                names = ", ".join(s.name for s in spaces)
                self.error(
                    "mcpl-read-only-write",
                    f"cannot write to '{root.name}': memory space {names} is read-only{by}",
                    span,
                    f"declare '{storage.name}' in a writable memory space",
                )

    def check_spaces(self, spaces: tuple[str, ...], span: Span | None) -> None:
        if self.hwd is None:
            return
        known = [s.name for s in self.hwd.memory_spaces()]
        for name in spaces:
            if self.hwd.memory_space(name) is None:
                hint = did_you_mean(name, known) or (
                    f"memory spaces of '{self.hwd.name}': " + ", ".join(known)
                )
                self.error(
                    "mcpl-unknown-space",
                    f"unknown memory space '{name}' in hardware description '{self.hwd.name}'",
                    self.source.word(name, span),
                    hint,
                )

    def depends_on_index(self, e: ast.Expr) -> bool:
        for node in ast.walk(e):
            if isinstance(node, ast.Name):
                sym = self.scopes.lookup(node.name)
                if sym is not None and sym in self.tainted:
                    return True
        return False

    def unknown_name(self, name: str, span: Span | None) -> None:
        if self.env.function(name) is not None or name in BUILTINS:
            self.error(
                "mcpl-unknown-name",
                f"'{name}' is a function, not a variable",
                span,
                f"call it: {name}(...)",
            )
            return
        candidates = self.scopes.names() | set(self.env.constant_names())
        hint = did_you_mean(name, candidates)
        if hint is None:
            # Block scopes: a declaration whose block has ended is not visible here.
            gone = next((s for s in self.declared if s.name == name and s.span), None)
            hint = (
                f"'{name}' is declared at line {gone.span.line}, in a block that does not "
                "enclose this use"
                if gone is not None and gone.span is not None
                else "declare it before use"
            )
        self.error("mcpl-unknown-name", f"unknown variable '{name}'", span, hint)

    def never_rewritten(self, sym: Symbol) -> bool:
        """Whether local `sym` keeps the value it was initialised with (FunctionChecker
        knows the writes of the function; an expression alone knows none)."""
        return False

    def constant(self, e: ast.Expr) -> Constant | None:
        """The value of `e` if the checker found it to be a constant (after `expr(e)`)."""
        return self.folded.get(Ref(e))

    def expr(self, e: ast.Expr) -> T.VType:
        """The type of `e`, reporting what is wrong inside it (and recording it in the
        side tables)."""
        t: T.VType = self.visit(e)
        self.env.tables.record_type(e, t)
        return t

    def bind(self, use: Use, sym: Symbol) -> None:
        """`use` names the variable `sym`: recorded in the side tables by `record_bindings`,
        once the walk is done (a parameter's type is known only after every parameter is
        declared, and `float[n] a, int n` uses `n` before that)."""
        self.uses.append((use, sym))

    def record_bindings(self) -> None:
        """The bindings of the variables declared and used so far, into the side tables."""
        for sym in self.declared:
            self.binding(sym)  # every declaration has its binding, used or not
        for use, sym in self.uses:
            self.env.tables.bind(use, self.binding(sym))
        self.uses.clear()

    def binding(self, sym: Symbol) -> Binding:
        """The side tables' binding of a declared variable (one per declaration)."""
        node: Declaring = sym.node  # type: ignore[assignment]  # Symbol.node is a declaring node
        return self.env.tables.declare(node, sym.name, sym.kind, sym.type, sym.spaces,
                                       sym.const)

    def visit_IntLit(self, e: ast.IntLit) -> T.VType:
        if self.int_literal(e):
            self.folded[Ref(e)] = e.value
        return T.INT

    def visit_FloatLit(self, e: ast.FloatLit) -> T.VType:
        if math.isfinite(e.value):
            self.folded[Ref(e)] = e.value
        else:
            self.error(
                "mcpl-float-range",
                "this floating-point literal is too large: it would be an infinity",
                e.span,
                "the largest double is about 1.8e308 (float: 3.4e38)",
            )
        return T.FLOAT

    def visit_BoolLit(self, e: ast.BoolLit) -> T.VType:
        return T.BOOL

    def visit_Name(self, e: ast.Name) -> T.VType:
        sym = self.scopes.lookup(e.name)
        if sym is not None:
            sym.used = True
            self.bind(e, sym)
            if sym.value is not None and sym.kind is Kind.LOCAL and self.never_rewritten(sym):
                # `int z = 0; ... i / z`: for the checker's rules the same as `i / 0`.
                self.folded[Ref(e)] = sym.value  # type: ignore[assignment]
            return sym.type
        const = self.env.constant(e.name)
        if const is not None:
            self.env.tables.bind(e, self.env.constant_binding(const))
            value = self.env.constant_value(e.name)
            if value is not None:
                self.folded[Ref(e)] = value
            return self.env.constant_type(e.name)
        self.unknown_name(e.name, e.span)
        return T.UNKNOWN

    def visit_HwdConst(self, e: ast.HwdConst) -> T.VType:
        return self.hwd_const(e)

    def visit_Index(self, e: ast.Index) -> T.VType:
        return self.index(e)

    def visit_Field(self, e: ast.Field) -> T.VType:
        return self.field(e)

    def visit_Call(self, e: ast.Call) -> T.VType:
        t = self.call(e, statement=False)
        if e.func in ("min", "max") and len(e.args) == 2:
            # `t[max(4, 2)]`: the checker's rules see the constant (C's fmin/fmax and
            # min/max of ints give one of the operands, so no rounding is involved).
            args = [self.constant(a) for a in e.args]
            ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
            if len(ints) == len(args):
                self.folded[Ref(e)] = (min if e.func == "min" else max)(ints)
        return t

    def visit_Unary(self, e: ast.Unary) -> T.VType:
        t = self.expr(e.operand)
        self.fold(e, lambda: fold_unary(e.op, self.constant(e.operand)))
        if e.op == "!":
            if not T.is_bool(t):
                self.error("mcpl-type-mismatch", f"'!' needs a bool, not {t}", e.span)
            return T.BOOL
        if not T.is_numeric(t):
            self.error("mcpl-type-mismatch", f"unary '-' needs a number, not {t}", e.span)
            return T.UNKNOWN
        return T.promote(t)

    def visit_Binary(self, e: ast.Binary) -> T.VType:
        return self.binary(e)

    def fold(self, e: ast.Expr, compute: Callable[[], Constant | None]) -> None:
        """Record the constant value of `e`, or report why it has none in C."""
        try:
            value = compute()
        except FoldError as exc:
            where = e.right.span if exc.code == "mcpl-division-by-zero" and isinstance(
                e, ast.Binary) else e.span
            self.error(exc.code, exc.message, where or e.span, exc.hint)
            return
        if value is not None:
            self.folded[Ref(e)] = value

    def int_literal(self, e: ast.IntLit) -> bool:
        """An int is 32 bits (as in OpenCL C): a literal that does not fit cannot be
        generated, and C would silently make it a `long` or truncate it."""
        if T.INT_MIN <= e.value <= T.INT_MAX:
            return True
        shown = str(e.value) if abs(e.value) < T.HUGE_LITERAL else "of more than 40 digits"
        self.error(
            "mcpl-int-range",
            f"integer literal {shown} does not fit in a 32-bit int "
            f"({T.INT_MIN} .. {T.INT_MAX})",
            e.span,
            f"use a float literal ({shown}.0) if a floating-point value is meant"
            if abs(e.value) < T.HUGE_LITERAL
            else "write a smaller value",
        )
        return False

    def shift_count(self, count: ast.Expr, span: Span | None) -> None:
        """A constant shift count outside 0..31 is undefined in C for a 32-bit int (`x <<
        40`, `x <<= 33`, `int s = 40; x >> s`)."""
        value = self.constant(count)
        if not isinstance(value, int) or isinstance(value, bool) or 0 <= value < T.INT_BITS:
            return
        if not T.INT_MIN <= value <= T.INT_MAX:
            return  # already reported as a literal that does not fit
        self.error(
            "mcpl-shift-count",
            f"shift count {value} is outside 0..{T.INT_BITS - 1}: shifting a "
            f"{T.INT_BITS}-bit int by it is undefined",
            count.span or span,
            f"use a float power (2.0 ^ {value}) if a large value is meant"
            if value > 0
            else "shift the other way by a positive count",
        )

    def unary_power(self, e: ast.Binary) -> None:
        """`-x ^ 2` written without parentheses is `(-x) ^ 2` (mcpl.md 6: unary operators
        bind tightest, as in the original MCL); say so where `-(x ^ 2)` would differ, that
        is unless the exponent is an odd integer literal under a minus."""
        left = e.left
        sign = left.op if isinstance(left, ast.Unary) else "-" if is_negative_literal(left) \
            else None
        if sign is None or left.span is None or e.span is None:
            return
        if (left.span.line, left.span.column) != (e.span.line, e.span.column):
            return  # written `(-x) ^ 2`: the reader said which one
        odd = isinstance(e.right, ast.IntLit) and e.right.value % 2 == 1
        if sign == "-" and odd:
            return
        text = print_expr(e)
        other = print_expr(ast.Unary(sign, ast.Binary("^", _unsigned(left), e.right)))
        self.warn("mcpl-unary-power",
                  f"`{sign}` binds tighter than `^` (as in the original MCL and C): this is "
                  f"{text}, not {other}", e.span,
                  f"write {text} or {other} to say which one you mean")

    def binary(self, e: ast.Binary) -> T.VType:
        lt, rt = self.expr(e.left), self.expr(e.right)
        op = e.op
        if op in _ARITHMETIC or op in INTEGER_OPS or op in BITWISE:
            self.fold(e, lambda: fold_binary(op, self.constant(e.left), self.constant(e.right)))
            if op == "-" and Ref(e) not in self.folded and _same_name(e.left, e.right):
                self.folded[Ref(e)] = 0  # `n - n` is 0 whatever n is, so `x / (n - n)` is caught
        if op in ("<<", ">>"):
            self.shift_count(e.right, e.span)
        if op == "^":
            self.unary_power(e)
        # The errors first; the type of what the checker accepts is `binary_type`'s, the
        # one rule that code generation's typed nodes follow too (mcl.mcpl.typed).
        if op in LOGICAL:
            if not (T.is_bool(lt) and T.is_bool(rt)):
                self.error(
                    "mcpl-type-mismatch",
                    f"'{op}' needs bool operands, not {lt} and {rt}",
                    e.span,
                    "compare explicitly, e.g. `x != 0`",
                )
        elif op in EQUALITY:
            same_kind = (T.is_numeric(lt) and T.is_numeric(rt)) or (T.is_bool(lt) and T.is_bool(rt))
            if not same_kind or isinstance(lt, T.Array) or isinstance(rt, T.Array):
                self.error(
                    "mcpl-type-mismatch", f"cannot compare {lt} with {rt} using '{op}'", e.span
                )
        elif op in ORDER:
            if not (T.is_numeric(lt) and T.is_numeric(rt)):
                self.error("mcpl-type-mismatch", f"'{op}' needs numbers, not {lt} and {rt}", e.span)
        elif op in BITWISE and T.is_bool(lt) and T.is_bool(rt) and T.BOOL in (lt, rt):
            pass  # `&`, `|` of bools: a bool
        elif op in INTEGER_OPS or op in BITWISE:
            if not (T.is_integral(lt) and T.is_integral(rt)):
                self.error(
                    "mcpl-type-mismatch",
                    f"'{op}' needs integers, not {lt} and {rt}",
                    e.span,
                    "convert with toInt(...)" if T.is_numeric(lt) and T.is_numeric(rt) else None,
                )
                return T.UNKNOWN
        elif op in _ARITHMETIC:
            if not (T.is_numeric(lt) and T.is_numeric(rt)):
                self.error(
                    "mcpl-type-mismatch",
                    f"'{op}' needs numbers, not {lt} and {rt}",
                    e.span,
                )
                return T.UNKNOWN
        else:
            return T.UNKNOWN
        return binary_type(op, lt, rt)

    def hwd_const(self, e: ast.HwdConst) -> T.VType:
        library = self.env.library
        name = e.path[0]
        if name not in library.names():
            self.error(
                "mcpl-unknown-hwd",
                f"unknown hardware description '{name}'",
                e.span,
                did_you_mean(name, list(library.names())),
            )
            return T.UNKNOWN
        hwd = library.get(name)
        value: object = hwd.value(e.path)  # a Quantity's number below
        dotted = ".".join(e.path)
        if value is None:
            self.error(
                "mcpl-unknown-hwd-constant",
                f"hardware description '{name}' has no property '{'.'.join(e.path[1:])}'",
                e.span,
                did_you_mean(dotted, _constant_paths(hwd))
                or "name a property by its block path, e.g. "
                + (_constant_paths(hwd) or [f"{name}.hierarchy.<par_group>.max_nr_units"])[0],
            )
            return T.UNKNOWN
        if isinstance(value, bool):
            return T.BOOL
        if isinstance(value, Quantity):
            value = value.value
        if isinstance(value, (int, float)):
            if value == math.inf:
                self.error(
                    "mcpl-hwd-constant-value",
                    f"'{dotted}' is unlimited, so it has no value to compute with",
                    e.span,
                    "use a property with a number, or a parameter",
                )
                return T.UNKNOWN
            return T.INT if float(value).is_integer() else T.FLOAT
        self.error(
            "mcpl-hwd-constant-value",
            f"'{dotted}' is not a number ({value})",
            e.span,
        )
        return T.UNKNOWN

    def index(self, e: ast.Index) -> T.VType:
        base = self.expr(e.base)
        for i in e.indices:
            it = self.expr(i)
            if not T.is_integral(it):
                self.error(
                    "mcpl-index-type",
                    f"an array index must be an integer, not {it}",
                    i.span,
                    "convert with toInt(...)" if T.is_numeric(it) else None,
                )
        if isinstance(base, T.Unknown):
            return T.UNKNOWN
        if not isinstance(base, T.Array):
            self.error(
                "mcpl-index-count",
                f"{self.describe(e.base)} is not an array (its type is {base})",
                e.span,
            )
            return T.UNKNOWN
        want, got = base.groups[0], len(e.indices)
        if want != got:
            # `float[n, m] c` is indexed c[i, j]; `int[2,2][3,3] d2` is d2[ti, tj][ei, ej].
            # The example indexes the whole array from its variable, every group at once.
            root, _ = lvalue_parts(e)
            sym = self.scopes.lookup(root.name) if root is not None else None
            whole = sym.type if sym is not None and isinstance(sym.type, T.Array) else base
            start = root.name if whole is not base and root is not None else print_expr(e.base)
            names = iter("ijklmnopqrstuvwxyz")
            example = start + "".join(
                "[" + ", ".join(next(names, "x") for _ in range(n)) + "]" for n in whole.groups
            )
            self.error(
                "mcpl-index-count",
                f"{self.describe(e.base)} of type {base} takes {want} "
                f"{'index' if want == 1 else 'indices'} in this bracket group, {got} given",
                e.span,
                f"index all dimensions of each group, e.g. {example}",
            )
            return T.UNKNOWN
        self.check_constant_indices(e)
        return base.after_index()

    def declared_sizes(self, e: ast.Index) -> tuple[ast.Expr, ...] | None:
        """The written sizes of the bracket group that `e` indexes, when `e` indexes a
        variable, parameter or view by its name: the first group for `t[i]`, the second
        for `v[i][4]` on `float[n / 4][4] v`."""
        group, base = 0, e.base
        while isinstance(base, ast.Index):
            group, base = group + 1, base.base
        if not isinstance(base, ast.Name):
            return None
        sym = self.scopes.lookup(base.name)
        node = sym.node if sym is not None else None
        declared = getattr(node, "type", None)
        if not isinstance(declared, ast.ArrayType) or getattr(node, "view", None) is not None \
                or group >= len(declared.dims):
            return None
        return declared.dims[group]

    def check_constant_indices(self, e: ast.Index) -> None:
        """`t[4]` or `t[-1]` on `float[4] t`: a constant index outside a size the checker
        knows is out of bounds for every unit (OpenCL does not check; Oclgrind or the
        interpreter would fail later). A negative one is, whatever the size (`a[K]` with
        `const int K = 3 - 5;` on a parameter `float[n] a` reads before the array)."""
        declared = self.declared_sizes(e)
        sizes: tuple[ast.Expr | None, ...] = (None,) * len(e.indices)
        if declared is not None and len(declared) == len(e.indices):
            sizes = declared
        for index, size in zip(e.indices, sizes, strict=True):
            value = self.constant(index)
            bound = self.constant(size) if size is not None else None
            if isinstance(value, int) and value < 0 and not isinstance(bound, int):
                self.error(
                    "mcpl-index-range",
                    f"index {value} is out of range: {print_expr(e.base)} is indexed from 0, "
                    "whatever its size",
                    index.span or e.span,
                    "indices count from 0 to the size minus 1",
                )
            if not isinstance(value, int) or not isinstance(bound, int) or bound < 1:
                continue  # (a size below 1 is reported with the declaration)
            if not 0 <= value < bound:
                self.error(
                    "mcpl-index-range",
                    f"index {value} is out of range: {print_expr(e.base)} has "
                    f"{bound} element{'s' if bound != 1 else ''} in this dimension "
                    f"(0 .. {bound - 1})",
                    index.span or e.span,
                    "indices count from 0 to the size minus 1",
                )

    def check_narrow(self, target: T.VType, value: ast.Expr) -> None:
        """`byte b = 300;`: a constant stored in a byte (8 bits, unsigned as in the
        interpreter and the generated `uchar`) must fit, or it silently wraps."""
        v = self.constant(value)
        if target == T.Scalar("byte") and isinstance(v, int) and not 0 <= v <= T.BYTE_MAX:
            self.error(
                "mcpl-byte-range",
                f"{v} does not fit in a byte (0 .. {T.BYTE_MAX}): it would wrap to "
                f"{v % (T.BYTE_MAX + 1)}",
                value.span,
                "use an int variable, or a value in 0 .. 255",
            )

    def field(self, e: ast.Field) -> T.VType:
        base = self.expr(e.base)
        if isinstance(base, T.Unknown):
            return T.UNKNOWN
        if not isinstance(base, T.Struct):
            self.error(
                "mcpl-unknown-field",
                f"{self.describe(e.base)} has type {base}, which has no fields",
                e.span,
            )
            return T.UNKNOWN
        typedef = self.env.typedef(base.name)
        if typedef is None:
            return T.UNKNOWN
        for f in typedef.fields:
            if f.name == e.name:
                self.env.tables.bind(e, self.env.field_binding(f))
                return self.env.field_type(f)
        self.error(
            "mcpl-unknown-field",
            f"type '{base.name}' has no field '{e.name}'",
            self.source.word(e.name, e.span, start=e.base.span),
            did_you_mean(e.name, [f.name for f in typedef.fields])
            or "fields: " + ", ".join(f.name for f in typedef.fields),
        )
        return T.UNKNOWN

    def signature_call(self, call: ast.Call) -> None:
        """`mcl_builtin_read(x, y);` states a library function's signature (mcpl.md §3)."""
        for arg in call.args:
            if not isinstance(arg, ast.Name) or not any(
                p.name == arg.name for p in self.function.params
            ):
                self.error(
                    "mcpl-signature",
                    f"{call.func} takes parameters of '{self.function.name}'",
                    arg.span,
                    "parameters: " + ", ".join(p.name for p in self.function.params),
                )
            else:
                self.expr(arg)

    def call(self, c: ast.Call, statement: bool) -> T.VType:
        if c.func in SIGNATURE_CALLS:
            self.error(
                "mcpl-signature",
                f"{c.func} is a statement of library signatures, not a value",
                c.span,
            )
            return T.UNKNOWN
        modes = call_arg_modes(c, self.env.callee_modes)
        callee = self.env.function(c.func)
        builtin = BUILTINS.get(c.func) if callee is None else None
        arg_types = [self.expr(a) for a in c.args]
        if callee is None and builtin is None:
            # The loader says why: unknown (did you mean), not exported, or not imported.
            self.diags.append(self.env.function_problem(c.func, head(c.span, len(c.func))))
            return T.UNKNOWN
        if callee is not None:
            self.env.tables.bind(c, self.env.function_binding(callee))
            result = self.user_call(c, callee, arg_types, modes)
        else:
            assert builtin is not None
            self.env.tables.bind(c, self.env.builtin_binding(builtin))
            result = self.builtin_call(c, builtin, arg_types)
        self.check_aliasing(c, arg_types, modes, callee)
        if result == T.VOID and not statement:
            self.error(
                "mcpl-type-mismatch",
                f"'{c.func}' returns void, so its call has no value",
                c.span,
            )
            return T.UNKNOWN
        return result

    def arity(self, c: ast.Call, expected: int, signature: str) -> bool:
        if len(c.args) == expected:
            return True
        self.error(
            "mcpl-argument-count",
            f"'{c.func}' takes {expected} argument{'s' if expected != 1 else ''}, "
            f"{len(c.args)} given",
            c.span,
            signature,
        )
        return False

    def user_call(
        self,
        c: ast.Call,
        callee: ast.Function,
        arg_types: list[T.VType],
        modes: tuple[str, ...],
    ) -> T.VType:
        signature = (
            f"{print_type(callee.ret)} {callee.name}("
            + ", ".join(_param_text(p) for p in callee.params)
            + ")"
        )
        if self.arity(c, len(callee.params), signature):
            for i, (arg, at, param, mode) in enumerate(
                zip(c.args, arg_types, callee.params, modes, strict=False), start=1
            ):
                pt = self.env.param_type(param)
                if not T.assignable(pt, at):
                    self.error(
                        "mcpl-argument-type",
                        f"the {_ordinal(i)} argument of '{c.func}' must be {pt} "
                        f"(parameter '{_param_text(param)}'), not {at}",
                        arg.span,
                        T.conversion_hint(pt, at),
                    )
                if "w" in mode:
                    self.written_argument(arg, c.func, f"parameter '{param.name}'")
        return self.env.return_type(callee)

    def builtin_call(self, c: ast.Call, builtin: Builtin, arg_types: list[T.VType]) -> T.VType:
        if not self.arity(c, builtin.arity, builtin.signature):
            return T.UNKNOWN
        for i, (arg, at) in enumerate(zip(c.args, arg_types, strict=False), start=1):
            if not T.is_numeric(at):
                self.error(
                    "mcpl-argument-type",
                    f"the {_ordinal(i)} argument of '{c.func}' must be a number, not {at}",
                    arg.span,
                    builtin.signature,
                )
        for i, (arg, mode) in enumerate(zip(c.args, builtin.modes, strict=False), start=1):
            if "w" in mode:
                self.written_argument(arg, c.func, f"{_ordinal(i)} argument")
        return builtin.result(arg_types)

    def written_argument(self, arg: ast.Expr, callee: str, what: str) -> None:
        root, _ = lvalue_parts(arg)
        if root is None:
            self.error(
                "mcpl-not-assignable",
                f"'{callee}' writes its {what}, so the argument must be a "
                "variable, an array element or a field",
                arg.span,
            )
            return
        self.write_site(arg, arg.span, (callee, what))

    def check_aliasing(
        self,
        c: ast.Call,
        arg_types: list[T.VType],
        modes: tuple[str, ...],
        callee: ast.Function | None,
    ) -> None:
        """Rule 7 (section 4.3: 'aliasing is restricted'): the same storage may not reach a
        callee twice when one of the two is written and one is a whole array (or both are
        the same element)."""
        seen: list[tuple[int, Symbol, ast.Expr, T.VType, str]] = []
        for i, (arg, at, mode) in enumerate(zip(c.args, arg_types, modes, strict=False)):
            root, _ = lvalue_parts(arg)
            if root is None:
                continue
            sym = self.scopes.lookup(root.name)
            if sym is None:
                continue
            storage = sym.root
            for j, other_sym, other, ot, other_mode in seen:
                if other_sym is not storage or "w" not in (mode + other_mode):
                    continue
                if isinstance(at, T.Array) or isinstance(ot, T.Array) or arg == other:
                    written = i if "w" in mode else j
                    what = (
                        f"parameter '{callee.params[written].name}'"
                        if callee is not None and written < len(callee.params)
                        else f"{_ordinal(written + 1)} argument"
                    )
                    names = {print_expr(other), print_expr(arg)}
                    via = (
                        f" (as {' and '.join(sorted(repr(n) for n in names))})"
                        if len(names) > 1
                        else ""
                    )
                    self.error(
                        "mcpl-aliasing",
                        f"'{storage.name}' is passed to '{c.func}' twice{via}, as arguments "
                        f"{j + 1} and {i + 1}, and '{c.func}' writes its {what}: "
                        "written arrays may not alias",
                        arg.span,
                        "pass a separate copy, or split the call",
                    )
                    return
            seen.append((i, storage, arg, at, mode))


def _param_text(p: ast.Param) -> str:
    words = (["const"] if p.const else []) + list(p.spaces) + [print_type(p.type), p.name]
    return " ".join(words)


def _constant_paths(hwd: HardwareDescription) -> list[str]:
    """Dotted names of the par_group counts of `hwd`, the constants kernels read (Fig. 9:
    `gpu.hierarchy.blocks.block.threads.max_nr_units`)."""
    paths: list[str] = []
    parts = [hwd.name, "hierarchy"]
    for group in hwd.par_groups():
        parts.append(group.name)
        prop = "nr_units" if group.exact else "max_nr_units"
        paths.append(".".join([*parts, prop]))
        if group.unit is None:
            break
        parts.append(group.unit.name)
    return paths


def _same_name(a: ast.Expr, b: ast.Expr) -> bool:
    return isinstance(a, ast.Name) and isinstance(b, ast.Name) and a.name == b.name


def _unsigned(e: ast.Expr) -> ast.Expr:
    """The operand of a unary operator or the magnitude of a negative literal."""
    match e:
        case ast.Unary():
            return e.operand
        case ast.IntLit():
            return ast.IntLit(-e.value, span=e.span)
        case ast.FloatLit():
            return ast.FloatLit(-e.value, e.text.lstrip("-"), span=e.span)
    return e
