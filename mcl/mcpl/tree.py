"""The textX model of an MCPL file, built straight from the parse tree.

textX parses in two steps: its Arpeggio parser (generated from mcpl.tx) builds a parse
tree, then a generic pass turns the tree into model objects, one per grammar rule match
with one attribute per assignment. That second pass does far more than MCPL needs -- the
line and column of every node, cross-reference bookkeeping, object processors, parent
links -- and took about half of the front end's time. `TreeModelBuilder.parse` does the
same conversion with the same result shape (a class named after each rule, the assignments'
attributes with textX's defaults, `_tx_position` / `_tx_position_end`), in one recursive
walk, so mcl.mcpl.build reads it unchanged and mcpl.tx stays the one source of the
language: the rules' attributes, multiplicities and kinds come from the metamodel.

It relies on the shape of textX's parse tree (the attribute names `_tx_class`,
`_attr_name` and the `__asgn_<op>` rule names of assignments, stable across textX 3-4);
tests/mcpl/test_tree.py compares it with textX's own model on every shipped kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arpeggio import NonTerminal, Terminal  # type: ignore[import-untyped]
from textx.const import MULT_ONEORMORE, MULT_ZEROORMORE, RULE_ABSTRACT, RULE_MATCH


class TreeModelBuilder:
    """Converts parse trees of one metamodel; the per-rule tables are built on first use."""

    def __init__(self, metamodel: Any) -> None:
        self.metamodel = metamodel
        self._classes: dict[str, Any] = {}
        self._defaults: dict[str, Callable[[], dict[str, Any]]] = {}
        self._processors: dict[str, Callable[[Any], Any]] = dict(metamodel._obj_processors)

    def parse(self, text: str, file: str) -> Any:
        """The model of `text`; a syntax error raises textX's TextXSyntaxError, as
        `model_from_str` does."""
        parser = self.metamodel._parser_blueprint.clone()
        parser.file_name = file
        tree = parser.parse(text)
        return self.node(tree[0]) if len(tree) > 0 and isinstance(tree[0], NonTerminal) \
            else ""

    def node(self, node: Any) -> Any:
        if isinstance(node, Terminal):
            return self._match(node)
        mclass = node.rule._tx_class
        kind = mclass._tx_type
        if kind == RULE_ABSTRACT:
            # the concrete rule that matched (textX: the first child that is neither a
            # terminal nor a match rule; with one child, that child)
            if len(node) > 1:
                for child in node:
                    if type(child) is not Terminal and child.rule._tx_class is not RULE_MATCH:
                        return self.node(child)
                return "".join(str(child) for child in node)
            return self.node(node[0])
        if kind == RULE_MATCH:
            return self._match(node)
        name = node.rule_name
        cls = self._classes.get(name)
        if cls is None:
            cls = self._class_of(name, mclass)
        inst = cls.__new__(cls)
        inst.__dict__.update(self._defaults[name]())
        inst._tx_position = node.position
        inst._tx_position_end = node.position_end
        for child in node:
            if isinstance(child, Terminal) or not child.rule_name.startswith("__asgn"):
                continue  # a keyword or punctuation
            attr = child.rule._attr_name
            op = child.rule_name.rsplit("_", 1)[-1]
            if op == "optional":
                setattr(inst, attr, True)
            elif op == "plain":
                value = self.node(child[0])
                current = getattr(inst, attr)
                if isinstance(current, list):
                    current.append(value)
                else:
                    setattr(inst, attr, value)
            else:  # list, oneormore, zeroormore
                values = getattr(inst, attr)
                if values is None:
                    values = []
                    setattr(inst, attr, values)
                values.extend(self.node(n) for n in child if n.rule_name != "sep")
        return inst

    def _match(self, node: Any) -> Any:
        """The value of a match rule (a token), as textX gives it."""
        if isinstance(node, Terminal):
            value: Any = node.value
        elif len(node) > 1:
            value = "".join(str(self._match(n)) for n in node)
        else:
            value = self._match(node[0])
        processor = self._processors.get(node.rule_name)
        return processor(value) if processor is not None else value

    def _class_of(self, name: str, mclass: Any) -> Any:
        """A plain class named after the rule, and the factory of its attributes'
        defaults (textX's: a list for `*=`/`+=`, the base type's zero, else None)."""
        probe = mclass.__new__(mclass)
        self.metamodel._init_obj_attrs(probe)
        fixed = {a: v for a, v in vars(probe).items() if not isinstance(v, list)}
        lists = [a.name for a in mclass._tx_attrs.values()
                 if a.mult in (MULT_ZEROORMORE, MULT_ONEORMORE)]

        def defaults() -> dict[str, Any]:
            values = dict(fixed)
            for attr in lists:
                values[attr] = []
            return values

        cls = type(name, (), {"__slots__": ("__dict__",)})
        self._classes[name] = cls
        self._defaults[name] = defaults
        return cls
