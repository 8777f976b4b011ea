"""The library of hardware descriptions: the bundled `hwdescs/` plus user folders.

`load_library(extra_paths)` reads every `.hdl` file, resolves references across files,
builds and validates each description, and checks that every child's parallelism
hierarchy is equivalent to its parent's (hdl.md §3.4). Any error raises MclError with all
the diagnostics found; warnings are kept in `HwdLibrary.warnings`.

User descriptions come from folders (or single `.hdl` files) given with `--hwd-path DIR`
(repeatable) and from the environment variable MCL_HWD_PATH (os.pathsep-separated); both
go through `load_library`, the one code path. The rule for combining them with the
bundled library (docs/hdl.md, "Your own descriptions"):
- a folder with its own root (`perfect.hdl`, as the original MCL distribution's folder
  has) replaces the bundled library; so does `--no-bundled`;
- otherwise its descriptions join the bundled ones, and one with the name of a bundled
  description (or of an earlier folder's) replaces it, with a warning naming both files.

A description with errors does not hide the others: with `partial=True` (what the
commands use) the library holds every description that loads, and `failed` the errors of
each that does not (a child of a failed description does not load either); asking for a
failed one with `get` raises its errors.

A library that loaded is kept on disk (mcl/parse_cache.py, kind `library`), keyed by the
text of every file read, the paths, the notes and the sources of mcl/hdl: a later process
that reads the same files unpickles it instead of parsing, resolving, building and
checking them again, and does not import the modules that do that. A library with
errors (MclError) is never kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.diagnostics import Diagnostic, MclError, Severity, did_you_mean, error, warning
from mcl.hdl.hierarchy import ROOT, Hierarchy, description_graph
from mcl.hdl.model import HardwareDescription
from mcl.resources import hwdescs_dir
from mcl.source_files import read_source

if TYPE_CHECKING:
    from mcl.hdl.syntax import HdlFile
    from mcl.parse_cache import ParseCache

# The parser, resolver, builder and checker of descriptions are imported where a library
# is built: one read from the disk cache needs none of them.

ENV_VAR = "MCL_HWD_PATH"


@dataclass
class HwdLibrary:
    """Resolved descriptions by name, and their hierarchy (edges parent -> child)."""

    descriptions: dict[str, HardwareDescription]
    hierarchy: Hierarchy
    warnings: list[Diagnostic] = field(default_factory=list)
    # Descriptions that did not load (partial loading): name -> their diagnostics.
    failed: dict[str, list[Diagnostic]] = field(default_factory=dict)
    # The folders and files read, lowest precedence first (bundled first when used).
    sources: list[Path] = field(default_factory=list)

    def get(self, name: str) -> HardwareDescription:
        if name in self.failed:
            raise MclError(self.failed[name])
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
        return self.hierarchy.ancestors_first()

    def path(self, frm: str, to: str) -> list[str]:
        """Names from `frm` down to `to`, both included: path('perfect', 'fermi') ==
        ['perfect', 'accelerator', 'gpu', 'nvidia', 'fermi']. MclError if `to` is not below
        (or, for a description that did not load, its errors)."""
        for name in (frm, to):
            if name in self.failed:
                raise MclError(self.failed[name])
        return self.hierarchy.path(frm, to)

    def parent(self, name: str) -> str | None:
        return self.get(name).parent

    def children(self, name: str) -> list[str]:
        self.get(name)
        return self.hierarchy.children(name)

    def is_leaf(self, name: str) -> bool:
        """Leaves are the descriptions code is generated from (fermi, hopper, ...)."""
        return not self.children(name)

    def leaves(self) -> list[str]:
        return [n for n in self.names() if self.is_leaf(n)]

    def ancestors(self, name: str) -> list[str]:
        """From the root down to `name`'s parent."""
        self.get(name)
        return self.hierarchy.ancestors(name)


def own_root(path: Path) -> bool:
    """Does this folder (or file) bring its own root description, `perfect.hdl`?"""
    root = f"{ROOT}.hdl"
    return (path / root).is_file() if path.is_dir() else path.name == root


