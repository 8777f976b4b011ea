"""Appendix A.3: translate the memory spaces of declarations, parameters and barriers.

The equivalence itself (FINDEQUIVALENTMEMORYSPACE, with its read-only preference) belongs
to the hardware-description side: `mcl.hdl.equivalence.equivalent_space`. This module
only visits the function and rewrites names.

The paper leaves out declarations in the default space; we handle them: a declaration
without a modifier lives in the source's default space for its kind and level
(`mcl.mcpl.nesting.default_space`: parameters the outermost default, arrays declared in
a unit the innermost default declarable there, scalars the innermost). It stays without
a modifier when the equivalent space is also the target's default for that kind, and
gets the equivalent space written out otherwise. Primitive constant declarations have no
memory space and are left alone (TRANSLATEDECL line 2).
"""

from __future__ import annotations

from dataclasses import replace

from mcl.diagnostics import Diagnostic, MclError, Span, error
from mcl.hdl.equivalence import equivalent_space
from mcl.hdl.model import MemorySpace, ParGroup
from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.nesting import ARRAY, PARAMETER, SCALAR, default_space
from mcl.mcpl.visitor import unknown_node
from mcl.translate.step import Step


def translate_spaces(function: ast.Function, step: Step) -> ast.Function:
    """TRANSLATEDECLARATIONS and TRANSLATEBARRIERS for one step."""
    spaces = _SpaceTranslator(step)
    levels = _declaration_levels(function)
    source = step.source
    # A function without foreach runs in its caller's executing unit.
    has_foreach = any(isinstance(n, ast.Foreach) for n in ast.walk(function.body))
    host_level = None if has_foreach else source.executing_unit().group

    def visit(node: object) -> object | None:
        if isinstance(node, ast.Decl):
            if node.const and not node.spaces and isinstance(node.type, ast.Prim):
                return None
            group = levels.get(Ref(node))
            level = source.par_group(group) if group is not None else host_level
            kind = ARRAY if isinstance(node.type, ast.ArrayType) else SCALAR
            return replace(node, spaces=spaces.translate(node.spaces, kind, node.span, level))
        if isinstance(node, ast.Barrier):
            (name,) = spaces.translate((node.space,), SCALAR, span=node.span)
            return replace(node, space=name)
        return None

    params = tuple(
        replace(p, spaces=spaces.translate(p.spaces, PARAMETER, span=p.span))
        for p in function.params
    )
    return replace(function, params=params, body=ast.transform(function.body, visit))


class _SpaceTranslator:
    def __init__(self, step: Step):
        self.step = step
        self.cache: dict[str, MemorySpace] = {}

    def translate(self, names: tuple[str, ...], kind: str, span: Span | None,
                  level: ParGroup | None = None) -> tuple[str, ...]:
        if not names:
            source_default = default_space(self.step.source, kind, level)
            if source_default is None:
                return ()
            to = self.equivalent(source_default.name, span)
            target_default = default_space(self.step.target, kind, self._target_level(level))
            return (() if target_default is not None and target_default.name == to.name
                    else (to.name,))
        out: list[str] = []
        for name in names:
            to_name = self.equivalent(name, span).name
            if to_name not in out:
                out.append(to_name)
        return tuple(out)

    def _target_level(self, level: ParGroup | None) -> ParGroup | None:
        """The target's par_group a declaration at source `level` ends up in: the body of
        the innermost foreach that the source foreach becomes (Appendix A.4)."""
        if level is None:
            return None
        if level is self.step.source.executing_unit().group:
            return self.step.target.executing_unit().group
        targets = self.step.groups_for(level.name)
        return targets[-1] if targets else self.step.target.par_group(level.name)

    def equivalent(self, name: str, span: Span | None) -> MemorySpace:
        if name not in self.cache:
            if self.step.source.memory_space(name) is None:
                raise MclError(
                    error(
                        "translate-unknown-space",
                        f"memory space '{name}' does not exist in {self.step.source.name}",
                        span,
                    )
                )
            try:
                self.cache[name] = equivalent_space(
                    name, self.step.source, self.step.target, self.step.mapping
                )
            except MclError as exc:
                # Report at the code that needs the space; keep where the description is.
                raise MclError([_at_code(d, span) for d in exc.diagnostics]) from None
        return self.cache[name]


def _declaration_levels(function: ast.Function) -> dict[Ref[ast.Decl], str]:
    """Each declaration inside a foreach (the place: equal declarations may stand in
    different foreach statements) -> the par_group of the innermost one."""
    out: dict[Ref[ast.Decl], str] = {}
    _declarations_in(function.body, None, out)
    return out


def _declarations_in(s: ast.Stmt, group: str | None, out: dict[Ref[ast.Decl], str]) -> None:
    match s:
        case ast.Decl():
            if group is not None:
                out[Ref(s)] = group
        case ast.Block():
            for x in s.stmts:
                _declarations_in(x, group, out)
        case ast.If():
            _declarations_in(s.then, group, out)
            if s.orelse is not None:
                _declarations_in(s.orelse, group, out)
        case ast.Foreach():
            _declarations_in(s.body, s.group, out)
        case ast.For():
            _declarations_in(s.init, group, out)
            _declarations_in(s.body, group, out)
        case (ast.ViewDecl() | ast.Assign() | ast.IncDec() | ast.CallStmt() | ast.Swap()
              | ast.Barrier() | ast.Return()):
            pass  # declares no variable that needs a space (a view shares its array's)
        case _:
            unknown_node(s, "space translation")


def _at_code(d: Diagnostic, span: Span | None) -> Diagnostic:
    if span is None:
        return d
    notes = d.notes + ((f"see the hardware description at {d.span}",) if d.span else ())
    return replace(d, span=span, notes=notes)
