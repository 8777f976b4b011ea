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

The parse tree comes from mcl/mcpl/peg.py, Arpeggio's parse compiled to plain functions
(the same tree), and from Arpeggio itself where that fails (for its syntax error).
It relies on the shape of textX's parse tree (the attribute names `_tx_class`,
`_attr_name` and the `__asgn_<op>` rule names of assignments, stable across textX 3-4);
tests/mcpl/test_tree.py compares it with textX's own model on every shipped kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arpeggio import NonTerminal, Terminal  # type: ignore[import-untyped]
from textx.const import MULT_ONEORMORE, MULT_ZEROORMORE, RULE_ABSTRACT, RULE_MATCH

from mcl.mcpl.peg import compile_parser


class TreeModelBuilder:
    """Converts parse trees of one metamodel; the per-rule tables are built on first use."""

    def __init__(self, metamodel: Any) -> None:
        # textX would resolve a cross-reference (`x=[Rule]`) to an object; this builder
        # would leave the name. The MCPL grammar has none: say so if one is ever added.
        for cls in metamodel:
            for attr in getattr(cls, "_tx_attrs", {}).values():
                if attr.ref and not attr.cont:
                    raise NotImplementedError(
                        f"{cls.__name__}.{attr.name} is a cross-reference, which "
                        "mcl/mcpl/tree.py does not resolve")
        self.metamodel = metamodel
        # per rule object of the parser: what a node of it becomes (looked up once)
        self._plans: dict[Any, tuple[Any, ...]] = {}
        # per rule object of a child: (attribute, assignment operator), or None for a
        # keyword or punctuation
        self._assignments: dict[Any, tuple[str, str] | None] = {}
        self._processors: dict[str, Callable[[Any], Any]] = dict(metamodel._obj_processors)
        # The parse itself, compiled from the same parser (mcl/mcpl/peg.py: the same tree,
        # 3 to 4 times as fast); Arpeggio parses again where it fails, for the error it
        # reports. None: Arpeggio's parse only (a parser peg.py cannot reproduce).
        self.compiled: Callable[[str], Any] | None
        try:
            self.compiled = compile_parser(metamodel._parser_blueprint)
        except NotImplementedError:
            self.compiled = None

    def parse(self, text: str, file: str) -> Any:
        """The model of `text`; a syntax error raises textX's TextXSyntaxError, as
        `model_from_str` does."""
        tree = self.compiled(text) if self.compiled is not None else None
        if tree is None:
            parser = self.metamodel._parser_blueprint.clone()
            parser.file_name = file
            tree = parser.parse(text)
        return self.node(tree[0]) if len(tree) > 0 and isinstance(tree[0], NonTerminal) \
            else ""

    def node(self, node: Any) -> Any:
        if isinstance(node, Terminal):
            return self._match(node)
        plan = self._plans.get(node.rule)
        if plan is None:
            plan = self._plan(node.rule)
        kind = plan[0]
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
        _, cls, fixed, lists = plan
        inst = cls.__new__(cls)
        values = inst.__dict__
        values.update(fixed)
        for attr in lists:
            values[attr] = []
        values["_tx_position"] = node.position
        values["_tx_position_end"] = node.position_end
        assignments = self._assignments
        for child in node:
            rule = child.rule
            how = assignments[rule] if rule in assignments else self._assignment(child)
            if how is None:
                continue  # a keyword or punctuation
            attr, op = how
            if op == "optional":
                values[attr] = True
            elif op == "plain":
                value = self.node(child[0])
                current = values[attr]
                if isinstance(current, list):
                    current.append(value)
                else:
                    values[attr] = value
            else:  # list, oneormore, zeroormore
                if values[attr] is None:
                    values[attr] = []
                values[attr].extend(self.node(n) for n in child if n.rule_name != "sep")
        return inst

    def _assignment(self, child: Any) -> tuple[str, str] | None:
        how = None
        if not isinstance(child, Terminal) and child.rule_name.startswith("__asgn"):
            how = (child.rule._attr_name, child.rule_name.rsplit("_", 1)[-1])
        self._assignments[child.rule] = how
        return how

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

    def _plan(self, rule: Any) -> tuple[Any, ...]:
        """What a node of `rule` becomes: an abstract or match rule's kind, or for a
        common rule a plain class named after it and its attributes' defaults (textX's:
        a list for `*=`/`+=`, the base type's zero, else None)."""
        mclass = rule._tx_class
        kind = mclass._tx_type
        if kind in (RULE_ABSTRACT, RULE_MATCH):
            plan: tuple[Any, ...] = (kind,)
        else:
            probe = mclass.__new__(mclass)
            self.metamodel._init_obj_attrs(probe)
            fixed = {a: v for a, v in vars(probe).items() if not isinstance(v, list)}
            lists = tuple(a.name for a in mclass._tx_attrs.values()
                          if a.mult in (MULT_ZEROORMORE, MULT_ONEORMORE))
            plan = (kind, type(rule.rule_name, (), {}), fixed, lists)
        self._plans[rule] = plan
        return plan
