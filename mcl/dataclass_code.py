"""The compiled methods of dataclasses, kept on disk between runs of the `mcl` command.

`@dataclass` writes the methods of each class (`__init__`, `__repr__`, `__eq__`, and for a
frozen class `__hash__`, `__setattr__`, `__delattr__`) as Python source and compiles it
with `exec` while the class's module is imported. mcl's modules on the path of `mcl check`
define about 130 dataclasses: compiling their methods was about 45 ms of every check, an
eighth of SymPy's whole import (docs/feedback.md, "Start-up"). Python keeps the bytecode of
modules in `__pycache__`, but not that of code compiled at run time; this module does the
same for the dataclasses' methods: `install()` gives the `dataclasses` module an `exec`
that looks up the code compiled from a source text in a table read from mcl's cache
folder (mcl.parse_cache.cache_root) and compiles, and adds, only what is missing; the
table is written back at exit when something was added.

The code is the very code `exec` would compile from the same text (compiled the same way:
file name `<string>`, no inherited `__future__` flags), so the classes behave exactly
as without the table; only the time differs. The table is keyed by the interpreter's
bytecode version (its file name carries the cache tag, its header the magic number), so
another Python neither reads nor overwrites it. Like Python's own `__pycache__`, the table
holds code that runs: it is read only from a file owned by the current user that no one
else may write, and it is written so. Anything wrong with it (missing, truncated,
foreign) means an empty table, and an unwritable folder means no table at all.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import importlib.util
import marshal
import sys
from pathlib import Path
from types import CodeType
from typing import Any

from mcl.parse_cache import cache_root, read_marshalled, write_atomically

_MAGIC = importlib.util.MAGIC_NUMBER
# Entries beyond which the table is started again from what this process used (the texts
# of classes that changed or went away otherwise stay for good).
MAX_ENTRIES = 4000


class CodeTable:
    """Compiled code by source text, loaded from and saved to one file."""

    def __init__(self, path: Path | None):
        self.path = path
        self.code: dict[str, CodeType] = load(path) if path is not None else {}
        self.used: set[str] = set()
        self.added = False

    def exec(self, source: Any, globals: dict[str, Any] | None = None,
             locals: Any = None, /) -> None:
        """`builtins.exec`, with the code of a source text compiled once per table."""
        if type(source) is str:
            code = self.code.get(source)
            if code is None:
                code = compile(source, "<string>", "exec", dont_inherit=True)
                self.code[source] = code
                self.added = True
            self.used.add(source)
            source = code
        builtins.exec(source, globals, locals)

    def save(self) -> None:
        """Write the table back when code was added (silently nothing where it cannot be
        written)."""
        if not self.added or self.path is None:
            return
        code = self.code
        if len(code) > MAX_ENTRIES:
            code = {text: code[text] for text in self.used}
        try:
            data = _MAGIC + marshal.dumps(code)
        except ValueError:  # an unmarshallable constant: keep nothing
            return
        write_atomically(self.path, data)
        self.added = False


def load(path: Path) -> dict[str, CodeType]:
    """The table in `path`, or an empty one where it is missing, unreadable, written by
    another interpreter, or may have been written by someone else."""
    table = read_marshalled(path, _MAGIC)
    if not isinstance(table, dict) or not all(
            type(k) is str and type(v) is CodeType for k, v in table.items()):
        return {}
    return table


def table_path() -> Path | None:
    """The table's file in mcl's cache folder; None when caching is turned off."""
    root = cache_root()
    tag = sys.implementation.cache_tag
    return None if root is None or tag is None else root / f"dataclass-code-{tag}.marshal"


_installed: CodeTable | None = None


def install() -> CodeTable | None:
    """Compile the methods of the dataclasses defined from now on through the table of
    mcl's cache folder (once per process; nothing when caching is turned off)."""
    global _installed
    if _installed is None:
        path = table_path()
        if path is None:
            return None
        _installed = CodeTable(path)
        # dataclasses calls `exec` through its module's globals, a name typeshed does not
        # declare there
        dataclasses.exec = _installed.exec  # type: ignore[attr-defined]
        atexit.register(_installed.save)
    return _installed
