"""Whether PoCL compiled a kernel or took it from its cache (docs/codegen.md, "Timings").

PoCL finishes compiling a kernel only at its first launch, for the work-group size of that
launch, and keeps the machine code in its kernel cache (`$POCL_CACHE_DIR`, else
`$XDG_CACHE_HOME/pocl/kcache`, else `~/.cache/pocl/kcache`): one `.so` per kernel and
work-group size. A run that adds no such file compiled nothing: its first launch was
"cached". For other devices mcl cannot tell, and says nothing.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    explicit = os.environ.get("POCL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pocl" / "kcache"


def compiled_kernels() -> frozenset[str] | None:
    """The machine-code files in PoCL's kernel cache, or None without a cache folder."""
    folder = cache_folder()
    if not folder.is_dir():
        return None
    try:
        return frozenset(str(p) for p in folder.glob("*/*/*/*/*.so"))
    except OSError:
        return None
