"""A result of one node's subtree and of the answers to the questions its computation
asked outside it, kept on the node and found again while every answer is the same.

    kept_by_answers(node, key, compute, ask) -> result

`compute(asking)` must be a pure function of the subtree below `node` and of what it
learns through `asking(question)`. The questions it asked, with their answers, are kept
beside its result (`ast.kept_on`'s place, so as long as the node lives); a later call
asks them again, in the same order, and returns the kept result when every answer is
equal: the computation is deterministic, so with the same answers it would ask the same
questions and return the same result (the verification of a query system such as
salsa's). A question that it no longer asks (one that an earlier answer led it to) is
asked again harmlessly; one it would now ask first is reached only after an answer
differs, which makes it compute.

The read/write inference (mcl.mcpl.access, the paper's section 4.3) is the user: the
modes of a function's variables depend on its tree and on the modes of its callees'
parameters. The language server's parse keeps the definitions an edit did not touch
as the same nodes (mcl.mcpl.parse.reuse_definitions), so an edit of one function of a
module walks that one again and the callers whose callees' modes it changed; the others
are found here.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from mcl.mcpl import ast

__all__ = ["kept_by_answers"]

Q = TypeVar("Q", bound=Hashable)
A = TypeVar("A")
R = TypeVar("R")

# Results kept per node: the fixed point over a program's calls computes a function once
# per round with the modes known then (two or three rounds), and an edit typed back and
# forth alternates between two programs.
PER_NODE = 6


def kept_by_answers(node: object, key: str, compute: Callable[[Callable[[Q], A]], R],
                    ask: Callable[[Q], A]) -> R:
    """`compute(ask)`, or the result kept on `node` under `key` of a computation whose
    every question `ask` answers the same now (module doc). The caller must not mutate
    the result."""
    kept: list[tuple[tuple[tuple[Q, A], ...], R]] = ast.kept_on(node, key, list)
    for answers, result in kept:
        if all(ask(question) == answer for question, answer in answers):
            return result
    asked: dict[Q, A] = {}

    def asking(question: Q) -> A:
        if question not in asked:
            asked[question] = ask(question)
        return asked[question]

    result = compute(asking)
    if len(kept) >= PER_NODE:
        del kept[0]
    kept.append((tuple(asked.items()), result))
    return result
