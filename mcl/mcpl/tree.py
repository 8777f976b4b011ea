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

What the builder takes from the metamodel (each rule's kind, class name, attributes'
defaults and lists, and which child stands for which assignment) and the parser's
description (mcl/mcpl/peg.py) are plain data too (`table`), which mcl/mcpl/parse.py keeps
in mcl's cache folder: a builder made from it (`kept`) builds the same models without
importing textX, which it imports, with the metamodel, only for a text the parse rejects
(Arpeggio's parse, for its error). tests/mcpl/test_peg.py compares the two builders.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Arpeggio ships no type information
from arpeggio import NonTerminal, Terminal  # type: ignore[import-untyped]

from mcl.mcpl.peg import Grammar, KeptRule, build, describe

# What a node of a rule becomes (a plan's first item): textX's own words for the kinds of
# rules, spelled here so that a kept builder need not import textX (textx.const).
ABSTRACT, MATCH, COMMON = "abstract", "match", "common"

# A builder as plain data (`TreeModelBuilder.table`, kept by mcl/mcpl/parse.py in mcl's
# cache folder): the parser's `Grammar` and, for each of its expressions, the plan of its
# nodes (None where no node of it is ever converted: (kind,) for an abstract or match
# rule, (kind, class name, defaults, list attributes) for a common one) and the assignment
# it stands for in its parent's node ((attribute, operator), or None).
Table = tuple[Grammar, list[Any], list[Any]]


class TreeModelBuilder:
    """Converts parse trees of one metamodel; the per-rule tables are built on first use
    (or read from a `Table`: `kept`)."""

    def __init__(self, metamodel: Any) -> None:
        # textX would resolve a cross-reference (`x=[Rule]`) to an object; this builder
        # would leave the name. The MCPL grammar has none: say so if one is ever added.
        for cls in metamodel:
            for attr in getattr(cls, "_tx_attrs", {}).values():
                if attr.ref and not attr.cont:
                    raise NotImplementedError(
                        f"{cls.__name__}.{attr.name} is a cross-reference, which "
                        "mcl/mcpl/tree.py does not resolve")
        self._metamodel: Any = metamodel
        self._metamodel_factory: Callable[[], Any] | None = None
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
        self._described: tuple[Grammar, list[Any]] | None
        try:
            self._described = describe(metamodel._parser_blueprint)
            self.compiled = build(*self._described)
        except NotImplementedError:
            self._described = None
            self.compiled = None

    @classmethod
    def kept(cls, table: Table, metamodel: Callable[[], Any]) -> TreeModelBuilder:
        """The builder of a `table` an earlier process made (`table()`): the same parse
        and the same models, without textX; `metamodel` makes the metamodel, for
        Arpeggio's parse where the parse fails (the syntax error textX reports)."""
        grammar, plans, assignments = table
        rules = [KeptRule(name) for _, name, *_ in grammar[2]]
        if not len(rules) == len(plans) == len(assignments):
            raise ValueError("a plan and an assignment for every expression")
        self = cls.__new__(cls)
        self._metamodel = None
        self._metamodel_factory = metamodel
        self._plans = {}
        for rule, plan in zip(rules, plans, strict=True):
            if plan is not None:
                kind, *common = plan
                self._plans[rule] = (kind,) if not common else (
                    kind, type(common[0], (), {}), dict(common[1]), tuple(common[2]))
        self._assignments = {rule: None if how is None else (how[0], how[1])
                             for rule, how in zip(rules, assignments, strict=True)}
        self._processors = {}
        self._described = None
        self.compiled = build(grammar, rules)
        return self

    def table(self) -> Table | None:
        """This builder as plain data for `kept`; None where it has none (Arpeggio's parse
        only, or a rule's value converted by a textX object processor)."""
        if self._described is None:
            return None
        grammar, exprs = self._described
        plans: list[Any] = []
        assignments: list[Any] = []
        for (kind, name, root, _, _), expr in zip(grammar[2], exprs, strict=True):
            terminal = kind in ("string", "regex", "end")
            if name in self._processors:
                return None
            assignments.append(self._assignment_of(expr, name, terminal))
            plan = None
            if root and not terminal and hasattr(expr, "_tx_class") \
                    and not name.startswith("__asgn"):
                plan = self._plans.get(expr) or self._plan(expr)
                if len(plan) > 1:
                    plan = (plan[0], name, plan[2], plan[3])
            plans.append(plan)
        return grammar, plans, assignments

    @property
    def metamodel(self) -> Any:
        if self._metamodel is None and self._metamodel_factory is not None:
            self._metamodel = self._metamodel_factory()
        return self._metamodel

    def parse(self, text: str, file: str) -> Any:
        """The model of `text`; a syntax error raises textX's TextXSyntaxError, as
        `model_from_str` does."""
        tree = self.compiled(text) if self.compiled is not None else None
        if tree is None:
            parser = self.metamodel._parser_blueprint.clone()
            parser.file_name = file
            tree = parser.parse(text)
        return self._model(tree)

    def parse_or_none(self, text: str, file: str) -> Any:
        """`parse`, or None where the compiled parse fails: it fails exactly where
        Arpeggio's does (mcl/mcpl/peg.py), so a caller that would drop the syntax error
        does not pay for Arpeggio's parse again (nor, in a kept builder, for textX's
        metamodel). Without a compiled parse, `parse` (which raises)."""
        if self.compiled is None:
            return self.parse(text, file)
        tree = self.compiled(text)
        return None if tree is None else self._model(tree)

    def _model(self, tree: Any) -> Any:
        """The model of a parse tree, compiled or Arpeggio's (its root's first child)."""
        return self.node(tree[0]) if len(tree) > 0 and isinstance(tree[0], NonTerminal) \
            else ""

    def node(self, node: Any) -> Any:
        if isinstance(node, Terminal):
            return self._match(node)
        plan = self._plans.get(node.rule)
        if plan is None:
            plan = self._plan(node.rule)
        kind = plan[0]
        if kind == ABSTRACT:
            # the concrete rule that matched (textX: the first child that is not a
            # terminal, whose rule's class "is not RULE_MATCH" -- a class against a
            # string, so any; with one child, that child)
            if len(node) > 1:
                for child in node:
                    if type(child) is not Terminal:
                        return self.node(child)
                return "".join(str(child) for child in node)
            return self.node(node[0])
        if kind == MATCH:
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
        how = self._assignment_of(child.rule, child.rule_name, isinstance(child, Terminal))
        self._assignments[child.rule] = how
        return how

    @staticmethod
    def _assignment_of(rule: Any, name: str, terminal: bool) -> tuple[str, str] | None:
        """(attribute, operator) of a node of `rule` (named `name`, a `terminal` or not)
        in its parent's: textX's assignments are rules named `__asgn_<operator>`."""
        if terminal or not name.startswith("__asgn"):
            return None
        return rule._attr_name, name.rsplit("_", 1)[-1]

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
        from textx.const import MULT_ONEORMORE, MULT_ZEROORMORE, RULE_ABSTRACT, RULE_MATCH

        mclass = rule._tx_class
        kind = {RULE_ABSTRACT: ABSTRACT, RULE_MATCH: MATCH}.get(mclass._tx_type, COMMON)
        if kind != COMMON:
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
