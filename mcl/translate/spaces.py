"""Appendix A.3: translate the memory spaces of declarations, parameters and barriers.

The equivalence itself (FINDEQUIVALENTMEMORYSPACE, with its read-only preference) belongs
to the hardware-description side: `mcl.hdl.equivalence.equivalent_space`. This module
only visits the function and rewrites names.

The paper leaves out declarations in the default space; we handle them: a declaration
without a modifier lives in the source's default space for its kind (arrays and
parameters the outermost default, scalars the innermost, hdl.md 3.2). It stays without a
modifier when the equivalent space is also the target's default for that kind, and gets
the equivalent space written out otherwise. Primitive constant declarations have no
memory space and are left alone (TRANSLATEDECL line 2).
"""

from __future__ import annotations

from dataclasses import replace

from mcl.diagnostics import Diagnostic, MclError, Span, error
from mcl.hdl.equivalence import equivalent_space
from mcl.hdl.model import HardwareDescription, MemorySpace
from mcl.mcpl import ast
from mcl.translate.step import Step


def translate_spaces(function: ast.Function, step: Step) -> ast.Function:
    """TRANSLATEDECLARATIONS and TRANSLATEBARRIERS for one step."""
    spaces = _SpaceTranslator(step)

    def visit(node: object) -> object | None:
        if isinstance(node, ast.Decl):
            if node.const and not node.spaces and isinstance(node.type, ast.Prim):
                return None
            outer = isinstance(node.type, ast.ArrayType)
            return replace(node, spaces=spaces.translate(node.spaces, outer, node.span))
        if isinstance(node, ast.Barrier):
            (name,) = spaces.translate((node.space,), outer=False, span=node.span)
            return replace(node, space=name)
        return None

    params = tuple(
        replace(p, spaces=spaces.translate(p.spaces, outer=True, span=p.span))
        for p in function.params
    )
    return replace(function, params=params, body=ast.transform(function.body, visit))


class _SpaceTranslator:
    def __init__(self, step: Step):
        self.step = step
        self.cache: dict[str, MemorySpace] = {}

    def translate(self, names: tuple[str, ...], outer: bool, span: Span | None) -> tuple[str, ...]:
        if not names:
            source_default = _default(self.step.source, outer)
            if source_default is None:
                return ()
            to = self.equivalent(source_default.name, span)
            target_default = _default(self.step.target, outer)
            return () if target_default is not None and target_default.name == to.name else (to.name,)
        out: list[str] = []
        for name in names:
            to_name = self.equivalent(name, span).name
            if to_name not in out:
                out.append(to_name)
        return tuple(out)

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


def _default(hwd: HardwareDescription, outer: bool) -> MemorySpace | None:
    """hdl.md 3.2: arrays and parameters default to the outermost default space, scalars
    to the innermost."""
    defaults = hwd.default_spaces()
    if not defaults:
        return None
    return defaults[0] if outer else defaults[-1]


def _at_code(d: Diagnostic, span: Span | None) -> Diagnostic:
    if span is None:
        return d
    notes = d.notes + ((f"see the hardware description at {d.span}",) if d.span else ())
    return replace(d, span=span, notes=notes)
