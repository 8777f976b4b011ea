"""The bundled data read by the code that runs (mcl.resources): in a source checkout, the
checkout's own `hwdescs/` and `kernels/`, even where an editable install of another
checkout maps `mcl._hwdescs` to its folder (a git worktree, an older revision compared
with this one)."""

from __future__ import annotations

from pathlib import Path

import mcl
from mcl.resources import hwdescs_dir, kernels_dir

CHECKOUT = Path(mcl.__file__).resolve().parent.parent


def test_a_checkout_reads_its_own_descriptions_and_kernels() -> None:
    assert (CHECKOUT / "pyproject.toml").is_file()  # these tests run from a checkout
    assert hwdescs_dir() == CHECKOUT / "hwdescs"
    assert kernels_dir() == CHECKOUT / "kernels"
