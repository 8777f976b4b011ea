"""Where the bundled data lives: the hardware-description library and the kernel library.

In a source checkout these are the top-level folders `hwdescs/` and `kernels/`; in an
installed wheel they are the packages `mcl._hwdescs` and `mcl._kernels` (see pyproject).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _package_dir(package: str, fallback: str) -> Path:
    try:
        return Path(str(resources.files(package)))
    except ModuleNotFoundError:
        return _REPO_ROOT / fallback


def hwdescs_dir() -> Path:
    """Folder holding the bundled `.hdl` files, mapping files and feedback functions."""
    return _package_dir("mcl._hwdescs", "hwdescs")


def kernels_dir() -> Path:
    """Folder holding the bundled kernels (`<app>/perfect.mcpl`, `<app>/reference.py`)."""
    return _package_dir("mcl._kernels", "kernels")


def mcpl_stdlib_dir() -> Path:
    """Source root of the MCPL standard library (`lib/math/...`)."""
    return Path(__file__).resolve().parent / "mcpl" / "stdlib"
