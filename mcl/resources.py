"""Where the bundled data lives: the hardware-description library and the kernel library.

In a source checkout these are the top-level folders `hwdescs/` and `kernels/`; in an
installed wheel they are the packages `mcl._hwdescs` and `mcl._kernels` (see pyproject).

The checkout's folders come first: an editable install maps `mcl._hwdescs` to the folder
of the checkout it was made from, so code run from another checkout of the same
repository (a git worktree, an older revision beside it: `PYTHONPATH=DIR python -m mcl`)
would otherwise read that checkout's descriptions and feedback functions with its own
code, and a comparison of two revisions would compare one revision's data.
"""

from __future__ import annotations

from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parent.parent


def _package_dir(package: str, fallback: str) -> Path:
    beside = _REPO_ROOT / fallback
    if (_REPO_ROOT / "pyproject.toml").is_file() and beside.is_dir():
        return beside
    from importlib import resources  # an installed wheel only

    try:
        return Path(str(resources.files(package)))
    except ModuleNotFoundError:
        return beside


def hwdescs_dir() -> Path:
    """Folder holding the bundled `.hdl` files, mapping files and feedback functions."""
    return _package_dir("mcl._hwdescs", "hwdescs")


def kernels_dir() -> Path:
    """Folder holding the bundled kernels (`<app>/perfect.mcpl`, `<app>/reference.py`)."""
    return _package_dir("mcl._kernels", "kernels")


def mcpl_stdlib_dir() -> Path:
    """Source root of the MCPL standard library (`lib/math/...`)."""
    return Path(__file__).resolve().parent / "mcpl" / "stdlib"
