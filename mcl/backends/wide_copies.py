"""The for-loops that code generation turns into one wide access per unit, for the
feedback's coalescing (the hook mcl.feedback.compiler_vectors, which the command line
installs): `for (c = 0; c < VEC; c++) call[g * VEC + c] = rc[e * VEC + c];` is one
128-bit store per thread where the leaf's mapping asks for vectors of 4 floats and the
copy's alignment is proven (mcl.codegen.vectorize.vector_copy, the one place of that
rule). The kernel's code is generated for the leaf's mapping to the default backend, as
`mcl codegen` and `mcl run` generate it; no compiler runs.

None (the feedback cannot tell) where the level is not a leaf of the default library
(no code is generated for it), the leaf has no mapping to the default backend, or the
program does not generate. A mapping that asks for no vectors (no `vector_width`, as
fermi's) makes no wide copy: that is read from its file by a pattern, as the CUDA
register counter reads the architecture (mcl.backends.cuda.registers.stated_arch), so
that a check at such a leaf loads neither the code generators nor numpy. Elsewhere (hopper)
the answer is kept on disk by the inputs of code generation (mcl.backends.by_program), so
that a check of a program seen before does not load them either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.backends.bundled_leaf import bundled_leaf
from mcl.backends.by_program import program_key, read_kept, write_kept
from mcl.diagnostics import MclError, Span
from mcl.feedback.facts.compiled import Store

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import KernelFacts

_WIDTH = re.compile(r"^vector_width\s*=\s*(\d+)", re.MULTILINE)
# The folder of the answers kept by the inputs of code generation, and their form.
KIND, FORM = "wide-copies", 1
# The answer for the last program asked about per leaf and function, kept with that
# program and given only for it: a search analyses each candidate at several sizes.
_memory: Store[tuple[str, str], tuple[object, Mapping[Span, int] | None]] = Store(16)


def wide_copies(facts: KernelFacts) -> Mapping[Span, int] | None:
    """The span of each for-loop of the function of `facts` generated as one wide
    access per unit -> the bytes of that access; None where no code is generated."""
    hwd = facts.hwd
    library = bundled_leaf(facts)
    if library is None:
        return None
    width = stated_vector_width(hwd)
    if width is None:
        return None
    if width < 2:
        return {}
    key = (hwd.name, facts.function.name)
    kept = _memory.get(key)
    if kept is not None and kept[0] is facts.checked:
        return kept[1]
    disk_key = program_key(facts, "", KIND, FORM)
    on_disk = read_kept(disk_key, KIND)
    if on_disk is not None:
        found: Mapping[Span, int] | None = {
            Span(*_span_of(text)): size for text, size in on_disk.items()}
    else:
        from mcl.backends import generate_module

        try:
            found = generate_module(
                facts.checked, hwd.name, library, only={facts.function.name}).wide_copies
        except (MclError, ValueError):
            found = None
        if found is not None:
            write_kept(disk_key, {_text_of(span): size for span, size in found.items()}, KIND)
    _memory.put(key, (facts.checked, found))
    return found


def _text_of(span: Span) -> str:
    """A span as the disk cache keeps it (a name of a JSON object)."""
    return "\0".join(map(str, (span.file, span.line, span.column, span.end_line,
                                span.end_column)))


def _span_of(text: str) -> tuple[str, int, int, int, int]:
    file, line, column, end_line, end_column = text.rsplit("\0", 4)
    return file, int(line), int(column), int(end_line), int(end_column)


def stated_vector_width(hwd: Any) -> int | None:
    """The `vector_width` of the leaf's mapping to the default backend (0 where it states
    none; None where there is no such file), found in its file by a pattern (see the
    module)."""
    from mcl.backends import DEFAULT_BACKEND

    path = Path(hwd.file).with_name(f"{hwd.name}.{DEFAULT_BACKEND}.toml") if hwd.file \
        else None
    try:
        text = path.read_text(encoding="utf-8") if path else None
    except OSError:
        text = None
    if text is None:
        return None
    found = _WIDTH.search(text)
    return int(found.group(1)) if found else 0
