"""The hierarchy of hardware descriptions (the paper's Fig. 4): a tree with an edge
parent -> child for every `specializes`, rooted at `perfect` (hdl.md §3.1).

The tree is a parent map (`Hierarchy`) with the few algorithms the compiler needs, all
on that one structure: children, ancestors, the path down from one description to another
(Appendix A.1 FINDPATH), tree order, and the cycles of an invalid `specializes` chain.
A general graph library would buy nothing on a tree of ten nodes and would cost every
`mcl` start-up its import time (about 100 ms for networkx), so there is none.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcl.diagnostics import Diagnostic, MclError, did_you_mean, error

if TYPE_CHECKING:
    from mcl.hdl.syntax import HdlFile

ROOT = "perfect"


@dataclass
class Hierarchy:
    """Descriptions and their parent links (only links to known parents are kept)."""

    nodes: list[str] = field(default_factory=list)
    parents: dict[str, str] = field(default_factory=dict)

    def __contains__(self, name: object) -> bool:
        return name in self.nodes

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    @property
    def edges(self) -> list[tuple[str, str]]:
        """(parent, child) for every `specializes`."""
        return [(parent, child) for child, parent in self.parents.items()]

    def children(self, name: str) -> list[str]:
        return sorted(child for child, parent in self.parents.items() if parent == name)

    def ancestors(self, name: str) -> list[str]:
        """From the root down to `name`'s parent (cut short inside a cycle)."""
        chain: list[str] = []
        parent = self.parents.get(name)
        while parent is not None and parent not in chain and parent != name:
            chain.append(parent)
            parent = self.parents.get(parent)
        return list(reversed(chain))

    def ancestors_first(self) -> list[str]:
        """Descriptions with every parent before its children (tree order, siblings
        sorted); members of cycles last."""
        order: list[str] = []
        roots = sorted(n for n in self.nodes if n not in self.parents)
        stack = list(reversed(roots))
        while stack:
            name = stack.pop()
            order.append(name)
            stack.extend(reversed(self.children(name)))
        return order + sorted(set(self.nodes) - set(order))

    def path(self, frm: str, to: str) -> list[str]:
        """The descriptions from `frm` down to `to`, both included (Appendix A.1
        FINDPATH). Raises MclError when either is unknown or `to` is not below `frm`."""
        for name in (frm, to):
            if name not in self:
                raise MclError(error("hdl-unknown-description",
                                     f"unknown hardware description '{name}'", None,
                                     did_you_mean(name, self.nodes)))
        # In a tree the only path down from `frm` to `to` is `to`'s chain of parents.
        chain = [*self.ancestors(to), to]
        if frm not in chain:
            raise MclError(error(
                "hdl-no-path", f"'{to}' is not below '{frm}' in the hierarchy", None,
                "translation only moves down the hierarchy; see `mcl hwd list`",
            ))
        return chain[chain.index(frm):]

    def cycles(self) -> list[list[str]]:
        """Each cycle of parent links once, in parent order (a tree has none)."""
        found: list[list[str]] = []
        seen: set[str] = set()
        for start in self.nodes:
            chain: list[str] = []
            name: str | None = start
            while name is not None and name not in seen and name not in chain:
                chain.append(name)
                name = self.parents.get(name)
            if name is not None and name in chain:
                found.append(list(reversed(chain[chain.index(name):])))
            seen.update(chain)
        return found


def description_graph(files: dict[str, HdlFile]) -> tuple[Hierarchy, list[Diagnostic]]:
    """The hierarchy of the descriptions in `files`, and the problems with it: a parent that
    does not exist, a cycle of `specializes`, a description other than perfect without a
    parent."""
    graph = Hierarchy(nodes=list(files))
    problems: list[Diagnostic] = []
    for name, source in files.items():
        if source.parent is None:
            if name != ROOT:
                problems.append(error(
                    "hdl-missing-parent", f"'{name}' does not say which description it specializes",
                    source.name_span,
                    f"add `specializes PARENT;` — only '{ROOT}' is the root of the hierarchy",
                ))
            continue
        if source.parent not in files:
            problems.append(error(
                "hdl-unknown-parent",
                f"'{name}' specializes '{source.parent}', which is not a known description",
                source.parent_span,
                did_you_mean(source.parent, list(files))
                or "add its folder with --hwd-path or MCL_HWD_PATH",
            ))
            continue
        if name == ROOT:
            problems.append(error("hdl-root-parent", f"'{ROOT}' is the root and has no parent",
                                  source.parent_span))
            continue
        graph.parents[name] = source.parent
    for cycle in graph.cycles():
        first = min(cycle)
        shown = " -> ".join([*cycle[cycle.index(first):], *cycle[: cycle.index(first)], first])
        problems.append(error("hdl-cycle", f"cycle in `specializes`: {shown}",
                              files[first].parent_span, "the descriptions must form a tree"))
    return graph, problems
