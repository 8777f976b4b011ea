"""A kernel file at a level, as a refinement reads it: the source text and its checked
program (where the edits go), the program at the level (translated when the kernel is
written above it) and the findings of the feedback there, the typed records the
refinements answer (docs/feedback.md, "Findings").

Translation keeps the source's spans (docs/translation.md), so a finding at a leaf names
the loop, access or array of the source file; a refinement edits that file and the next
version is translated and checked at the level again."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl import pipeline
from mcl.diagnostics import MclError, Span, error
from mcl.feedback.findings import Finding, TimeEstimate, first
from mcl.feedback.registry import analyse_findings, kernels_of
from mcl.mcpl import ast
from mcl.source_files import overlay_text, set_overlay

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram

@contextmanager
def source_text(path: Path, text: str | None) -> Iterator[None]:
    """Read `text` for `path` while inside (None: the file as it is), as an editor's
    unsaved buffer is read (mcl.source_files), so that the next version loads with the
    imports and the spans of the file it replaces; the buffer before is restored."""
    if text is None:
        yield
        return
    before = overlay_text(path)
    set_overlay(path, text)
    try:
        yield
    finally:
        set_overlay(path, before)


@dataclass(frozen=True)
class KernelAtLevel:
    """One function of a kernel file at `level`: `text` the source, `source` its
    checked program, `lowered` the program at `level`, `findings` the feedback there at
    the model's `values`; `reference` the numpy reference every next version is verified
    against (the one the user named, else reference.py beside the file; it may not
    exist), carried to each version made from this one."""

    path: Path
    text: str
    level: str
    function: str
    library: HwdLibrary
    include_dirs: tuple[str, ...]
    values: Mapping[str, Any]
    source: CheckedProgram
    lowered: CheckedProgram
    findings: tuple[Finding, ...]
    reference: Path

    @property
    def source_function(self) -> ast.Function:
        found = self.source.program.main.function(self.function)
        assert found is not None
        return found

    @property
    def lowered_function(self) -> ast.Function:
        found = self.lowered.program.main.function(self.function)
        assert found is not None
        return found

    @property
    def estimate(self) -> TimeEstimate | None:
        """The time model's finding for the function at the level (None: the level has
        no time model, or the sizes leave the time symbolic)."""
        return first(self.findings, TimeEstimate, self.function)

    @property
    def model_seconds(self) -> float | None:
        """The time model's estimate of the function at the level, in seconds."""
        estimate = self.estimate
        return estimate.seconds if estimate is not None else None

    def in_file(self, span: Span | None) -> bool:
        """Does `span` lie in this kernel's file (not in an imported module)?"""
        return span is not None and Path(span.file).resolve() == self.path.resolve()

    def constants(self) -> tuple[ast.Decl, ...]:
        return self.source.program.main.constants


def kernel_function(program: CheckedProgram, wanted: str | None, default: str | None
                    ) -> str:
    """The function to refine: `wanted`, else `default` (the reference's) where the file
    defines it, else the file's one kernel."""
    main = program.program.main
    if wanted is not None:
        if main.function(wanted) is None:
            raise MclError(error("apply-unknown-function", f"{main.file} defines no "
                                 f"function '{wanted}'", None, hint="functions: " + ", ".join(
                                     f.name for f in main.functions)))
        return wanted
    if default is not None and main.function(default) is not None:
        return default
    kernels = [f.name for f in kernels_of(main) if ast.has_foreach(f)]
    if len(kernels) != 1:
        raise MclError(error("apply-unknown-function", f"{main.file} has {len(kernels)} "
                             "kernels; name the one to refine with --function", None,
                             hint="kernels: " + (", ".join(kernels) or "none")))
    return kernels[0]


def load_kernel(path: Path, level: str | None, library: HwdLibrary,
                include_dirs: Sequence[str], values: Mapping[str, Any],
                function: str | None = None, default_function: str | None = None,
                text: str | None = None, reference: Path | None = None) -> KernelAtLevel:
    """Load, check and lower the kernel file (its text `text` where given) to `level`
    (default: the function's own), and analyse the function there (`reference`: the
    numpy reference to verify against, default reference.py beside the file). MclError
    where the source or its translation does not check."""
    from mcl.source_files import read_source
    from mcl.verify import reference_for

    with source_text(path, text):
        source = pipeline.checked_at(path, include_dirs, library)
        name = kernel_function(source, function, default_function)
        own = source.program.main.function(name)
        assert own is not None
        level = level or own.hwd
        _require_below(library, own, level)
        lowered = pipeline.lower(source, level, library, name)
        at_level = lowered.program.main.function(name)
        assert at_level is not None
        findings = analyse_findings(at_level, lowered, library.get(level), values)
        body = read_source(path, "mcpl-io")
    return KernelAtLevel(path, body, level, name, library, tuple(include_dirs),
                         dict(values), source, lowered, tuple(findings),
                         reference if reference is not None else reference_for(path))


def _require_below(library: HwdLibrary, function: ast.Function, level: str) -> None:
    from mcl.translate.levels import require_level

    require_level(library, level)
    if level != function.hwd and function.hwd not in library.ancestors(level):
        raise MclError(error(
            "apply-level", f"{function.name} is written for {function.hwd}, which is not "
            f"above {level}: a refinement rewrites a kernel at its level or below it",
            function.span, hint=f"choose {function.hwd} or a level below it"))
