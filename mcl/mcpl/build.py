"""Convert the textX model of an MCPL file into the typed AST (`mcl.mcpl.ast`).

This is the only module that touches textX objects (docs/architecture.md: "textX only parses;
the AST is ours"). Besides copying, it does the few things the PEG grammar leaves open:
- binary operators arrive as a flat list and are folded here by precedence climbing with
  `ast.BINARY_PRECEDENCE`, the same table the printer uses, so the two cannot disagree;
  comparisons do not chain (mcpl.md §4), so `a < b < c` is a syntax error here;
- a dotted chain of plain names rooted at a hardware-description name is a `HwdConst`
  (mcpl.md §4: `gpu.hierarchy.blocks.block.threads.max_nr_units`), any other is a `Field`;
- `-` applied directly to a number literal becomes a negative literal, so trees built by
  passes with `IntLit(-1)` print and re-parse to the same tree;
- the statement forms sharing a postfix start (assignment, `i++;`, swap, call) are told apart;
- the original MCL's built-in `divide_up(a, b)` (ceiling division of non-negative ints,
  found in published kernels) becomes `(a + b - 1) / b`, so every pass understands it as
  the translator's own split (paper Fig. 9); a module defining `divide_up` keeps its own.

Each grammar rule that becomes a node has one `rule_<Rule>` method (`GrammarConverter`);
building the metamodel checks that every alternative of the choice rules in `CHOICES` has
one, so mcpl.tx and this module cannot drift apart silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, MutableSequence
from typing import Any

from mcl.diagnostics import MclError, Span, error
from mcl.grammar_converter import GrammarConverter
from mcl.mcpl import ast as A
from mcl.mcpl import types as T
from mcl.source_files import SourcePositions


def _join(a: Span | None, b: Span | None) -> Span | None:
    if a is None or b is None:
        return a or b
    return Span(a.file, a.line, a.column, b.end_line, b.end_column)


DIVIDE_UP = "divide_up"


def _divide_up(args: tuple[A.Expr, ...], span: Span) -> A.Expr:
    """`divide_up(a, b)` as `(a + b - 1) / b`."""
    if len(args) != 2:
        raise MclError(error("mcpl-argument-count",
                             f"divide_up takes 2 arguments (a, b), not {len(args)}", span,
                             "divide_up(a, b) is a / b rounded up, for a >= 0 and b > 0"))
    a, b = args
    total = A.Binary("-", A.Binary("+", a, b, span=span), A.IntLit(1, span=span), span=span)
    return A.Binary("/", total, b, span=span)


class ModelBuilder(GrammarConverter):
    """One conversion of one textX model; holds the position table and description names.
    One `rule_<Rule>` method per rule of mcpl.tx that becomes a node (GrammarConverter)."""

    CHOICES = ("TopItem", "Modifier", "BaseType", "Stmt", "ForInit", "ForStep", "Suffix", "Primary")

    def __init__(self, text: str, file: str, hwd_names: Iterable[str]):
        self.pos = SourcePositions(text, file)
        self.file = file
        self.hwd_names = frozenset(hwd_names)
        self.own_functions: frozenset[str] = frozenset()
        self.modules: frozenset[str] = frozenset()  # what may qualify a name: imports, own
        # Where the text the model was parsed from starts in `text`: a definition parsed
        # alone (mcl.mcpl.parse, the editor's reuse of unchanged definitions) has
        # positions relative to its own start.
        self.base = 0

    def span(self, obj: Any) -> Span:
        return self.pos.span(obj._tx_position + self.base, obj._tx_position_end + self.base)

    def context(self, m: Any) -> tuple[frozenset[str], ...]:
        """Set and return what converting an item of module `m` depends on besides the
        item: the module's own functions, the module names that may qualify a name and
        the description names."""
        self.own_functions = frozenset(
            item.name for item in m.items if self.matched_rule(item) == "Function"
        )
        own = [*(m.package.parts if m.package else []), *([m.name] if m.name else [])]
        self.modules = frozenset(
            [".".join(item.path.parts) for item in m.items if self.matched_rule(item) == "Import"]
            + ([".".join(own)] if own else []))
        return self.own_functions, self.modules, self.hwd_names

    @staticmethod
    def matched_rule(obj: Any) -> str:
        """The grammar rule that matched `obj` (textX names its classes after the rules)."""
        return type(obj).__name__

    # ------------------------------------------------------------------ top level

    def module(self, m: Any, parts: MutableSequence[tuple[int, Any]] | None = None
               ) -> A.Module:
        """The module of model `m`. `parts`, when given, has for each item the offset of
        the text it was parsed from and its node when already converted (None: convert it
        now, and write it there); `context(m)` has then been called."""
        exports: list[str] | None = None
        imports: list[A.Import] = []
        constants: list[A.Decl] = []
        types: list[A.TypeDef] = []
        functions: list[A.Function] = []
        if parts is None:
            self.context(m)
        span = self.span(m)
        for k, item in enumerate(m.items):
            if parts is not None:
                self.base, node = parts[k]
                if node is None:
                    node = self.convert(item)
                    parts[k] = (self.base, node)
            else:
                node = self.convert(item)
            match node:
                case tuple():  # an export line: names
                    exports = (exports or []) + list(node)
                case A.Import():
                    imports.append(node)
                case A.Decl():
                    constants.append(node)
                case A.TypeDef():
                    types.append(node)
                case _:
                    functions.append(node)
        return A.Module(
            package=tuple(m.package.parts) if m.package else None,
            name=m.name or None,
            exports=tuple(exports) if exports is not None else None,
            imports=tuple(imports),
            constants=tuple(constants),
            types=tuple(types),
            functions=tuple(functions),
            file=self.file,
            span=span,
        )

    def rule_Export(self, e: Any) -> tuple[str, ...]:
        return tuple(e.names)

    def rule_Import(self, i: Any) -> A.Import:
        return A.Import(tuple(i.path.parts), span=self.span(i))

    def rule_Constant(self, c: Any) -> A.Decl:
        return self.decl(c.decl, self.span(c))

    def rule_TypeDef(self, t: Any) -> A.TypeDef:
        return A.TypeDef(
            name=t.name,
            params=tuple(self.param(p) for p in t.params),
            fields=tuple(self.decl(f.decl, self.span(f)) for f in t.fields),
            span=self.span(t),
        )

    def rule_Function(self, f: Any) -> A.Function:
        params = tuple(self.param(p) for p in f.params)
        body = self.rule_Block(f.body)
        # Views of parameters (`float[n] a as float[n/4][4] a2`) are view statements at
        # the start of the body: the same storage under another shape (mcpl.md 3).
        views = [v for p in f.params for v in self.chained_views(p.name, p.views)]
        if views:
            body = A.Block((*views, *body.stmts), span=body.span)
        return A.Function(
            hwd=f.hwd,
            ret=self.type(f.ret),
            name=f.name,
            params=params,
            body=body,
            span=self.span(f),
        )

    def chained_views(self, source: str, chain: list[Any]) -> list[A.ViewDecl]:
        """`source as T1 b as T2 c`: b views source, c views b."""
        out = []
        for link in chain:
            view = self.view(link.view)
            out.append(A.ViewDecl(source, view, span=self.span(link)))
            source = view.name
        return out

    def _modifiers(self, mods: list[Any]) -> tuple[tuple[str, ...], bool]:
        words = [self.convert(m) for m in mods]
        return tuple(w for w in words if w != "const"), "const" in words

    def rule_SpaceMod(self, m: Any) -> str:
        return str(m.name)

    def rule_ConstMod(self, m: Any) -> str:
        return "const"

    def param(self, p: Any) -> A.Param:
        if p.init is not None:
            # The original MCL parses `int n = 10` here and gives it two meanings: its
            # OpenCL generator leaves the value out of the kernel's signature (the
            # caller's argument is used) yet substitutes it for `n` in the sizes of
            # local arrays. Either reading alone would change some program's results.
            raise MclError(error(
                "mcpl-param-initialiser",
                f"parameter '{p.name}' has an initialiser; the original MCL drops it from "
                "the kernel's signature but uses it for local array sizes, so mcl gives "
                "it no meaning", self.span(p.init),
                hint=f"remove `= ...` and give the value when running (`-D {p.name}=...`), "
                     "or declare a top-level `const`"))
        spaces, const = self._modifiers(p.mods)
        return A.Param(self.type(p.type), p.name, spaces, const, span=self.span(p))

    # ---------------------------------------------------------------------- types

    def type(self, t: Any) -> A.Type:
        element: A.Prim | A.NamedType = self.convert(t.base)
        if not t.dims:
            return element
        dims = tuple(tuple(self.expr(e) for e in g.sizes) for g in t.dims)
        return A.ArrayType(element, dims, span=self.span(t))

    def rule_PrimType(self, p: Any) -> A.Prim:
        return A.Prim(p.name, span=self.span(p))

    def rule_NamedTypeRef(self, n: Any) -> A.NamedType:
        self.check_qualifier(n.qualifier, n.name, self.span(n))
        return A.NamedType(n.name, tuple(self.expr(a) for a in n.args), span=self.span(n))

    def check_qualifier(self, qualifier: list[str], name: str, span: Span | None) -> None:
        """`lib.math.cplx.Complex`: the original MCL's names qualified by the module that
        defines them. The qualifier must be a module the file imports (or the file's
        own); the name is then resolved as an unqualified one (mcpl.md 2)."""
        if not qualifier:
            return
        dotted = ".".join(qualifier)
        if dotted not in self.modules:
            raise MclError(error(
                "mcpl-unknown-module", f"'{dotted}.{name}': '{dotted}' is not a module "
                "this file imports", span,
                hint=f"add `import {dotted};`" + (
                    f" (imported: {', '.join(sorted(self.modules))})" if self.modules else "")))

    # ----------------------------------------------------------------- statements

    def decl(self, d: Any, span: Span, chained: bool = False) -> A.Decl:
        if d.more and not chained:
            raise MclError(error("mcpl-syntax", "a chain of views belongs in a statement of "
                                 "its own", self.span(d.more[0]),
                                 hint="declare the array first, then `a as T1 b as T2 c;`"))
        spaces, const = self._modifiers(d.mods)
        return A.Decl(
            type=self.type(d.type),
            name=d.name,
            spaces=spaces,
            const=const,
            init=self.expr(d.init) if d.init is not None else None,
            view=self.view(d.view) if d.view is not None else None,
            span=span,
        )

    def view(self, v: Any) -> A.View:
        vtype = self.type(v.type)
        if not isinstance(vtype, A.ArrayType):
            raise MclError(
                error(
                    "mcpl-syntax",
                    "a view needs an array type",
                    self.span(v.type),
                    hint="write the new shape with sizes, e.g. `a as float[n/4][4] a4;`",
                )
            )
        return A.View(vtype, v.name, span=self.span(v))

    def stmt(self, s: Any) -> A.Stmt:
        return self.convert(s)

    def rule_Block(self, b: Any) -> A.Block:
        stmts: list[A.Stmt] = []
        for s in b.stmts:
            if self.matched_rule(s) in ("DeclStmt", "ViewDeclStmt") and (
                    s.decl.more if self.matched_rule(s) == "DeclStmt" else s.more):
                stmts += self.chain_statements(s)
            else:
                stmts.append(self.stmt(s))
        return A.Block(tuple(stmts), span=self.span(b))

    def chain_statements(self, s: Any) -> list[A.Stmt]:
        """A declaration or view statement followed by more views (`a as T1 b as T2 c;`,
        the original MCL's chained views): one statement per view."""
        if self.matched_rule(s) == "DeclStmt":
            more = s.decl.more
            first: A.Stmt = self.decl(s.decl, self.span(s), chained=True)
            last = s.decl.view.name if s.decl.view is not None else s.decl.name
        else:
            first = self.view_statement(s)
            more, last = s.more, s.view.name
        return [first, *self.chained_views(last, more)]

    def rule_DeclStmt(self, s: Any) -> A.Decl:
        return self.decl(s.decl, self.span(s))

    def view_statement(self, s: Any) -> A.ViewDecl:
        """`a as T v;`, or the original MCL's view of a part of `a`: an element or a
        field (`a[i] as float[4][4] d;`, `b.data as float[4][4] d;`, mcpl.md 4)."""
        span = self.span(s)
        part: A.Expr | None = None
        if s.parts:
            part = A.Name(s.source, span=Span.point(span.file, span.line, span.column,
                                                    len(s.source)))
            for p in s.parts:
                if getattr(p, "call", None) is not None:
                    raise MclError(error("mcpl-syntax", "a view views storage, not the "
                                         "result of a call", self.span(p),
                                         hint="view an array, an element or a field"))
                part = self.convert(p)(part)
        return A.ViewDecl(str(s.source), self.view(s.view), span=span, part=part)

    def rule_ViewDeclStmt(self, s: Any) -> A.Stmt:
        view = self.view_statement(s)
        if s.more:  # a chain standing alone as a statement (a foreach body)
            return A.Block((view, *self.chained_views(s.view.name, s.more)), span=view.span)
        return view

    def rule_Foreach(self, s: Any) -> A.Foreach:
        return A.Foreach(
            s.var, self.expr(s.count), s.group, self.stmt(s.body), span=self.span(s)
        )

    def rule_For(self, s: Any) -> A.For:
        return A.For(
            self.convert(s.init),
            self.expr(s.cond),
            self.convert(s.step),
            self.stmt(s.body),
            span=self.span(s),
        )

    def rule_If(self, s: Any) -> A.If:
        orelse = self.stmt(s.orelse) if s.orelse is not None else None
        return A.If(self.expr(s.cond), self.stmt(s.then), orelse, span=self.span(s))

    def rule_Barrier(self, s: Any) -> A.Barrier:
        return A.Barrier(s.space, span=self.span(s))

    def rule_Return(self, s: Any) -> A.Return:
        value = self.expr(s.value) if s.value is not None else None
        return A.Return(value, span=self.span(s))

    # The parts of a for header: `int k = 0`, `k = 0`, `k++`, `k += 2`.
    def rule_DeclCore(self, p: Any) -> A.Decl:
        return self.decl(p, self.span(p))

    def rule_IncDecCore(self, p: Any) -> A.IncDec:
        return A.IncDec(self.assignable(p.target), p.incdec, span=self.span(p))

    def rule_AssignCore(self, p: Any) -> A.Assign:
        return A.Assign(self.assignable(p.target), p.op, self.expr(p.value), span=self.span(p))

    def assignable(self, p: Any) -> A.Expr:
        """A postfix expression that must denote storage (a variable, element or field)."""
        target = self.postfix(p)
        if A.root_name(target) is None or isinstance(target, A.HwdConst):
            raise MclError(
                error(
                    "mcpl-syntax",
                    "cannot assign to this expression",
                    target.span,
                    hint="only variables, array elements (`c[i, j]`) and fields (`x.r`) "
                    "can be written",
                )
            )
        return target

    def rule_SimpleStmt(self, s: Any) -> A.Stmt:
        span = self.span(s)
        if s.incdec:
            return A.IncDec(self.assignable(s.target), s.incdec, span=span)
        if s.swap:
            return A.Swap(self.assignable(s.target), self.assignable(s.right), span=span)
        if s.op:
            return A.Assign(self.assignable(s.target), s.op, self.expr(s.value), span=span)
        target = self.postfix(s.target)
        if isinstance(target, A.Call):
            return A.CallStmt(target, span=span)
        raise MclError(
            error(
                "mcpl-syntax",
                "this expression does nothing on its own",
                target.span,
                hint="a statement is an assignment (`x = e;`, `x += e;`), `x++;`, "
                "a swap (`a <=> b;`) or a call (`f(x);`)",
            )
        )

    # ---------------------------------------------------------------- expressions

    def expr(self, e: Any) -> A.Expr:
        operands = [self.unary(u) for u in e.operands]
        if len(operands) == 1:
            return operands[0]
        ops = [(o.op, self.span(o)) for o in e.ops]
        return _fold_binary(operands, ops)

    def unary(self, u: Any) -> A.Expr:
        # Unary operators bind tighter than every binary operator, `^` included, as in the
        # original MCL and C: `-x ^ 2` is `(-x) ^ 2` (the checker warns where the other
        # reading would differ, mcpl-unary-power).
        return self.power(u.operand, u.ops)

    def prefixed(self, op: Any, operand: A.Expr) -> A.Expr:
        if op.op == "+":
            return operand  # unary plus leaves a number as it is (C's integer promotion aside)
        span = _join(self.span(op), operand.span)
        if (
            op.op == "-"
            and isinstance(operand, (A.IntLit, A.FloatLit))
            and not (is_negative_literal(operand))
        ):
            return _negated_literal(operand, span)
        return A.Unary(op.op, operand, span=span)

    def power(self, p: Any, ops: Any = ()) -> A.Expr:
        """`ops` (the unary operators before the chain) apply to its first operand."""
        # `^` is right-associative and each operand carries its own unary operators:
        # `-a ^ -b ^ c` is (-a) ^ ((-b) ^ c). Folded from the right, without recursion.
        items = [(ops, p.base)] + [(e.ops, e.base) for e in p.exponents]
        result: A.Expr | None = None
        for prefix, node in reversed(items):
            operand = self.postfix(node)
            for op in reversed(prefix):
                operand = self.prefixed(op, operand)
            if result is not None:
                operand = A.Binary("^", operand, result, span=_join(operand.span, result.span))
            result = operand
        assert result is not None
        return result

    def postfix(self, p: Any) -> A.Expr:
        suffixes = p.suffixes
        primary = p.primary
        calls = [s for s in suffixes if getattr(s, "call", None) is not None]
        if calls:
            return self.qualified_call(p, calls)
        if (
            suffixes
            and self.matched_rule(primary) == "NameOrCall"
            and primary.call is None
            and primary.name in self.hwd_names
            and all(self.matched_rule(s) == "FieldSuffix" for s in suffixes)
        ):
            path = (primary.name, *(s.name for s in suffixes))
            return A.HwdConst(path, span=self.span(p))
        result: A.Expr = self.convert(primary)
        for s in suffixes:
            result = self.convert(s)(result)
        return result

    def qualified_call(self, p: Any, calls: list[Any]) -> A.Expr:
        """`lib.math.cplx.assign(a, b)` (then perhaps indexed or a field of the result)."""
        suffixes, primary = p.suffixes, p.primary
        at = suffixes.index(calls[0])
        path = suffixes[:at]
        if (self.matched_rule(primary) != "NameOrCall" or primary.call is not None
                or any(self.matched_rule(s) != "FieldSuffix" for s in path)):
            raise MclError(error("mcpl-syntax", "only a function, perhaps qualified by its "
                                 "module (`lib.math.cplx.assign(...)`), can be called",
                                 self.span(calls[0])))
        last = suffixes[at]
        span = _join(self.span(primary), self.span(last))
        self.check_qualifier([primary.name, *(s.name for s in path)], last.name, span)
        args = tuple(self.expr(a) for a in last.call.args)
        result: A.Expr = A.Call(last.name, args, span=span)
        for s in suffixes[at + 1:]:
            if getattr(s, "call", None) is not None:
                raise MclError(error("mcpl-syntax", "the result of a call cannot be called",
                                     self.span(s)))
            result = self.convert(s)(result)
        return result

    def rule_IndexSuffix(self, s: Any) -> Callable[[A.Expr], A.Expr]:
        indices = tuple(self.expr(i) for i in s.indices)
        span = self.span(s)
        return lambda base: A.Index(base, indices, span=_join(base.span, span))

    def rule_FieldSuffix(self, s: Any) -> Callable[[A.Expr], A.Expr]:
        span = self.span(s)
        return lambda base: A.Field(base, s.name, span=_join(base.span, span))

    def rule_NameOrCall(self, p: Any) -> A.Expr:
        span = self.span(p)
        if p.call is not None:
            args = tuple(self.expr(a) for a in p.call.args)
            if p.name == DIVIDE_UP and DIVIDE_UP not in self.own_functions:
                return _divide_up(args, span)
            return A.Call(p.name, args, span=span)
        return A.Name(p.name, span=span)

    def rule_NumberLit(self, p: Any) -> A.Expr:
        text, span = p.text, self.span(p)
        base = {"0x": 16, "0X": 16, "0o": 8, "0O": 8}.get(text[:2], 10)
        if base == 10 and any(c in text for c in ".eE"):
            return A.FloatLit(float(text), text, span=span)
        digits = text if base == 10 else text[2:]
        if len(digits.lstrip("0")) > T.HUGE_LITERAL_DIGITS:
            # Far outside every C type; converting thousands of digits costs quadratic
            # time (Python refuses beyond 4,300), and the checker rejects any value past
            # 32 bits, so one stand-in above that bound keeps the diagnostic.
            return A.IntLit(T.HUGE_LITERAL, span=span)
        return A.IntLit(int(digits, base), span=span)

    def rule_BoolLit(self, p: Any) -> A.Expr:
        return A.BoolLit(p.text == "true", span=self.span(p))

    def rule_ParenExpr(self, p: Any) -> A.Expr:
        return self.expr(p.expr)


def is_negative_literal(e: A.Expr) -> bool:
    """A literal that prints with a leading '-' (and so re-parses through unary minus)."""
    if isinstance(e, A.IntLit):
        return e.value < 0
    if isinstance(e, A.FloatLit):
        return math.copysign(1.0, e.value) < 0
    return False


def _negated_literal(lit: A.IntLit | A.FloatLit, span: Span | None) -> A.Expr:
    if isinstance(lit, A.IntLit):
        return A.IntLit(-lit.value, span=span)
    text = lit.text[1:] if lit.text.startswith("-") else "-" + lit.text
    return A.FloatLit(-lit.value, text if lit.text else "", span=span)


def _fold_binary(operands: list[A.Expr], ops: list[tuple[str, Span]]) -> A.Expr:
    """Precedence climbing over `e0 op0 e1 op1 e2 ...` (all operators left-associative here;
    the one right-associative operator, `^`, is handled by the grammar)."""
    prec = A.BINARY_PRECEDENCE
    pos = 0  # index of the next unread operator

    def climb(lhs: A.Expr, min_prec: int) -> A.Expr:
        nonlocal pos
        while pos < len(ops) and prec[ops[pos][0]] >= min_prec:
            op, op_span = ops[pos]
            level = prec[op]
            pos += 1
            rhs = operands[pos]
            while pos < len(ops) and prec[ops[pos][0]] > level:
                rhs = climb(rhs, prec[ops[pos][0]])
            if op in A.NON_ASSOCIATIVE and pos < len(ops) and prec[ops[pos][0]] == level:
                nxt, nxt_span = ops[pos]
                raise MclError(
                    error(
                        "mcpl-syntax",
                        f"comparisons do not chain: `{op}` followed by `{nxt}`",
                        nxt_span,
                        hint="combine two comparisons with && (e.g. `a < b && b < c`) or "
                        "add parentheses",
                    )
                )
            lhs = A.Binary(op, lhs, rhs, span=_join(lhs.span, rhs.span))
        return lhs

    return climb(operands[0], 0)


def build_module(model: Any, text: str, file: str, hwd_names: Iterable[str]) -> A.Module:
    """The typed AST of one parsed file."""
    builder = ModelBuilder(text, file, hwd_names)
    if not hasattr(model, "items"):  # textX gives '' for a file with only comments
        end = builder.pos.span(len(text), len(text))
        return A.Module(
            None, None, None, (), (), (), (), file=file, span=_join(builder.pos.span(0, 0), end)
        )
    return builder.module(model)


def declared_hwd_names(model: Any) -> set[str]:
    """Description names a module itself mentions: function prefixes and single-name imports
    (mcpl.md §2: `import perfect;`)."""
    items = getattr(model, "items", ())
    rule = ModelBuilder.matched_rule
    names = {item.hwd for item in items if rule(item) == "Function"}
    names |= {
        item.path.parts[0]
        for item in items
        if rule(item) == "Import" and len(item.path.parts) == 1
    }
    return names
