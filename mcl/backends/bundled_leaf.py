"""Whether the compiler's facts about a kernel can be had at its level: code generation
runs only for a leaf of the bundled library, read from the file the kernel was checked
against, and a program without errors."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import KernelFacts
    from mcl.hdl.library import HwdLibrary


def bundled_leaf(facts: KernelFacts) -> HwdLibrary | None:
    """The bundled library, where the level of `facts` is one of its leaves (the same
    file) and the program checked clean; None otherwise."""
    from mcl.hdl.library import default_library

    hwd = facts.hwd
    library = default_library()
    if hwd.name not in library or library.get(hwd.name).file != hwd.file or \
            not library.is_leaf(hwd.name) or facts.checked.errors:
        return None
    return library
