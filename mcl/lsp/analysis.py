"""Diagnostics of an editor buffer: what `mcl check` says of a kernel and what `mcl hwd
show` says of a description, through the same passes (`mcl.pipeline.check_source`, as
`mcl check`; mcl.hdl.library). Unsaved buffers reach the passes through
`mcl.source_files`'s overlays.

The check here is the quick one (parse, imports, check at the functions' own levels): it
runs on every edit. Translating to `mcl.level` and the feedback analyses run in the
feedback worker (mcl.lsp.worker), off the typing path.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Diagnostic, MclError, Severity
from mcl.lsp.config import Effective
from mcl.mcpl.sidetables import SideTables

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

HDL_SUFFIX = ".hdl"
# Tests only: seconds every check sleeps first, to stand for a slow one on a busy machine
# (tests/lsp/test_typing.py), as mcl.lsp.worker's DELAY_ENV does for the feedback.
CHECK_DELAY_ENV = "MCL_LSP_CHECK_DELAY"


def is_hdl(path: Path) -> bool:
    return path.suffix == HDL_SUFFIX


@dataclass
class CheckResult:
    """One check of one document: its diagnostics and, when it parsed, its program with
    the checker's side tables (what each name stands for, the type of each expression:
    hover, definitions, references and highlighting read them)."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    program: Program | None = None
    tables: SideTables = field(default_factory=SideTables)
    library: Any = None  # mcl.hdl.library.HwdLibrary
    hdl: Any = None  # mcl.hdl.syntax.HdlFile of an .hdl document
    # False when the program did not load (a missing module, an import cycle, a file that
    # does not parse): a change of any other file may be what it lacks.
    loaded: bool = True
    # Of a text that does not parse, kept from the last good check (mcl.lsp.broken_check):
    # its module's imports at their lines now, which the diagnostics about the files they
    # bring in stand on.
    imports: tuple[Any, ...] = ()

    @property
    def errors(self) -> int:
        return sum(d.severity == Severity.ERROR for d in self.diagnostics)


class Libraries:
    """Description libraries by search path, loaded once and again only after an `.hdl`
    buffer changed (`invalidate`), since a kernel's check depends on its descriptions."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, ...], Any] = {}
        self._generation = 0

    def invalidate(self) -> None:
        self._generation += 1
        self._cache.clear()

    def get(self, hwd_path: tuple[str, ...]) -> Any:
        """The library for `hwd_path` (bundled + those folders); MclError when it cannot
        load at all (a folder that is not there)."""
        library = self._cache.get(hwd_path)
        if library is None:
            from mcl.hdl.library import load_library

            generation = self._generation
            library = load_library(list(hwd_path), partial=True)
            if generation == self._generation:  # not loaded from a buffer replaced since
                self._cache[hwd_path] = library
        return library


def check_document(path: Path, settings: Effective, libraries: Libraries) -> CheckResult:
    """The diagnostics of a kernel or a description (of a kernel that does not parse,
    with the last good check's: mcl.lsp.broken_check)."""
    delay = float(os.environ.get(CHECK_DELAY_ENV, "0") or 0)
    if delay > 0:
        time.sleep(delay)
    result = CheckResult(list(settings.problems))
    if is_hdl(path):
        result.diagnostics += hdl_diagnostics(path, settings, result)
        return result
    try:
        result.library = libraries.get(settings.hwd_path)
    except MclError as exc:
        result.diagnostics += exc.diagnostics
        return result
    from mcl.pipeline import check_source

    checked = check_source(path, settings.include, result.library)
    result.program, result.tables = checked.program, checked.tables
    result.diagnostics += checked.diagnostics
    if result.program is None:
        result.loaded = False
        if any(d.code == "mcpl-syntax" and d.span is not None and d.span.file == str(path)
               for d in checked.diagnostics):
            return result  # it does not parse: parsing it alone would only fail again
        result.program = _parsed_only(path, result.library)
        if result.program is not None:
            # Its names as far as they resolve without the missing imports (the errors
            # about them are the loader's, already in the diagnostics).
            from mcl.pipeline import check

            result.tables = check(result.program, result.library).tables
    return result


def _parsed_only(path: Path, library: Any) -> Program | None:
    """The module alone when the program does not load (a missing import): navigation
    and symbols still work on a file whose imports are broken."""
    from mcl.mcpl.loader import Program, module_name
    from mcl.mcpl.parse import parse_file

    try:
        module = parse_file(path, library.names())
    except MclError:
        return None
    name = module_name(module, path)
    return Program(main=module, modules={name: module}, files={name: path})


def hdl_diagnostics(path: Path, settings: Effective, result: CheckResult) -> list[Diagnostic]:
    """What loading the description in `path`, with its folder on the search path, says
    about that file: its own errors (`mcl hwd show NAME`), and warnings about it."""
    from mcl.hdl.library import load_library
    from mcl.hdl.syntax import parse_hdl_file
    from mcl.resources import hwdescs_dir

    try:
        result.hdl = parse_hdl_file(path)
    except MclError as exc:
        return exc.diagnostics
    folder = path.resolve().parent
    extra = list(settings.hwd_path)
    if folder != hwdescs_dir().resolve() and str(folder) not in extra:
        extra.append(str(folder))
    try:
        library = load_library(extra, partial=True)
    except MclError as exc:
        return [d for d in exc.diagnostics if _about(d, path)]
    result.library = library
    name = path.stem
    found = list(library.failed.get(name, []))
    found += [d for d in library.warnings if d.code != "hdl-not-loaded" and _about(d, path)]
    return found


def _about(d: Diagnostic, path: Path) -> bool:
    """Is `d` about `path` (or about no file at all)?"""
    if d.span is None:
        return True
    try:
        return Path(d.span.file).resolve() == path.resolve()
    except (OSError, RuntimeError, ValueError):
        return False
