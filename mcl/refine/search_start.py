"""The search's first version: the kernel translated to the target leaf, as `mcl
translate` prints it, where it is written above the leaf.

A refinement edits the source text at its own level; the ones that need the leaf's
memories and barriers (a tile in shared memory) can only act on a kernel written at the
leaf, so the search starts from the translation (the paper's section 6.1: translate, then
refine at the lower level). Translation prints the program anew; the comment lines above
each named constant (its `// tune:` values and `// require:` rules, which set-constant
reads) are carried over from the source."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import open_kernel

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary


@dataclass(frozen=True)
class Start:
    """The kernel the search starts from, and the level it was translated from (None:
    the file is written at the target)."""

    kernel: KernelAtLevel
    translated_from: str | None


def search_start(path: str | Path, target: str, library: HwdLibrary,
                 include_dirs: Sequence[str] = (), values: Mapping[str, Any] | None = None,
                 function: str | None = None, reference: str | Path | None = None) -> Start:
    """The kernel file at `target`: as it is where written there, else its translation
    (MclError where the file does not check or is written below or beside `target`)."""
    from mcl.mcpl.printer import print_module

    kernel = open_kernel(path, target, library, include_dirs, values, function, reference)
    own = kernel.source_function.hwd
    if own == target:
        return Start(kernel, None)
    text = carry_constant_comments(kernel.text, print_module(kernel.lowered.main))
    translated = load_kernel(kernel.path, target, library, include_dirs, kernel.values,
                             kernel.function, text=text, reference=kernel.reference)
    return Start(translated, own)


def carry_constant_comments(source: str, translated: str) -> str:
    """`translated` with the comment lines that stand right above each top-level
    `const` of `source` put above the same constant again."""
    out = translated
    for name, comments in _constant_comments(source).items():
        decl = re.compile(rf"^(?=const\s+\w+\s+{re.escape(name)}\b)", re.MULTILINE)
        out = decl.sub(comments.replace("\\", "\\\\"), out, count=1)
    return out


def _constant_comments(source: str) -> dict[str, str]:
    lines = source.splitlines(keepends=True)
    found: dict[str, str] = {}
    for n, line in enumerate(lines):
        m = re.match(r"const\s+\w+\s+(\w+)\b", line)
        if m is None:
            continue
        start = n
        while start > 0 and lines[start - 1].lstrip().startswith("//"):
            start -= 1
        if start < n:
            found[m.group(1)] = "".join(lines[start:n])
    return found
