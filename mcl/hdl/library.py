"""The library of hardware descriptions: the bundled `hwdescs/` plus user folders.

`load_library(extra_paths)` reads every `.hdl` file, resolves references across files,
builds and validates each description, and checks that every child's parallelism
hierarchy is equivalent to its parent's (hdl.md §3.4). Any error raises MclError with all
the diagnostics found; warnings are kept in `HwdLibrary.warnings`.

User descriptions come from folders (or single `.hdl` files) given with `--hwd-path DIR`
(repeatable) and from the environment variable MCL_HWD_PATH (os.pathsep-separated). A
user description with the name of a bundled one replaces it, with a warning.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.diagnostics import Diagnostic, MclError, Severity, did_you_mean, error, warning
from mcl.hdl.build import Builder
from mcl.hdl.equivalence import check_hierarchy
from mcl.hdl.hierarchy import Hierarchy, ancestors_first, description_graph, find_path
from mcl.hdl.model import HardwareDescription
from mcl.hdl.resolve import Resolver
from mcl.hdl.syntax import HdlFile, parse_hdl_file
from mcl.resources import hwdescs_dir

if TYPE_CHECKING:
    import networkx as nx

ENV_VAR = "MCL_HWD_PATH"


@dataclass
class HwdLibrary:
    """Resolved descriptions by name, and their hierarchy (edges parent -> child)."""

    descriptions: dict[str, HardwareDescription]
    hierarchy: Hierarchy
    warnings: list[Diagnostic] = field(default_factory=list)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The hierarchy as a networkx DiGraph, edges parent -> child (built on first use)."""
        return self.hierarchy.to_networkx()

    def get(self, name: str) -> HardwareDescription:
        try:
            return self.descriptions[name]
        except KeyError:
            raise MclError(error("hdl-unknown-description",
                                 f"unknown hardware description '{name}'", None,
                                 did_you_mean(name, self.names())
                                 or f"known: {', '.join(self.names())}")) from None

    def __getitem__(self, name: str) -> HardwareDescription:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self.descriptions

    def __iter__(self) -> Iterator[HardwareDescription]:
        return (self.descriptions[n] for n in self.names())

    def __len__(self) -> int:
        return len(self.descriptions)

    def names(self) -> list[str]:
        """All names, parents before children (depth first, siblings alphabetical)."""
        return ancestors_first(self.hierarchy)

    def path(self, frm: str, to: str) -> list[str]:
        """Names from `frm` down to `to`, both included: path('perfect', 'fermi') ==
        ['perfect', 'accelerator', 'gpu', 'nvidia', 'fermi']. MclError if `to` is not below."""
        return find_path(self.hierarchy, frm, to)

    def parent(self, name: str) -> str | None:
        return self.get(name).parent

    def children(self, name: str) -> list[str]:
        self.get(name)
        return self.hierarchy.successors(name)

    def is_leaf(self, name: str) -> bool:
        """Leaves are the descriptions code is generated from (fermi, hopper, ...)."""
        return not self.children(name)

    def leaves(self) -> list[str]:
        return [n for n in self.names() if self.is_leaf(n)]

    def ancestors(self, name: str) -> list[str]:
        """From the root down to `name`'s parent."""
        chain = []
        parent = self.parent(name)
        while parent is not None:
            chain.append(parent)
            parent = self.descriptions[parent].parent
        return list(reversed(chain))


def search_paths(extra_paths: Iterable[str | Path] = (), use_env: bool = True) -> list[Path]:
    """Folders/files to read, lowest precedence first: bundled, MCL_HWD_PATH, --hwd-path."""
    paths = [hwdescs_dir()]
    if use_env:
        paths += [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p.strip()]
    paths += [Path(p) for p in extra_paths]
    return paths


def load_library(extra_paths: Iterable[str | Path] = (), use_env: bool = True) -> HwdLibrary:
    """Load the bundled descriptions plus those in `extra_paths` (and MCL_HWD_PATH)."""
    paths = search_paths(extra_paths, use_env)
    # A stale entry of the environment variable should not stop every command: a warning.
    env = set(search_paths((), use_env)[1:])
    stale = [p for p in paths if p in env and not p.exists()]
    notes = [warning("hdl-path", f"'{p}' in ${ENV_VAR} does not exist", None) for p in stale]
    return load_paths([p for p in paths if p not in stale], notes)


