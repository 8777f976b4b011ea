"""pad-shared: widen the last dimension of an on-chip array so that the rows of a warp's
access fall in different banks (the lock-step analysis's `bank-conflict` suggestion, a
`RemoveBankConflict`; paper 6.5). The padding is chosen from the conflict: the fewest
extra elements that make a row's stride in words share no factor with the number of
banks, as TILE + 1 does for a 32 x 32 tile read down a column on 32 banks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mcl.feedback.findings import BankConflictFinding, Finding
from mcl.mcpl import ast
from mcl.refine.answers import ANSWERS
from mcl.refine.edits import TextEdit, span_text
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import constant_env, constant_int, written
from mcl.refine.refinement import Parameter, Proposal, Refinement, Refused, integer

ELEMENT_BYTES = {"float": 4, "int": 4, "double": 8, "byte": 1, "bool": 1}
# Operators that bind tighter than `+`: `E + p` needs no parentheses around E.
_TIGHT = frozenset({"*", "/", "%", "^", "+", "-"})


class PadShared(Refinement):
    name = "pad-shared"
    summary = "pad the last dimension of an on-chip array against a bank conflict"
    parameters = (
        Parameter("array", "the array"),
        Parameter("pad", "the extra elements per row (default: chosen from the conflict)",
                  optional=True),
        Parameter("banks", "the banks of the conflict (default: the finding's)",
                  optional=True),
    )
    preconditions = (
        "the array is declared in the kernel's function (not a parameter), with two or "
        "more dimensions whose last is a constant",
        "no view of it (`as`) and no call is passed it: every access indexes its "
        "elements, which stay where they were in their rows",
    )
    answers = ANSWERS["pad-shared"]

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        worst: dict[str, BankConflictFinding] = {}
        for f in kernel.findings:
            # (a conflict the data decide is not one padding removes: no proposal)
            if isinstance(f, BankConflictFinding) and f.function == kernel.function \
                    and f.conflict.data_spread is None:
                array = f.conflict.access.array
                if array not in worst or f.conflict.degree > worst[array].conflict.degree:
                    worst[array] = f
        return self.answer_each(kernel, list(worst.values()))

    def answer(self, kernel: KernelAtLevel, finding: Finding) -> Proposal:
        if not isinstance(finding, BankConflictFinding):
            raise Refused(f"{self.name} answers bank-conflict findings, not {finding.code}")
        conflict = finding.conflict
        args = {"array": conflict.access.array, "banks": str(conflict.banks)}
        return self._propose(kernel, args, finding, conflict.word_bytes)

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        finding = next((f for f in kernel.findings if isinstance(f, BankConflictFinding)
                        and f.conflict.access.array == args.get("array")), None)
        if finding is not None and "banks" not in args:
            args = {**args, "banks": str(finding.conflict.banks)}
        word = finding.conflict.word_bytes if finding is not None else 4
        return self._propose(kernel, args, finding, word)

    def _propose(self, kernel: KernelAtLevel, args: Mapping[str, str],
                 finding: Finding | None, word_bytes: int) -> Proposal:
        array = args.get("array")
        if not array:
            raise Refused("give the array: pad-shared:array=NAME")
        function = kernel.source_function
        decl = _declaration(function, array)
        if decl is None or decl.span is None or not kernel.in_file(decl.span):
            raise Refused(f"{array} is not declared in {function.name} in "
                          f"{kernel.path.name}")
        kind = decl.type
        if not isinstance(kind, ast.ArrayType) or kind.rank < 2 \
                or not isinstance(kind.element, ast.Prim):
            raise Refused(f"{array} is not an array of numbers with two or more dimensions")
        if decl.view is not None or any(isinstance(n, ast.ViewDecl) and n.source == array
                                        for n in ast.walk(function.body)):
            raise Refused(f"{array} has a view (`as`): its layout is read as written")
        if any(array in written(n) for n in ast.walk(function.body)
               if isinstance(n, ast.Call)):
            raise Refused(f"{array} is passed to a call, which reads it in its own layout")
        last = kind.dims[-1][-1]
        extent = constant_int(last, constant_env(kernel.source.program.main))
        if extent is None or last.span is None:
            raise Refused(f"the last dimension of {array} is not a constant")
        banks = integer(args, "banks", 32)
        element = ELEMENT_BYTES.get(kind.element.name, 4)
        pad = integer(args, "pad", padding(extent, element, word_bytes, banks))
        if pad < 1:
            raise Refused(f"pad={pad}: the padding is at least one element")
        text = span_text(kernel.text, last.span)
        tight = not isinstance(last, ast.Binary) or last.op in _TIGHT
        new = f"{text} + {pad}" if tight else f"({text}) + {pad}"
        return Proposal(self.name, (("array", array), ("pad", str(pad)),
                                    ("banks", str(banks))), decl.span.line,
                        f"rows of {array} {extent} + {pad} elements long (a row's "
                        f"stride then falls in another of the {banks} banks)",
                        (TextEdit.replacing(last.span, new),), finding)

    def still_there(self, proposal: Proposal, findings: Sequence[Finding]) -> Finding | None:
        array = dict(proposal.args)["array"]
        return next((f for f in findings if isinstance(f, BankConflictFinding)
                     and f.conflict.access.array == array), None)


def _declaration(function: ast.Function, array: str) -> ast.Decl | None:
    found = [n for n in ast.walk(function.body) if isinstance(n, ast.Decl) and n.name == array]
    return found[0] if len(found) == 1 else None


def padding(extent: int, element: int, word_bytes: int, banks: int) -> int:
    """The fewest extra elements per row after which a row's stride in words shares the
    least with `banks` (none, where a stride of whole words can)."""
    def shared(pad: int) -> int:
        row = (extent + pad) * element
        return math.gcd(row // word_bytes, banks) if row % word_bytes == 0 else banks
    return min(range(1, banks + 1), key=lambda pad: (shared(pad), pad))
