"""The hierarchy of hardware descriptions (the paper's Fig. 4): a networkx DiGraph with an
edge parent -> child for every `specializes`, rooted at `perfect` (hdl.md §3.1)."""

from __future__ import annotations

import networkx as nx

from mcl.diagnostics import Diagnostic, MclError, did_you_mean, error
from mcl.hdl.syntax import HdlFile

ROOT = "perfect"


def description_graph(files: dict[str, HdlFile]) -> tuple[nx.DiGraph, list[Diagnostic]]:
    """The graph of the descriptions in `files`, and the problems with it: a parent that
    does not exist, a cycle of `specializes`, a description other than perfect without a
    parent."""
    graph = nx.DiGraph()
    problems: list[Diagnostic] = []
    for name, source in files.items():
        graph.add_node(name, file=source.file)
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
        graph.add_edge(source.parent, name)
    for cycle in nx.simple_cycles(graph):
        first = min(cycle)
        shown = " -> ".join([*cycle[cycle.index(first):], *cycle[: cycle.index(first)], first])
        problems.append(error("hdl-cycle", f"cycle in `specializes`: {shown}",
                              files[first].parent_span, "the descriptions must form a tree"))
    return graph, problems


def ancestors_first(graph: nx.DiGraph) -> list[str]:
    """Descriptions with every parent before its children (tree order, siblings sorted)."""
    order: list[str] = []
    roots = sorted(n for n in graph if graph.in_degree(n) == 0)
    stack = list(reversed(roots))
    while stack:
        name = stack.pop()
        order.append(name)
        stack.extend(sorted(graph.successors(name), reverse=True))
    return order + sorted(set(graph) - set(order))  # members of cycles last


def find_path(graph: nx.DiGraph, frm: str, to: str) -> list[str]:
    """The descriptions from `frm` down to `to`, both included (Appendix A.1 FINDPATH).
    Raises MclError when either is unknown or `to` is not below `frm`."""
    for name in (frm, to):
        if name not in graph:
            raise MclError(error("hdl-unknown-description",
                                 f"unknown hardware description '{name}'", None,
                                 did_you_mean(name, list(graph))))
    try:
        return nx.shortest_path(graph, frm, to)
    except nx.NetworkXNoPath:
        raise MclError(error(
            "hdl-no-path", f"'{to}' is not below '{frm}' in the hierarchy", None,
            "translation only moves down the hierarchy; see `mcl hwd list`",
        )) from None
