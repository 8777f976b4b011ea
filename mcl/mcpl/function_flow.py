"""The flow checks of one function (barriers, divergence, uninitialised variables, first
iterations, constant extents, unset elements), kept on the function's node.

    flow_diagnostics(function, known, hwd) -> list[Diagnostic]

Each of these checks is a pure function of the function's tree, the integer values known
for its names (`known`: the module's constants and the function's host constants) and its
hardware description. The tree's nodes are frozen, and a definition the language server's
edit did not touch keeps its nodes (mcl.mcpl.parse.reuse_definitions), so in a module of
many functions an edit inside one of them checks only that one again; the others' results
are found on their nodes under the values and the description they were found with.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcl.mcpl import ast
from mcl.mcpl.barriers import barrier_warnings
from mcl.mcpl.divergence import divergence_diagnostics
from mcl.mcpl.extents import constant_extent_errors
from mcl.mcpl.first_iteration import first_iteration_divisions
from mcl.mcpl.uninitialised import uninitialised_diagnostics
from mcl.mcpl.unset_elements import unset_element_errors

if TYPE_CHECKING:
    from mcl.diagnostics import Diagnostic
    from mcl.hdl.model import HardwareDescription

__all__ = ["flow_diagnostics"]

# Results kept per function node: one per (values, description) it was checked with. A
# node lives as long as its tree; an edit of a constant checks the unchanged functions
# again with the new values, so a few entries cover editing a constant back and forth.
PER_NODE = 4

_Key = tuple[tuple[tuple[str, int], ...], "HardwareDescription | None"]


def _key(known: dict[str, int], hwd: HardwareDescription | None) -> _Key:
    """All a function's flow checks read besides its tree. The description hashes by
    identity: the server's libraries keep theirs until a file of theirs changes."""
    return tuple(sorted(known.items())), hwd


def flow_diagnostics(function: ast.Function, known: dict[str, int],
                     hwd: HardwareDescription | None) -> list[Diagnostic]:
    """The flow checks' diagnostics for `function`, in the order the checker lists them."""
    kept: dict[_Key, list[Diagnostic]] = ast.kept_on(function, "_flow", dict)
    key = _key(known, hwd)
    found = kept.get(key)
    if found is None:
        diags = barrier_warnings(function, known) + divergence_diagnostics(function, hwd)
        diags += uninitialised_diagnostics(function) + first_iteration_divisions(function)
        diags += constant_extent_errors(function, known)
        diags += unset_element_errors(function, known)
        if len(kept) >= PER_NODE:
            del kept[next(iter(kept))]
        found = kept[key] = diags
    return list(found)
