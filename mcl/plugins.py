"""The entry points of mcl's groups in installed packages (analyses and feedback
functions of other packages: docs/feedback.md; backends: docs/codegen.md, "Backends"),
kept on disk between runs.

`importlib.metadata.entry_points` imports `importlib.metadata` (with `email`, `csv`,
`zipfile`) and reads the metadata of every installed distribution: about 15 ms of every
`mcl check`, which asks for both of mcl's groups (docs/feedback.md, "Start-up"), where
there are almost always none. The entries of mcl's groups are kept in mcl's cache folder
(mcl.parse_cache.cache_root) with what they were read from: the `entry_points.txt` of every
distribution in the folders of `sys.path` (its modification time; -1 where it has none)
and every file on `sys.path` (a zip archive: its modification time). Installing, removing
or reinstalling a package, or editing its entry points, changes that, and the entry
points are read again. Within one process they are read once. Each `sys.path` has a file
of its own (environments that share the cache folder do not overwrite each other's).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.parse_cache import cache_root, read_marshalled, write_atomically

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

# Every group mcl reads (mcl.feedback.registry, mcl.feedback.analyses.functions,
# mcl.backends: the backends and their register counters): read together, kept together.
GROUPS = ("mcl.feedback_analyses", "mcl.feedback_functions", "mcl.backends",
          "mcl.register_counters")
_FORMAT = 1

Found = dict[str, list[tuple[str, str]]]  # (name, value) of each entry point, by group
_found: Found | None = None


def installed_state() -> list[tuple[str, int]]:
    """What the entry points are read from: each distribution's `entry_points.txt` in a
    folder of `sys.path`, each file (archive) on `sys.path`, with modification times."""
    state: list[tuple[str, int]] = []
    for entry in sys.path:
        try:
            listing = os.scandir(entry or ".")
        except NotADirectoryError:
            try:
                state.append((entry, os.stat(entry).st_mtime_ns))
            except OSError:
                pass
            continue
        except OSError:
            continue
        with listing:
            for item in listing:
                if item.name.endswith((".dist-info", ".egg-info")):
                    try:
                        mtime = os.stat(os.path.join(item.path, "entry_points.txt")).st_mtime_ns
                    except OSError:
                        mtime = -1
                    state.append((item.path, mtime))
    return state


def _path_key() -> str:
    """A short name for `sys.path`: two environments (two virtual environments of one
    Python, two checkouts run with `python -m mcl`) share the cache folder, and with one
    file between them each would find the other's entries and read the metadata again."""
    return hashlib.sha256("\0".join(sys.path).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _read_installed() -> Found:
    from importlib.metadata import entry_points as installed

    return {group: [(ep.name, ep.value) for ep in installed(group=group)] for group in GROUPS}


def _load(path: Path, state: list[tuple[str, int]]) -> Found | None:
    kept = read_marshalled(path)
    if (isinstance(kept, tuple) and len(kept) == 3 and kept[0] == _FORMAT
            and kept[1] == state and isinstance(kept[2], dict)
            and set(kept[2]) == set(GROUPS)):
        return kept[2]
    return None


def found() -> Found:
    """The (name, value) of the entry points of each of mcl's groups."""
    global _found
    if _found is None:
        root = cache_root()
        if root is None:
            _found = _read_installed()
        else:
            path = root / f"entry-points-{sys.implementation.cache_tag}-{_path_key()}.marshal"
            state = installed_state()
            _found = _load(path, state)
            if _found is None:
                _found = _read_installed()
                write_atomically(path, marshal.dumps((_FORMAT, state, _found)))
    return _found


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of `group` (one of GROUPS) in installed packages, as
    `importlib.metadata.entry_points(group=group)` gives them."""
    if group not in GROUPS:
        raise ValueError(f"{group} is not one of mcl's entry-point groups {GROUPS}")
    listed = found()[group]
    if not listed:
        return []
    from importlib.metadata import EntryPoint

    return [EntryPoint(name, value, group) for name, value in listed]