def search_paths(extra_paths: Iterable[str | Path] = (), use_env: bool = True,
                 bundled: bool = True) -> list[Path]:
    """Folders/files to read, lowest precedence first: bundled, MCL_HWD_PATH, --hwd-path.
    The bundled library is left out with `bundled=False` (--no-bundled) and when a user
    folder has its own root."""
    paths = []
    if use_env:
        paths += [Path(p) for p in os.environ.get(ENV_VAR, "").split(os.pathsep) if p.strip()]
    paths += [Path(p) for p in extra_paths]
    if bundled and not any(own_root(p) for p in paths):
        paths.insert(0, hwdescs_dir())
    return paths


def load_library(extra_paths: Iterable[str | Path] = (), use_env: bool = True, *,
                 bundled: bool = True, partial: bool = False) -> HwdLibrary:
    """Load the bundled descriptions plus those in `extra_paths` (and MCL_HWD_PATH), by the
    rule of the module docstring. `partial`: see `load_paths`."""
    paths = search_paths(extra_paths, use_env, bundled)
    # A stale entry of the environment variable should not stop every command: a warning.
    env = set(search_paths((), use_env, bundled=False))
    stale = [p for p in paths if p in env and not p.exists()]
    notes = [warning("hdl-path", f"'{p}' in ${ENV_VAR} does not exist", None) for p in stale]
    return load_paths([p for p in paths if p not in stale], notes, partial=partial)


@lru_cache(maxsize=4)
def _default_library(env_value: str, bundled: bool) -> HwdLibrary:
    return load_library(bundled=bundled, partial=True)


def default_library(bundled: bool = True) -> HwdLibrary:
    """The bundled library plus MCL_HWD_PATH, loaded once per process (per value of it),
    partially (see `load_paths`)."""
    return _default_library(os.environ.get(ENV_VAR, ""), bundled)


def load_paths(paths: Iterable[Path], notes: Iterable[Diagnostic] = (), *,
               partial: bool = False) -> HwdLibrary:
    """Load every `.hdl` file of the given folders/files; later paths win on name clashes.
    `notes` are diagnostics to report along with the library's own. Any error raises
    MclError, unless `partial`: then only errors that belong to no description do (a path
    that is not there), and the library keeps what loads (`HwdLibrary.failed`)."""
    paths = list(paths)
    found, problems = _found_files(paths, notes)
    def build() -> HwdLibrary:
        library = _load_found(found, problems, partial)
        library.sources = paths
        return library

    key = _cache_key(paths, found, problems, partial)
    return build() if key is None else _library_cache().through(key, repr(paths), build)


@lru_cache(maxsize=1)
def _library_cache() -> ParseCache[HwdLibrary]:
    from mcl.parse_cache import ParseCache

    here = Path(__file__).parent
    return ParseCache(
        "library", HwdLibrary,
        sources=(*sorted(f"hdl/{p.name}" for p in here.iterdir() if p.suffix in (".py", ".tx")),
                 "diagnostics.py", "grammar_converter.py", "source_files.py"),
        modules=frozenset({"mcl.hdl.library", "mcl.hdl.hierarchy", "mcl.hdl.model",
                           "mcl.diagnostics", "pathlib"}))


def _cache_key(paths: list[Path], found: dict[str, Path], problems: list[Diagnostic],
               partial: bool) -> str | None:
    """What a library loaded from `found` depends on besides mcl's own sources, as one
    text; None when a file cannot be read (the load reports that, and is not kept)."""
    parts = [repr(paths), repr(problems), repr(partial)]
    for name, file in sorted(found.items()):
        try:
            parts += [name, str(file), str(file.resolve()), read_source(file, "hdl-io")]
        except (MclError, OSError):
            return None
    return "\0".join(parts)


def _found_files(paths: list[Path], notes: Iterable[Diagnostic]
                 ) -> tuple[dict[str, Path], list[Diagnostic]]:
    """The `.hdl` file of each description name (later paths win) and the problems met."""
    found: dict[str, Path] = {}
    problems: list[Diagnostic] = list(notes)
    for path in paths:
        files = _hdl_files(path, problems)
        for file in files:
            name = file.stem
            if name in found and found[name].resolve() != file.resolve():
                problems.append(warning(
                    "hdl-shadowed", f"'{file}' replaces the description '{name}' of "
                    f"'{found[name]}'", None,
                    "rename one of them; a folder with its own perfect.hdl replaces the "
                    "bundled library instead (docs/hdl.md)"))
            found[name] = file
    return found, problems


