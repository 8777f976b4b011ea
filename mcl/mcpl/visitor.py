"""One traversal mechanism for the MCPL AST: visitors in the manner of pycparser's
`c_ast.NodeVisitor` and Python's `ast.NodeVisitor`. A pass that rewrites the tree uses
`mcl.mcpl.ast.transform` (bottom-up rebuild; the one way to rewrite).

`visitor.visit(node, *args)` calls the method `visit_<ClassName>(node, *args)` of the node's
class; extra arguments (an indentation level, a scope) are passed through unchanged. A node
without such a method goes to `generic_visit`:

- `NodeVisitor.generic_visit` visits the node's children (for analyses that care about a
  few node kinds and search the rest);
- `StrictVisitor.generic_visit` raises `UnknownNodeError`: passes that must give every node
  kind a meaning (interpretation, code generation, printing) derive from it, so a node kind
  they were not taught stops them instead of being skipped.

Every visitor raises `UnknownNodeError` for an object whose class is not one of the AST's
`NODE_CLASSES`, whatever methods it defines: a node kind defined outside `mcl.mcpl.ast`
(or a stray textX object) can never be mistaken for a known one with the same name.
"""

from __future__ import annotations

from typing import Any, ClassVar, NoReturn

from mcl.mcpl.ast import NODE_CLASSES, UnknownNodeError, check_node, children

__all__ = ["NodeVisitor", "StrictVisitor", "UnknownNodeError", "unknown_node"]

_METHOD_NAMES: dict[type, str] = {cls: "visit_" + cls.__name__ for cls in NODE_CLASSES}


class NodeVisitor:
    """Dispatch on the node's class to `visit_<ClassName>`; `generic_visit` visits the
    children and returns None."""

    # Per visitor class: node class -> bound-method name, or None where generic_visit
    # applies. Filled lazily; getattr on every node would dominate long expression chains.
    _dispatch: ClassVar[dict[type, str | None]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}

    def visit(self, node: object, *args: Any, **kwargs: Any) -> Any:
        cls = type(node)
        table = type(self)._dispatch
        try:
            name = table[cls]
        except KeyError:
            method_name = _METHOD_NAMES.get(cls)
            if method_name is None:
                check_node(node)  # raises: not an AST node kind
                name = None
            else:
                name = method_name if hasattr(self, method_name) else None
            table[cls] = name
        if name is None:
            return self.generic_visit(node, *args, **kwargs)
        return getattr(self, name)(node, *args, **kwargs)

    def generic_visit(self, node: object, *args: Any, **kwargs: Any) -> Any:
        for child in children(node):
            self.visit(child, *args, **kwargs)
        return None


class StrictVisitor(NodeVisitor):
    """A visitor for passes that must handle every node kind they meet: a node without a
    `visit_<ClassName>` method raises instead of being searched or skipped. Override
    `generic_visit` only to raise a better error (a diagnostic with the node's span)."""

    def generic_visit(self, node: object, *args: Any, **kwargs: Any) -> Any:
        check_node(node)
        raise UnknownNodeError(f"{type(self).__name__} has no rule for {type(node).__name__} nodes")



def unknown_node(node: NoReturn, rule_of: str) -> NoReturn:
    """The last arm of an exhaustive `match` over node kinds (`case _: unknown_node(s,
    "…")`). mypy proves no known kind reaches it (the argument must be narrowed to
    `NoReturn`, the bottom type, as for `typing.assert_never`); at run time an object of
    another class stops the pass with `UnknownNodeError` instead of being skipped."""
    check_node(node)
    raise UnknownNodeError(f"{rule_of} has no rule for {type(node).__name__} nodes")
