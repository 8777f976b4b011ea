"""An on-disk cache of parsed `.hdl` files, so that a command does not run textX on the
same ten descriptions every time (`mcl check` runs on every save in an editor,
and parsing the library was about a third of its time).

What is stored is mcl's own tree of one file (`mcl.hdl.syntax.HdlFile`: frozen
dataclasses of strings, numbers and spans), never textX objects or anything built from
several files: resolving, building and validating the library run every time, so a cached
entry can only stand for the parse of exactly the same text. An entry is used only when
its key equals the key of the file being read: a hash of the text, the file name the spans
carry, the Python and mcl versions and the sources of the parser (grammar and conversion
code), so an edited description, a moved file or a changed grammar is parsed again.

- One entry per file name (`<cache dir>/hdl/<hash of the name>.pickle`), overwritten
  when the file changes, so the cache does not grow with edits.
- Only successful parses are stored: a file with a syntax error is parsed by textX every
  time, and its diagnostic is the parser's, word for word.
- The cache is an optimisation and nothing more: a folder that cannot be created or
  written (read-only), an entry that cannot be read, is truncated, was written by another
  version or holds anything but a parse tree is ignored (and replaced when possible).
  Entries are written to a temporary file and renamed, so a reader never sees half of one.
- The folder: `$MCL_CACHE_DIR` when set (an empty value turns the cache off), else
  `$XDG_CACHE_HOME/mcl`, else `~/.cache/mcl`.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from mcl import __version__

if TYPE_CHECKING:
    from mcl.hdl.syntax import HdlFile

ENV_VAR = "MCL_CACHE_DIR"
_PARSER_SOURCES = ("hdl.tx", "syntax.py", "../diagnostics.py", "../grammar_converter.py",
                   "../source_files.py")
# Unpickling may only create these: the parse tree's types, and nothing that runs code.
_ALLOWED_MODULES = frozenset({"mcl.hdl.syntax", "mcl.diagnostics"})


def cache_dir() -> Path | None:
    """The folder of the HDL parse cache; None when the cache is turned off."""
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return Path(configured) / "hdl" if configured.strip() else None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError, OSError):  # no home directory: no cache
            return None
    return Path(base) / "mcl" / "hdl"


@lru_cache(maxsize=1)
def _parser_fingerprint() -> bytes:
    """What a parse depends on besides the text: versions and the parser's own sources
    (an edited grammar in a development checkout must not reuse old trees)."""
    digest = hashlib.sha256(f"{sys.version}\0{__version__}\0".encode())
    here = Path(__file__).parent
    for name in _PARSER_SOURCES:
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(b"\0missing\0" + name.encode())
    return digest.digest()


def _key(text: str, file: str) -> bytes:
    digest = hashlib.sha256(_parser_fingerprint())
    digest.update(file.encode("utf-8", "surrogatepass") + b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _entry(folder: Path, file: str) -> Path:
    name = hashlib.sha256(file.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return folder / f"{name}.pickle"


class _TreeUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> type:
        if module in _ALLOWED_MODULES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a parse tree")


def load(text: str, file: str) -> HdlFile | None:
    """The cached parse of `text` (read from `file`), or None."""
    folder = cache_dir()
    if folder is None:
        return None
    try:
        data = _entry(folder, file).read_bytes()
        key, tree = _TreeUnpickler(io.BytesIO(data)).load()
    except Exception:  # noqa: BLE001 - any unreadable or foreign entry is a miss
        return None
    from mcl.hdl.syntax import HdlFile

    if key != _key(text, file) or not isinstance(tree, HdlFile) or tree.file != file:
        return None
    return tree


def store(text: str, file: str, tree: HdlFile) -> None:
    """Remember the parse `tree` of `text`; silently nothing where the folder is not
    writable."""
    folder = cache_dir()
    if folder is None:
        return
    import tempfile  # only when writing: most commands find every file cached

    try:
        folder.mkdir(parents=True, exist_ok=True)
        data = pickle.dumps((_key(text, file), tree), protocol=pickle.HIGHEST_PROTOCOL)
        fd, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, _entry(folder, file))
        except BaseException:
            os.unlink(temp)
            raise
    except (OSError, pickle.PicklingError, RecursionError):
        return
