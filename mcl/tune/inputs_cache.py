"""The inputs of `mcl tune` and the reference's expected outputs, kept between runs.

Each run of `mcl tune` makes the kernel's inputs at the sizes asked for and computes the
numpy reference's outputs and their error bounds: at matmul 4096³ two float64 products
of 137 GFLOP each, every run, before anything is measured, and again when Kernel
Tuner's cache answers every configuration. The second run reads them back instead,
from the kernel's tuning cache folder (`.KERNEL.tune-cache/`, beside Kernel Tuner's
cache files): one file per reference source, sizes, seed and mcl version, the newest
`KEEP` of them kept (a 4096³ matmul's are 320 MB).

The file is a pickle written by mcl in the kernel's own folder, read only from there:
whoever can write that folder can already change the `reference.py` mcl runs.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mcl import __version__

KEEP = 2  # input files per kernel's cache folder
PREFIX = "inputs-"
Data = tuple[dict[str, int], dict[str, Any], dict[str, Any]]


def inputs_file(folder: Path, reference: Path, overrides: Mapping[str, int], seed: int
                ) -> Path:
    """Where the data of one (reference source, sizes, seed) lies in `folder`."""
    source = reference.read_bytes() if reference.is_file() else b""
    digest = hashlib.sha1(b"\n".join([
        source, repr(sorted(overrides.items())).encode(), str(seed).encode(),
        __version__.encode()])).hexdigest()[:16]
    return folder / f"{PREFIX}{digest}.pickle"


def cached_data(file: Path, make: Callable[[], Data]) -> Data:
    """The data kept in `file`, or `make()`'s, kept there for the next run (a file that
    cannot be read is made again; one that cannot be written is not kept)."""
    try:
        with file.open("rb") as f:
            data: Data = pickle.load(f)
        os.utime(file)  # the newest is kept longest
        return data
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
        pass
    data = make()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        partial = file.with_suffix(f".{os.getpid()}.part")
        with partial.open("wb") as f:
            pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(file)  # whole or not at all, also with two runs at once
        _prune(file.parent)
    except OSError:
        pass
    return data


def _prune(folder: Path) -> None:
    """Keep the newest KEEP input files of `folder`."""
    files = sorted(folder.glob(f"{PREFIX}*.pickle"), key=lambda p: p.stat().st_mtime,
                   reverse=True)
    for old in files[KEEP:]:
        old.unlink(missing_ok=True)
