"""How both grammars (mcl/hdl/hdl.tx, mcl/mcpl/mcpl.tx) become our trees: one converter
pattern, checked against the grammar so the two cannot drift apart.

textX builds one Python class per grammar rule, named like the rule. A converter derives
from `GrammarConverter` and has one method `rule_<Rule>(obj)` per rule it converts;
`convert(obj)` calls the method of the object's rule. Where the grammar offers a choice
(`Stmt: Block | Foreach | ...`), the converter names the choice rule in `CHOICES`, and
`mismatches(metamodel)` lists every alternative without a `rule_` method and every
`rule_` method that names no rule. The metamodels run that check when they are built, so
a rule added to or renamed in a grammar without its conversion stops the first parse
with a message naming it, instead of reaching a file that uses it.
"""

from __future__ import annotations

from typing import Any, ClassVar


class GrammarMismatch(RuntimeError):
    """A grammar and its converter disagree: a bug in mcl, never a user error."""


class GrammarConverter:
    # Choice rules of the grammar whose alternatives `convert` dispatches over.
    CHOICES: ClassVar[tuple[str, ...]] = ()

    def convert(self, obj: Any) -> Any:
        """The tree of one textX object, by the rule that matched it."""
        method = getattr(self, "rule_" + obj.__class__.__name__, None)
        if method is None:
            raise GrammarMismatch(
                f"{type(self).__name__} has no rule_{type(obj).__name__}: "
                "the grammar and its converter disagree"
            )
        return method(obj)

    @classmethod
    def mismatches(cls, metamodel: Any, namespace: str) -> list[str]:
        """What the grammar `namespace` of `metamodel` and this converter disagree on."""
        rules: dict[str, Any] = metamodel.namespaces[namespace]
        handled = {name[len("rule_"):] for name in dir(cls) if name.startswith("rule_")}
        problems = [
            f"{cls.__name__}.rule_{name} names no rule of {namespace}.tx"
            for name in sorted(handled - set(rules))
        ]
        for choice in cls.CHOICES:
            if choice not in rules:
                problems.append(f"{cls.__name__}.CHOICES names no rule {choice} of {namespace}.tx")
                continue
            for alternative in sorted(_alternatives(rules[choice])):
                if alternative not in handled:
                    problems.append(
                        f"{namespace}.tx: {choice} can be {alternative}, "
                        f"which {cls.__name__} has no rule_{alternative} for"
                    )
        return problems

    @classmethod
    def check(cls, metamodel: Any, namespace: str) -> None:
        problems = cls.mismatches(metamodel, namespace)
        if problems:
            raise GrammarMismatch("; ".join(problems))


def _alternatives(rule: Any) -> set[str]:
    """The concrete rules an abstract (choice) rule can match, through nested choices."""
    if getattr(rule, "_tx_type", None) != "abstract":
        return {rule.__name__}
    found: set[str] = set()
    for sub in rule._tx_inh_by:
        found |= _alternatives(sub)
    return found