@lru_cache(maxsize=4)
def _default_library(env_value: str) -> HwdLibrary:
    return load_library()


def default_library() -> HwdLibrary:
    """The bundled library plus MCL_HWD_PATH, loaded once per process (per value of it)."""
    return _default_library(os.environ.get(ENV_VAR, ""))


def load_paths(paths: Iterable[Path], notes: Iterable[Diagnostic] = ()) -> HwdLibrary:
    """Load every `.hdl` file of the given folders/files; later paths win on name clashes.
    `notes` are diagnostics to report along with the library's own."""
    found: dict[str, Path] = {}
    problems: list[Diagnostic] = list(notes)
    for path in paths:
        files = _hdl_files(path, problems)
        for file in files:
            name = file.stem
            if name in found and found[name].resolve() != file.resolve():
                problems.append(warning(
                    "hdl-shadowed", f"'{file}' replaces the description '{name}' of "
                    f"'{found[name]}'", None))
            found[name] = file
    sources: dict[str, HdlFile] = {}
    for name, file in sorted(found.items()):
        try:
            source = parse_hdl_file(file)
        except MclError as exc:
            problems += exc.diagnostics
            continue
        if source.name != name:
            problems.append(error(
                "hdl-file-name",
                f"the file '{file.name}' holds description '{source.name}'",
                source.name_span, f"rename the file to '{source.name}.hdl' or the description "
                f"to '{name}'"))
            continue
        sources[name] = source
    _raise_errors(problems)
    return build_library(sources, problems)


def build_library(sources: dict[str, HdlFile], problems: list[Diagnostic] | None = None
                  ) -> HwdLibrary:
    """Resolve, build and validate parsed descriptions (all of them reference each other)."""
    problems = list(problems or [])
    graph, graph_problems = description_graph(sources)
    problems += graph_problems
    resolver = Resolver(sources)
    descriptions: dict[str, HardwareDescription] = {}
    for name in ancestors_first(graph):
        builder = Builder(sources[name], resolver.top_blocks(name))
        hwd = builder.build()
        problems += builder.diagnostics
        if hwd is not None:
            descriptions[name] = hwd
    problems += resolver.diagnostics
    if not any(d.severity == Severity.ERROR for d in problems):
        for parent, child in graph.edges:
            problems += check_hierarchy(descriptions[parent], descriptions[child])
    _raise_errors(problems)
    return HwdLibrary(descriptions, graph, problems)


def _hdl_files(path: Path, problems: list[Diagnostic]) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.hdl"))
    if path.is_file() and path.suffix == ".hdl":
        return [path]
    problems.append(error("hdl-path", f"'{path}' is neither a folder nor an .hdl file", None,
                          f"check --hwd-path and ${ENV_VAR}"))
    return []


def _raise_errors(problems: list[Diagnostic]) -> None:
    errors = [d for d in problems if d.severity == Severity.ERROR]
    if errors:
        # Sorted by place so that a user reads them top to bottom, file by file.
        errors.sort(key=_place)
        raise MclError(errors + [d for d in problems if d.severity != Severity.ERROR])


def _place(d: Diagnostic) -> tuple:
    s = d.span
    return (s is None, (s.file, s.line, s.column) if s else ("", 0, 0))


# ------------------------------------------------------------------ for sub-commands


def add_hwd_path_argument(parser: argparse.ArgumentParser) -> None:
    """The `--hwd-path DIR` option (repeatable) every command that reads descriptions has."""
    parser.add_argument(
        "--hwd-path", metavar="DIR", action="append", default=[],
        help=f"also read hardware descriptions from DIR (repeatable; also ${ENV_VAR})",
    )


def library_from_args(args: argparse.Namespace) -> HwdLibrary:
    extra = getattr(args, "hwd_path", None) or []
    return load_library(extra) if extra else default_library()
