"""CUDA's words for mcl's mapping model and its architectures: what the backend's object
(mcl.backends.cuda.plugin) and the rest of mcl read without importing code generation."""

from __future__ import annotations

NAME = "cuda"

# A `<leaf>.cuda.toml` names the constructs in CUDA's words, each read as the word of
# mcl's mapping model (mcl.codegen.mapping).
ROLES = {"block": "work-group", "thread": "work-item", "global": "global", "loop": "loop"}
SPACES = {"global": "global", "shared": "local", "constant": "constant", "register": "private"}
# __syncthreads() orders the block's shared and global accesses alike.
BARRIERS = {"block": "local+global"}
# CUDA architectures are written sm_XY (compute capability X.Y).
_ARCH_PREFIX = "sm_"


def arch_problem(arch: object) -> str | None:
    """What is wrong with `arch` as a CUDA architecture, or None."""
    if isinstance(arch, str) and arch.startswith(_ARCH_PREFIX) and arch[3:].isdigit():
        return None
    return f"{arch!r} is not a CUDA architecture such as \"sm_90\""
