"""Arpeggio's parse of mcpl.tx as plain Python functions (the front end's speed).

textX makes an Arpeggio parser from mcpl.tx: a graph of parsing expressions, each of which
parses through a generic method that saves and restores the position, keeps debugging,
memoization and error bookkeeping and, on failure, raises `NoMatch` -- several Python calls
and an exception for every expression tried, and most tries fail (docs/reliability.md,
"Front-end speed"). `compile_parser` walks that same graph once and makes one function
per expression that does what the expression's `parse` does, returning its result and the
new position, or None where Arpeggio would raise. The result is the very parse tree
Arpeggio builds (the same Terminal and NonTerminal nodes, rules, positions and values), so
mcl/mcpl/tree.py reads it unchanged, and mcpl.tx stays the one source of the language:
nothing of the grammar is written here.

The graph is first described as plain data (`describe`: a `Grammar` of tuples, strings
and numbers), and the functions are made from that description (`build`), so that
mcl/mcpl/parse.py can keep the description in mcl's cache folder and a later process can
make the same functions without textX, its metamodel or Arpeggio's graph; the nodes' rules
are then `KeptRule`s that carry the rule's name, all that is read of them. (Python source
generated from the graph and compiled would also keep, but compiling it took tens of
milliseconds in every process that had to make it; making the functions takes about 1 ms.)

Only a successful parse is taken from here. Where it fails, the caller parses again with
Arpeggio, which tracks the furthest failure and the tokens expected there: syntax errors
are Arpeggio's, word for word. tests/mcpl/test_peg.py compares the two parse trees on
every MCPL source of the repository and on truncated and mutated copies of them.

What of Arpeggio's behaviour is reproduced (arpeggio/__init__.py, 2.0): whitespace and
then comments (the comment rule over and over, whitespace after each) are skipped before
every token; a string match directly inside a sequence is a suppressed terminal; a match
of a rule is wrapped in a NonTerminal of its flattened children; an expression with an
empty result (an optional that did not match, a repetition that matched nothing) adds
nothing to its parent but keeps the position it reached, also inside an ordered choice,
which then tries its next alternative from there, and a repetition stops at its first
empty result without giving back its separator. Anything else in the graph (lexical
rules, `ws`/`skipws`/`eolterm` settings of a rule, memoization, tree reduction,
case-insensitive matching, other expression kinds) raises NotImplementedError, and the
caller then parses with Arpeggio alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

# Arpeggio ships no type information
from arpeggio import (  # type: ignore[import-untyped]
    And,
    EndOfFile,
    NonTerminal,
    OneOrMore,
    Optional,
    OrderedChoice,
    RegExMatch,
    Sequence,
    StrMatch,
    Terminal,
    ZeroOrMore,
)

from mcl.identity import Ref

# (text, position) -> (result, position after it), or None where it does not match
Parse = Callable[[str, int], "tuple[Any, int] | None"]


def _terminal(rule: Any, position: int, value: str, suppress: bool, extra: Any) -> Any:
    # Terminal(rule, position, value, suppress=..., extra_info=...) without its two
    # __init__ calls and assertions: the same slots, the same values.
    node = Terminal.__new__(Terminal)
    node.rule = rule
    node.rule_name = rule.rule_name
    node.position = position
    node.error = False
    node.comments = None
    node.value = value
    node.suppress = suppress
    node.extra_info = extra
    return node


def _nonterminal(rule: Any, nodes: list[Any]) -> Any:
    # NonTerminal(rule, nodes) for `nodes` already flattened (Arpeggio flattens again).
    node = NonTerminal.__new__(NonTerminal)
    node.extend(nodes)
    node.rule = rule
    node.rule_name = rule.rule_name
    node.position = nodes[0].position if nodes else 0
    node.error = False
    node.comments = None
    node._filtered = False
    return node


def _flatten(results: list[Any], into: list[Any]) -> list[Any]:
    # arpeggio.flatten for what these functions return: the nodes, in order, of lists
    # nested in lists (it asks every item for `__iter__`).
    for item in results:
        if type(item) is list:
            _flatten(item, into)
        else:
            into.append(item)
    return into


class KeptRule:
    """What stands for a parsing expression in the trees of a kept parser (one described
    in an earlier process, `build` without Arpeggio's graph): its rule name, all that the
    nodes and mcl/mcpl/tree.py read of it."""

    __slots__ = ("rule_name",)

    def __init__(self, rule_name: str) -> None:
        self.rule_name = rule_name

    def __repr__(self) -> str:
        return f"KeptRule({self.rule_name!r})"


_MATCHES = (RegExMatch, StrMatch, EndOfFile)
_MATCH_KINDS = ("string", "regex", "end")
_KINDS = {Sequence: "sequence", OrderedChoice: "choice", Optional: "optional",
          ZeroOrMore: "zero or more", OneOrMore: "one or more", And: "and"}

# A parser as plain data (what `describe` gives, `build` reads, and mcl/mcpl/parse.py keeps
# in mcl's cache folder): the regular expression of what is skipped before every token
# (pattern, flags) and the expressions, the first the top one, each as
# (kind, rule name, root, suppress, what it holds): the indices of its children (a
# repetition's item and separator, -1 for none), a string match's text, a regular
# expression's (pattern, flags), or nothing for the end of the file.
Grammar = tuple[str, int, list[tuple[Any, ...]]]


def describe(parser: Any) -> tuple[Grammar, list[Any]]:
    """Arpeggio `parser` (textX's, with its whitespace and comment rule) as a `Grammar`,
    and the parsing expressions in the order of its expressions. NotImplementedError where
    the parser uses what is not reproduced."""
    if parser.memoization or parser.reduce_tree or parser.in_lex_rule or not parser.skipws:
        raise NotImplementedError("memoization, tree reduction, a lexical rule or "
                                  "whitespace that is not skipped")
    comment = parser.comments_model
    if comment is not None and not isinstance(comment, RegExMatch):
        raise NotImplementedError("a comment rule that is not one regular expression")
    ws = f"[{re.escape(parser.ws)}]*"
    # Arpeggio's skip, whitespace and then (a comment, whitespace)* with each comment the
    # first match of its rule, never fails and never backtracks, so one greedy regular
    # expression ends where it does (it matches the empty string: its match is never None).
    skipped = ws if comment is None else f"{ws}(?:(?:{comment.regex.pattern}){ws})*"
    exprs = [parser.parser_model]
    known = {Ref(exprs[0]): 0}  # by identity: a StrMatch equals any other of its text

    def index(expr: Any) -> int:
        if expr is None:  # a repetition without a separator
            return -1
        key = Ref(expr)
        if key not in known:
            known[key] = len(exprs)
            exprs.append(expr)
        return known[key]

    entries: list[tuple[Any, ...]] = []
    while len(entries) < len(exprs):  # `index` appends the expressions it meets
        e = exprs[len(entries)]
        held: Any = None
        if isinstance(e, _MATCHES):
            if e.suppress:
                raise NotImplementedError("a suppressed match")
            if isinstance(e, EndOfFile):
                kind = "end"
            elif isinstance(e, StrMatch):
                if e.ignore_case:
                    raise NotImplementedError("a case-insensitive string match")
                kind, held = "string", e.to_match
            else:
                kind, held = "regex", (e.regex.pattern, e.regex.flags)
        else:
            if getattr(e, "ws", None) is not None or getattr(e, "skipws", None) is not None \
                    or getattr(e, "eolterm", False):
                raise NotImplementedError(f"a ws, skipws or eolterm setting on {e.name}")
            if type(e) not in _KINDS:
                raise NotImplementedError(f"the parsing expression {type(e).__name__}")
            kind = _KINDS[type(e)]
            children = [e.nodes[0], e.sep] if kind in ("zero or more", "one or more") \
                else e.nodes
            held = tuple(index(child) for child in children)
        entries.append((kind, e.rule_name, bool(e.root), bool(e.suppress), held))
    return (skipped, comment.regex.flags if comment else 0, entries), exprs


class _Compiler:
    """The functions of one parser's expressions: one per expression, and one per use of
    a match (whether a string match is suppressed depends on where it stands). A function
    calls its children through a list that `compile` fills once every function exists,
    as the grammar's rules refer to each other in cycles. `rules`: the rule of each
    expression's nodes."""

    def __init__(self, grammar: Grammar, rules: list[Any]) -> None:
        pattern, flags, self.entries = grammar
        if len(rules) != len(self.entries):
            raise ValueError("a rule for every expression")
        self.skip: Callable[[str, int], Any] = re.compile(pattern, flags).match
        self.rules = rules
        self.functions: list[Parse | None] = [None] * len(self.entries)
        self.links: list[tuple[list[Any], int, int]] = []  # (children, slot, function k)

    def compile(self) -> Parse:
        for k, entry in enumerate(self.entries):
            if entry[0] not in _MATCH_KINDS:
                self.functions[k] = self.function(k)
        for children, slot, target in self.links:
            children[slot] = self.functions[target]
        top = self.functions[0] or self.match(0, False)  # only the root could be a match
        return top

    def children(self, indices: tuple[int, ...], in_sequence: bool) -> list[Any]:
        out: list[Any] = []
        for k in indices:
            if k < 0:  # a repetition without a separator
                out.append(None)
            elif self.entries[k][0] in _MATCH_KINDS:
                out.append(self.match(k, in_sequence))
            else:
                self.links.append((out, len(out), k))
                out.append(None)
        return out

    def function(self, k: int) -> Parse:
        kind, _, root, suppress, indices = self.entries[k]
        rule = self.rules[k]
        if kind == "sequence":
            return self.sequence(rule, root, suppress, self.children(indices, True))
        finish = self.result(rule, root, suppress)
        children = self.children(indices, False)
        if kind == "choice":
            return self.choice(finish, children)
        if kind == "optional":
            return self.optional(finish, children)
        if kind == "and":
            return self.predicate(children)
        return self.repetition(finish, children, kind == "one or more")

    # ----------------------------------------------------------------------- matches

    def match(self, k: int, in_sequence: bool) -> Parse:
        """Match.parse: whitespace and comments skipped, then the match itself."""
        skip = self.skip
        kind, _, _, _, held = self.entries[k]
        rule = self.rules[k]
        if kind == "end":
            def end_of_file(text: str, pos: int) -> tuple[Any, int] | None:
                pos = skip(text, pos).end()
                if pos != len(text):
                    return None
                return _terminal(EndOfFile(), pos, "", True, None), pos
            return end_of_file
        if kind == "string":
            word: str = held
            length = len(word)

            def string(text: str, pos: int) -> tuple[Any, int] | None:
                pos = skip(text, pos).end()
                if not text.startswith(word, pos):
                    return None
                return _terminal(rule, pos, word, in_sequence, None), pos + length
            return string
        regex = re.compile(*held).match

        def regular(text: str, pos: int) -> tuple[Any, int] | None:
            pos = skip(text, pos).end()
            m = regex(text, pos)
            if m is None:
                return None
            matched = m.group()
            if not matched:
                return None, pos
            return _terminal(rule, pos, matched, False, m), pos + len(matched)
        return regular

    # ------------------------------------------------------------- other expressions

    @staticmethod
    def result(rule: Any, root: bool, suppress: bool) -> Callable[[Any], Any]:
        """ParsingExpression.parse on what `_parse` gave: nothing when suppressed, a rule's
        match wrapped in a NonTerminal of the flattened list."""
        if suppress:
            return lambda result: None
        if not root:
            return lambda result: result
        return lambda result: _nonterminal(rule, _flatten(result, [])) if result else result

    @staticmethod
    def sequence(rule: Any, root: bool, suppress: bool, children: list[Any]) -> Parse:
        # the commonest expression: its rule wrapping is written out, not a call
        def sequence(text: str, pos: int) -> tuple[Any, int] | None:
            results = []
            for child in children:
                found = child(text, pos)
                if found is None:
                    return None
                result, pos = found
                if result:
                    results.append(result)
            if suppress or not results:
                return None, pos
            return (_nonterminal(rule, _flatten(results, [])) if root else results), pos
        return sequence

    @staticmethod
    def choice(finish: Callable[[Any], Any], children: list[Any]) -> Parse:
        def choice(text: str, pos: int) -> tuple[Any, int] | None:
            start = pos
            for child in children:
                found = child(text, pos)
                if found is None:
                    pos = start
                    continue
                result, pos = found  # an empty result: the next tries from here
                if result is not None:
                    return finish([result]), pos
            return None
        return choice

    @staticmethod
    def optional(finish: Callable[[Any], Any], children: list[Any]) -> Parse:
        def optional(text: str, pos: int) -> tuple[Any, int] | None:
            found = children[0](text, pos)
            if found is None:
                return None, pos
            result, pos = found
            return (None if result is None else finish([result])), pos
        return optional

    @staticmethod
    def repetition(finish: Callable[[Any], Any], children: list[Any],
                   one_or_more: bool) -> Parse:
        def repetition(text: str, pos: int) -> tuple[Any, int] | None:
            item, separator = children
            results: list[Any] = []
            previous = None
            while True:
                here = pos
                if separator is not None and previous:
                    found = separator(text, pos)
                    if found is None:
                        pos = here
                        break
                    result, pos = found
                    if result:
                        results.append(result)
                found = item(text, pos)
                if found is None:
                    if one_or_more and previous is None:
                        return None
                    pos = here
                    break
                previous, pos = found
                if not previous:
                    break
                results.append(previous)
            return finish(results), pos
        return repetition

    @staticmethod
    def predicate(children: list[Any]) -> Parse:
        def predicate(text: str, pos: int) -> tuple[Any, int] | None:
            for child in children:
                if child(text, pos) is None:
                    return None
            return None, pos
        return predicate


def build(grammar: Grammar, rules: list[Any]) -> Callable[[str], Any]:
    """The parse of `grammar` as Python functions: text -> its parse tree, with `rules[k]`
    the rule of the nodes of expression k (Arpeggio's expressions, or `KeptRule`s), or
    None where Arpeggio raises NoMatch."""
    top = _Compiler(grammar, rules).compile()

    def parse(text: str) -> Any:
        found = top(text, 0)
        return None if found is None else found[0]
    return parse


def compile_parser(parser: Any) -> Callable[[str], Any]:
    """The parse of Arpeggio `parser` as Python functions: text -> the parse tree Arpeggio
    builds, or None where Arpeggio raises NoMatch. NotImplementedError where the parser
    uses what is not reproduced."""
    return build(*describe(parser))
