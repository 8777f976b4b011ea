"""The bytecode of mcl's own modules, kept in mcl's cache folder where Python keeps none.

Python keeps a module's bytecode in `__pycache__` beside it, unless it is told not to
write bytecode (`PYTHONDONTWRITEBYTECODE`, `python -B`): then every `mcl check` compiled
the hundred-odd modules it imports, about 0.17 s, more than half of SymPy's whole import
(docs/feedback.md, "Start-up"). `install()` (by the `mcl` command, where Python writes no
bytecode) makes mcl's modules found through a loader that keeps their bytecode in mcl's
cache folder (mcl.parse_cache.cache_root), under `bytecode/` and the source's absolute
path, in Python's own format: a header of the interpreter's magic number and the source's
modification time and size, then the code. A file whose header does not match the source
is compiled again and replaced; a `__pycache__` file that is valid is read as before.
Like `__pycache__`, the files hold code that runs: they are read only when they are the
current user's and no one else may write them, and they are written so.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from pathlib import Path
from types import CodeType, ModuleType

from mcl.parse_cache import cache_root, read_marshalled, write_atomically

_MAGIC = importlib.util.MAGIC_NUMBER


def header(source: Path) -> bytes | None:
    """The header a bytecode file of `source` starts with (PEP 552, timestamp-based);
    None when the source cannot be read."""
    try:
        info = os.stat(source)
    except OSError:
        return None
    return (_MAGIC + (0).to_bytes(4, "little")
            + (int(info.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
            + (info.st_size & 0xFFFFFFFF).to_bytes(4, "little"))


class CachedSourceLoader(SourceFileLoader):
    """A module's loader that reads and writes its bytecode in `folder`."""

    def __init__(self, fullname: str, path: str, folder: Path):
        super().__init__(fullname, path)
        self.folder = folder

    def bytecode_path(self) -> Path | None:
        tag = sys.implementation.cache_tag
        if tag is None:
            return None
        source = Path(os.path.abspath(self.path))
        optimized = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
        return self.folder.joinpath(*source.parent.parts[1:],
                                    f"{source.stem}.{tag}{optimized}.pyc")

    def get_code(self, fullname: str) -> CodeType | None:
        where = self.bytecode_path()
        expected = header(Path(self.path))
        if where is None or expected is None:
            return super().get_code(fullname)
        code = read_marshalled(where, expected)
        if isinstance(code, CodeType):
            return code
        code = super().get_code(fullname)
        if code is not None:
            write_atomically(where, expected + marshal.dumps(code))
        return code


class CachedModuleFinder:
    """Finds the submodules of `package` as Python's path finder does, with
    `CachedSourceLoader`; anything else is left to the finders after it."""

    def __init__(self, folder: Path, package: str = "mcl"):
        self.folder = folder
        self.prefix = package + "."

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not fullname.startswith(self.prefix):
            return None
        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or type(spec.loader) is not SourceFileLoader or spec.origin is None:
            return spec
        spec.loader = CachedSourceLoader(fullname, spec.origin, self.folder)
        return spec


def install() -> bool:
    """Keep the bytecode of the mcl modules imported from now on in the cache folder, when
    Python writes none and the cache is on (once per process). Whether it is installed."""
    if any(isinstance(f, CachedModuleFinder) for f in sys.meta_path):
        return True
    root = cache_root()
    if not sys.dont_write_bytecode or root is None:
        return False
    sys.meta_path.insert(0, CachedModuleFinder(root / "bytecode"))
    return True
