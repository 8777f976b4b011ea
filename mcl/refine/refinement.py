"""What a refinement is: a named, parameterised rewrite of a kernel at its level, with
the preconditions it must show before it is offered, its parameters, and the proposed
changes of the findings it answers (mcl.feedback.findings; docs/refinements.md).

A refinement makes `Proposal`s: concrete rewrites (the parameters filled in, the edits
of the source text) that are not yet verified. `mcl.refine.offers` verifies each and
makes it an `Offer`. A precondition that fails raises `Refused` with the reason in words;
one that cannot be shown is a failure as well (nothing is offered on a guess)."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from mcl.feedback.findings import Finding, ProposedChange, UncoalescedAccess
from mcl.mcpl import ast
from mcl.refine.edits import TextEdit
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.refused import Refused

N = TypeVar("N", bound=ast.Node)


@dataclass(frozen=True)
class Parameter:
    """A parameter of a refinement: its name and what it means."""

    name: str
    meaning: str
    optional: bool = False


@dataclass(frozen=True)
class Proposal:
    """One rewrite of the kernel, its parameters filled in: `edits` of the source text,
    `summary` in words, `line` where it acts, and the finding it answers (None: a
    change no finding asks for, as a new value of a named constant)."""

    refinement: str
    args: tuple[tuple[str, str], ...]
    line: int
    summary: str
    edits: tuple[TextEdit, ...]
    answers: Finding | None = None
    # Proposals of one group are alternatives (values of one constant): a list keeps
    # the one the time model estimates fastest.
    group: str | None = None

    @property
    def invocation(self) -> str:
        """The `mcl apply` argument that makes this proposal: NAME:key=value,..."""
        return self.refinement + (":" + ",".join(f"{k}={v}" for k, v in self.args)
                                  if self.args else "")


class Refinement(ABC):
    """A named rewrite. Subclasses declare `name`, `summary`, `parameters`,
    `preconditions` (in words, for the documentation and `--help`) and `answers` (the
    proposed changes it makes); they find their proposals in a kernel and check, on the
    next version's findings, that the finding they answered is gone."""

    name: str
    summary: str
    parameters: tuple[Parameter, ...]
    preconditions: tuple[str, ...]
    answers: tuple[type[ProposedChange], ...] = ()
    # Whether `mcl apply --list` offers its proposals; one the time model cannot weigh
    # is applied by name only (its proposals remain for a search to try).
    listed: bool = True
    # Whether its point is to enable other refinements (the program stays the same, the
    # model estimates no gain): a search that looks a step ahead tries it as a neutral
    # step (mcl.refine.search).
    enables: bool = False
    # Why the time model cannot weigh it, where its gain is one the model does not see:
    # its proposals are then offered only to a search that measures (`list_offers`'
    # `measuring`), `mcl apply --list` gives this as the reason it does not list them,
    # and asked for by name it is applied as any other.
    measured_only: str | None = None

    @abstractmethod
    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        """The rewrites worth listing for this kernel (those a finding asks for), each a
        proposal or the reason it cannot be made."""

    @abstractmethod
    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        """The rewrite with these parameters (`Refused` where a precondition fails)."""

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        """The finding of the next version that is the one `proposal` answered, still
        there (None: it is gone). Only proposals that answer a finding are asked."""
        return None

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        """The proposal that answers `finding` of `kernel` (`mcl apply CODE@LINE`)."""
        raise Refused(f"{self.name} answers no {finding.code} finding")

    def answer_each(self, kernel: KernelAtLevel, findings: Sequence[Finding]
                    ) -> list[Proposal | Refused]:
        """`answer` for each of `findings`: its proposal, or why not at the finding's line."""
        out: list[Proposal | Refused] = []
        for finding in findings:
            try:
                out.append(self.answer(kernel, finding))
            except Refused as refused:
                line = finding.span.line if finding.span is not None else None
                out.append(Refused(refused.reason, line))
        return out

    def answer_each_once(self, kernel: KernelAtLevel, findings: Sequence[Finding]
                         ) -> list[Proposal | Refused]:
        """`answer_each`, one entry per proposal or reason: several findings (accesses
        of one statement, say) may ask for the same rewrite."""
        made: dict[str, Proposal | Refused] = {}
        for item in self.answer_each(kernel, findings):
            made.setdefault(item.invocation if isinstance(item, Proposal) else item.reason,
                            item)
        return list(made.values())


def block_space(kernel: KernelAtLevel, group: str, purpose: str) -> str:
    """The writable memory space a unit of `group` (a block) declares, for `purpose`
    (what the refinement keeps there, named in the refusal)."""
    hwd = kernel.library.get(kernel.source_function.hwd)
    found = hwd.par_group(group)
    spaces = [s.name for s in (found.unit.spaces if found and found.unit else ())
              if not s.read_only]
    if not spaces:
        raise Refused(f"a unit of {group} of {hwd.name} declares no writable memory "
                      f"space for {purpose}")
    return spaces[0]


def parse_args(refinement: Refinement, text: str) -> dict[str, str]:
    """`key=value,key=value` or positional values in the order of the parameters
    (`unroll:12,4`); a comma inside brackets belongs to the value (`x[r, k]`)."""
    if not text:
        return {}
    parts = _split_top(text)
    names = [p.name for p in refinement.parameters]
    args: dict[str, str] = {}
    for n, part in enumerate(parts):
        key, eq, value = part.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_]\w*", key.strip()) and key.strip() in names:
            args[key.strip()] = value.strip()
        elif n < len(names):
            args[names[n]] = part.strip()
        else:
            raise Refused(f"{refinement.name} takes {len(names)} parameters "
                          f"({', '.join(names)}), not '{part}'")
    return args


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def integer(args: Mapping[str, str], name: str, default: int | None = None) -> int:
    """An integer parameter (Refused when it is missing or not an integer)."""
    text = args.get(name)
    if text is None:
        if default is None:
            raise Refused(f"give the parameter {name}")
        return default
    try:
        return int(text)
    except ValueError:
        raise Refused(f"{name}={text}: an integer is needed") from None


def node_at(kernel: KernelAtLevel, line: int, kind: type[N]) -> N | None:
    """The first node of type `kind` in the kernel's function that starts at `line` of
    its own file (the `line` parameter of the refinements); None where none does."""
    return next((n for n in ast.walk(kernel.source_function.body)
                 if isinstance(n, kind) and n.span is not None
                 and n.span.line == line and kernel.in_file(n.span)), None)


def for_loop_at(kernel: KernelAtLevel, line: int) -> ast.For:
    """The for-loop of the kernel's function that starts at `line` of its own file (the
    `line` parameter of the loop refinements); Refused where none does."""
    loop = node_at(kernel, line, ast.For)
    if loop is None:
        raise Refused(f"no for-loop starts at line {line} of {kernel.path.name}")
    return loop


def uncoalesced_still_there(proposal: Proposal, findings: Sequence[Finding]
                            ) -> Finding | None:
    """`Refinement.still_there` for a proposal that answers an `uncoalesced` finding: the
    finding at the same access (line and column), if the next version still has it."""
    answered = proposal.answers
    if not isinstance(answered, UncoalescedAccess) or answered.access.span is None:
        return None
    where = answered.access.span
    return next((f for f in findings if isinstance(f, UncoalescedAccess)
                 and f.access.span is not None and f.access.span.line == where.line
                 and f.access.span.column == where.column), None)
