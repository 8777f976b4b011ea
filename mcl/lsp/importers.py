"""The files on disk that may use a top-level name of a module: the kernels and modules
below the workspace folders and the include path that import it (mcpl.md §2: `import
a.b.c;` is the file `a/b/c.mcpl` or `.mcl` below a source root) and name it.

Only a cheap textual filter: each file found is checked (mcl.lsp.analysis) before its
uses count, so a file that matches by chance adds nothing."""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from mcl.mcpl.loader import EXTENSIONS

# Below a workspace folder: not virtual environments, caches or version control.
_SKIPPED = {"__pycache__", "node_modules", "build", "dist"}
MAX_FILES = 5000  # a workspace that is someone's home folder is not searched to the end


def mcpl_files(roots: Iterable[Path]) -> Iterator[Path]:
    """The MCPL files below `roots`, each once."""
    seen: set[Path] = set()
    count = 0
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
            for name in sorted(files):
                if not name.endswith(EXTENSIONS):
                    continue
                path = Path(folder, name).resolve()
                count += 1
                if count > MAX_FILES:
                    return
                if path not in seen:
                    seen.add(path)
                    yield path


def importers(roots: Iterable[Path], module_file: Path, name: str,
              descriptions: Collection[str] = ()) -> list[Path]:
    """The files below `roots` with an import that ends in `module_file`'s module name
    and a word `name` (the module itself left out). A one-word import of a name in
    `descriptions` imports that description, not a module (mcl.mcpl.loader), so it does
    not count."""
    stem = re.escape(module_file.stem)
    packages = "+" if module_file.stem in descriptions else "*"
    imports = re.compile(
        rf"(?m)^\s*import\s+(?:[A-Za-z_][A-Za-z0-9_]*\.){packages}{stem}\s*;")
    word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
    target = module_file.resolve()
    out = []
    for path in mcpl_files(roots):
        if path == target:
            continue
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):
            continue
        if imports.search(text) and word.search(text):
            out.append(path)
    return out