def _load_found(found: dict[str, Path], problems: list[Diagnostic], partial: bool
                ) -> HwdLibrary:
    from mcl.hdl.syntax import parse_hdl_file

    sources: dict[str, HdlFile] = {}
    failed: dict[str, list[Diagnostic]] = {}
    for name, file in sorted(found.items()):
        try:
            source = parse_hdl_file(file)
        except MclError as exc:
            failed[name] = exc.diagnostics
            continue
        if source.name != name:
            failed[name] = [error(
                "hdl-file-name",
                f"the file '{file.name}' holds description '{source.name}'",
                source.name_span, f"rename the file to '{source.name}.hdl' or the description "
                f"to '{name}'")]
            continue
        sources[name] = source
    if not partial:
        _raise_errors(problems + [d for diags in failed.values() for d in diags])
        library = build_library(sources, problems)
    else:
        _raise_errors(problems)
        library = _build_partial(sources, problems, failed)
    return library


def _build_partial(sources: dict[str, HdlFile], problems: list[Diagnostic],
                   failed: dict[str, list[Diagnostic]]) -> HwdLibrary:
    """Build what can be built: drop every description with errors (and those below it)
    and build the rest again, until the rest builds. Errors that belong to no description
    are raised."""
    sources = dict(sources)
    while True:
        _drop_orphans(sources, failed)
        try:
            library = build_library(sources, problems)
        except MclError as exc:
            blamed = _blame(exc.diagnostics, sources)
            if not blamed:
                raise
            for name, diags in blamed.items():
                failed[name] = diags
                del sources[name]
            continue
        library.failed = failed
        library.warnings += [
            warning("hdl-not-loaded", f"the description '{name}' did not load", None,
                    "`mcl hwd list` shows why")
            for name in sorted(failed)]
        return library


def _drop_orphans(sources: dict[str, HdlFile], failed: dict[str, list[Diagnostic]]) -> None:
    """A description whose parent did not load does not load either."""
    changed = True
    while changed:
        changed = False
        for name, source in list(sources.items()):
            if source.parent in failed:
                failed[name] = [error(
                    "hdl-parent-not-loaded",
                    f"'{name}' specializes '{source.parent}', which did not load",
                    source.parent_span, f"fix '{source.parent}' first")]
                del sources[name]
                changed = True


def _blame(diagnostics: list[Diagnostic], sources: dict[str, HdlFile]
           ) -> dict[str, list[Diagnostic]]:
    """The diagnostics by the description whose file they are in, for descriptions with
    errors."""
    by_file = {source.file: name for name, source in sources.items()}
    blamed: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        name = by_file.get(d.span.file) if d.span else None
        if name is not None:
            blamed.setdefault(name, []).append(d)
    return {name: diags for name, diags in blamed.items()
            if any(d.severity == Severity.ERROR for d in diags)}


def build_library(sources: dict[str, HdlFile], problems: list[Diagnostic] | None = None
                  ) -> HwdLibrary:
    """Resolve, build and validate parsed descriptions (all of them reference each other)."""
    from mcl.hdl.build import Builder
    from mcl.hdl.equivalence import check_hierarchy
    from mcl.hdl.resolve import Resolver

    problems = list(problems or [])
    graph, graph_problems = description_graph(sources)
    problems += graph_problems
    resolver = Resolver(sources)
    descriptions: dict[str, HardwareDescription] = {}
    for name in graph.ancestors_first():
        builder = Builder(sources[name], resolver.top_blocks(name))
        hwd = builder.build()
        problems += builder.diagnostics
        if hwd is not None:
            above = descriptions.get(hwd.parent or "")
            if above is not None:  # every description knows those above it, see lineage
                hwd.lineage = {**above.lineage, above.name: above}
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


def library_with(extra_paths: Iterable[str | Path] = (), bundled: bool = True) -> HwdLibrary:
    """The library of a command (`--hwd-path`, `--no-bundled`: mcl.commands.options):
    extra folders come after $MCL_HWD_PATH's, through the same loader; loaded partially
    (a broken description does not hide the others)."""
    extra = list(extra_paths)
    if not extra:
        return default_library(bundled)
    return load_library(extra, bundled=bundled, partial=True)
