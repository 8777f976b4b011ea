"""On-disk caches of parse trees, so that a command does not run textX on the same text
every time (`mcl check` runs on every save in an editor; importing textX, building its
grammar and parsing were about a third of its time). Two kinds use it: `.hdl` files
(mcl.hdl.parse_cache) and MCPL modules (mcl.mcpl.parse).

What is stored is mcl's own tree of one file (frozen dataclasses of strings, numbers and
spans), never textX objects or anything built from several files: checking, resolving and
building run every time, so a cached entry can only stand for the parse of exactly the
same text. An entry is used only when its key equals the key of the file being read: a
hash of the text, the file name the spans carry, what else the parse reads (`extra`: the
names MCPL takes as hardware descriptions), the Python and mcl versions and the sources
of the parser (grammar and conversion code), so an edited file, a moved file or a changed
grammar is parsed again.

- One entry per kind, file name and parser (`<cache dir>/<kind>/<hash of the name and
  the parser's fingerprint>.pickle`), overwritten when the file changes, so the cache
  does not grow with edits, and two installations of mcl that share the folder (a
  release and a development checkout, two checkouts) do not overwrite each other's.
- Only successful parses are stored: a file with a syntax error is parsed by textX every
  time, and its diagnostic is the parser's, word for word.
- The cache is an optimisation and nothing more: a folder that cannot be created or
  written (read-only), an entry that cannot be read, is truncated, was written by another
  version or holds anything but a parse tree is ignored (and replaced when possible).
  Entries are written to a temporary file and renamed, so a reader never sees half of one.
  Unpickling may only create the classes of the tree's own modules, nothing that runs code.
- The folder: `$MCL_CACHE_DIR` when set (an empty value turns the cache off), else
  `$XDG_CACHE_HOME/mcl`, else `~/.cache/mcl`.
"""

from __future__ import annotations

import hashlib
import io
import marshal
import os
import pickle
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

from mcl import __version__

ENV_VAR = "MCL_CACHE_DIR"
_PACKAGE = Path(__file__).parent

Tree = TypeVar("Tree")


def cache_root() -> Path | None:
    """The folder of mcl's on-disk caches; None when caching is turned off."""
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return Path(configured) if configured.strip() else None
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except (RuntimeError, KeyError, OSError):  # no home directory: no cache
            return None
    return Path(base) / "mcl"


class _TreeUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, allowed: frozenset[str]):
        super().__init__(io.BytesIO(data))
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> type:
        # Classes only, by plain name: `Path.unlink` (a dotted name) or a function of an
        # allowed module would let an entry run code when it is called.
        if module in self.allowed and "." not in name:
            found = super().find_class(module, name)
            if isinstance(found, type):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a parse tree")


class ParseCache(Generic[Tree]):
    """The cached parse trees of one kind of file.

    `sources`: the files (relative to the mcl package) whose text decides what a parse
    gives; `modules`: the only modules whose classes an entry may hold; `tree`: the class
    of a whole tree (where it has a `file` attribute, the file name it was parsed under;
    the loaded library of descriptions, read from several files, has none)."""

    def __init__(self, kind: str, tree: type[Tree], sources: tuple[str, ...],
                 modules: frozenset[str]):
        self.kind = kind
        self.tree = tree
        self.sources = sources
        self.modules = modules

    def folder(self) -> Path | None:
        """Where this kind's entries lie; None when the cache is turned off."""
        root = cache_root()
        return None if root is None else root / self.kind

    @cached_property
    def fingerprint(self) -> bytes:
        """What a parse depends on besides the text: versions and the parser's own sources
        (an edited grammar in a development checkout must not reuse old trees)."""
        digest = hashlib.sha256(f"{sys.version}\0{__version__}\0{self.kind}\0".encode())
        for name in self.sources:
            try:
                digest.update((_PACKAGE / name).read_bytes())
            except OSError:
                digest.update(b"\0missing\0" + name.encode())
        return digest.digest()

    def key(self, text: str, file: str, extra: str = "") -> bytes:
        digest = hashlib.sha256(self.fingerprint)
        for part in (file, extra):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def _entry(self, folder: Path, file: str) -> Path:
        name = hashlib.sha256(self.fingerprint + file.encode("utf-8", "surrogatepass"))
        return folder / f"{name.hexdigest()[:32]}.pickle"

    def load(self, text: str, file: str, extra: str = "") -> Tree | None:
        """The cached parse of `text` (read from `file`, parsed with `extra`), or None."""
        folder = self.folder()
        if folder is None:
            return None
        try:
            data = self._entry(folder, file).read_bytes()
            key, tree = _TreeUnpickler(data, self.modules).load()
        except Exception:  # noqa: BLE001 - any unreadable or foreign entry is a miss
            return None
        if (key != self.key(text, file, extra) or not isinstance(tree, self.tree)
                or getattr(tree, "file", file) != file):
            return None
        return tree

    def through(self, text: str, file: str, make: Callable[[], Tree], extra: str = "") -> Tree:
        """The cached parse of `text`, else `make()`'s, which is then kept. What `make`
        raises (a syntax error) passes through and nothing is stored."""
        tree = self.load(text, file, extra)
        if tree is None:
            tree = make()
            self.store(text, file, tree, extra)
        return tree

    def store(self, text: str, file: str, tree: Tree, extra: str = "") -> None:
        """Remember the parse `tree` of `text`; silently nothing where the folder is not
        writable."""
        folder = self.folder()
        if folder is None:
            return
        try:
            data = pickle.dumps((self.key(text, file, extra), tree),
                                protocol=pickle.HIGHEST_PROTOCOL)
        except (pickle.PicklingError, RecursionError):
            return
        write_atomically(self._entry(folder, file), data)


def read_private(path: Path) -> bytes | None:
    """The bytes of `path` where it is the current user's file and no one else may write
    it (what holds code that runs); None otherwise, or where it cannot be read."""
    try:
        with open(path, "rb") as file:
            info = os.fstat(file.fileno())
            if info.st_mode & 0o022 or hasattr(os, "getuid") and info.st_uid != os.getuid():
                return None
            return file.read()
    except OSError:
        return None


def read_marshalled(path: Path, header: bytes = b"") -> Any:
    """The value `marshal` wrote after `header` into `path`, a private file
    (`read_private`); None where it is missing, not private, has another header, or is
    cut short or damaged. The caller checks the value's type."""
    data = read_private(path)
    if data is None or not data.startswith(header):
        return None
    try:
        return marshal.loads(data[len(header):])
    except (EOFError, ValueError, TypeError):
        return None


def write_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file of its folder (created if need be)
    and a rename, so that a reader never sees half of it; the file is the current user's
    alone to read and write. Silently nothing where the folder is not writable."""
    import tempfile  # only when writing: most commands find every file cached

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError:
        return
