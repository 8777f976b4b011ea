"""The on-disk cache of parsed `.hdl` files (mcl.parse_cache says what is kept and when an
entry is used): a command does not run textX on the same ten descriptions every time.
Entries lie in `<cache dir>/hdl`. The cache itself is `mcl.hdl.syntax.CACHE`, beside the
parser that fills it (`parse_hdl_file`)."""

from __future__ import annotations

from pathlib import Path

from mcl.hdl.syntax import CACHE as CACHE
from mcl.hdl.syntax import HdlFile
from mcl.parse_cache import ENV_VAR as ENV_VAR


def cache_dir() -> Path | None:
    """The folder of the HDL parse cache; None when the cache is turned off."""
    return CACHE.folder()


def _key(text: str, file: str) -> bytes:
    return CACHE.key(text, file)


def load(text: str, file: str) -> HdlFile | None:
    """The cached parse of `text` (read from `file`), or None."""
    return CACHE.load(text, file)
