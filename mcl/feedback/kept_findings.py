"""The findings of each kernel kept from one feedback run to the next, for a caller that
analyses the same program again and again as it is edited (the language server's
feedback worker).

    kept = KeptFindings()
    analyse_program_findings(checked, library, values, kept=kept)   # fills it
    analyse_program_findings(edited, library, values, kept=kept)    # reuses it

The analyses of a function (mcl.feedback.registry.analyse_findings) read its tree, the
functions it calls, the program's top-level constants and types, the checker's side
tables of those (a pure function of them), the hardware description, the user's values
and the clock. The parse keeps the definitions an edit did not touch as the very same
objects (mcl.mcpl.parse.reuse_definitions), so a function whose key below is made of
the same objects and values as the last run's has the same findings: an edit inside one
kernel of a file of many analyses that one again, not all of them (the paper's section
6: the feedback is per kernel). The key errs on the safe side: any change of a constant,
a type or an import analyses every kernel again, and so does a run that was translated
to a level (translation makes new trees).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.function_inputs import function_inputs, several_functions

if TYPE_CHECKING:
    from mcl.feedback.findings import Finding
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram

# Kernels kept at most (the least recently analysed go first): a file of 250 kernels
# still finds all of its own; each entry is a few findings and the key's references.
ENTRIES = 512
# A finding that says an analysis ran out of its CPU budget: the next run may finish.
_OUT_OF_TIME = "feedback-budget"


class KeptFindings:
    """The findings of the kernels analysed last, by file and name, with their keys."""

    def __init__(self, entries: int = ENTRIES) -> None:
        self.entries = entries
        self._kept: OrderedDict[tuple[str, str], tuple[tuple[Any, ...], list[Finding]]] = \
            OrderedDict()
        self.analysed = 0  # kernels analysed (not found kept) so far: for tests

    def findings(self, function: ast.Function, checked: CheckedProgram,
                 library: HwdLibrary, values: Mapping[str, Any], clock_hz: float | None,
                 analyse: Callable[[], list[Finding]]) -> list[Finding]:
        """The findings of `function`: those kept where its key is unchanged, else
        `analyse()`'s (kept for the next run unless an analysis ran out of time). Only
        in a module of several functions (mcl.mcpl.function_inputs.several_functions)."""
        if not several_functions(checked.program.main):
            self.analysed += 1
            return analyse()
        key = _key(function, checked, library, values, clock_hz)
        where = (str(function.span.file) if function.span else "", function.name)
        found = self._kept.get(where)
        if found is not None and found[0] == key:
            self._kept.move_to_end(where)
            return list(found[1])
        self.analysed += 1
        made = analyse()
        if any(f.message.code == _OUT_OF_TIME for f in made):
            self._kept.pop(where, None)
            return made
        self._kept[where] = (key, list(made))
        self._kept.move_to_end(where)
        while len(self._kept) > self.entries:
            self._kept.popitem(last=False)
        return made

    def clear(self) -> None:
        self._kept.clear()


def _key(function: ast.Function, checked: CheckedProgram, library: HwdLibrary,
         values: Mapping[str, Any], clock_hz: float | None) -> tuple[Any, ...]:
    """All the analyses of `function` read: trees and descriptions by identity (an
    unchanged definition is the same object), the rest by value."""
    hwd = library.get(function.hwd) if function.hwd in library.names() else None
    return (Ref(library), Ref(hwd), checked.level, tuple(sorted(values.items())), clock_hz,
            function_inputs(checked.program, function))
