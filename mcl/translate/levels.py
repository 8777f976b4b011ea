"""Appendix A.1: the path through the hierarchy of descriptions.

Every description but `perfect` names its parent (`specializes`), so the path from the
root to the target is the target's chain of ancestors. A function is translated when its
level lies on that path; translation only ever moves down one edge at a time.
"""

from __future__ import annotations

from typing import Protocol

from mcl.diagnostics import MclError, Span, did_you_mean, error
from mcl.hdl.model import HardwareDescription


class Library(Protocol):
    """What the translation needs from `mcl.hdl.library.HwdLibrary`."""

    def get(self, name: str) -> HardwareDescription: ...

    def names(self) -> list[str]: ...


def require_level(library: Library, name: str, span: Span | None = None,
                  what: str = "level") -> None:
    """A clear error with a did-you-mean hint for an unknown description name; for a
    description that did not load, its own errors, where they are."""
    failed = getattr(library, "failed", {})  # mcl.hdl.library.HwdLibrary's, by name
    if name in failed:
        raise MclError(failed[name])
    names = list(library.names())
    if name not in names:
        raise MclError(
            error(
                "translate-unknown-level",
                f"unknown {what} '{name}': no hardware description of that name",
                span,
                hint=did_you_mean(name, names) or f"known levels: {', '.join(sorted(names))}",
            )
        )


def lineage(library: Library, name: str) -> list[str]:
    """The path from the root (`perfect`) down to `name`: FINDPATH("perfect", name)."""
    chain = [name]
    parent = library.get(name).parent
    while parent is not None and parent not in chain:
        chain.insert(0, parent)
        parent = library.get(parent).parent
    return chain


def arrow(levels: list[str]) -> str:
    return " → ".join(levels)


def descendants(library: Library, name: str) -> list[str]:
    """Levels a function written for `name` can be translated to, nearest first."""
    found = [n for n in library.names() if n != name and name in lineage(library, n)]
    return sorted(found, key=lambda n: (len(lineage(library, n)), n))


def upward_error(library: Library, function: str, level: str, target: str,
                 span: Span | None) -> MclError:
    """Target above the function's level: the path would have to go up."""
    chain = lineage(library, level)
    up = list(reversed(chain[chain.index(target):]))
    return MclError(
        error(
            "translate-upward",
            f"cannot translate '{function}' from {level} to {target}: {target} is above {level} "
            f"({arrow(up)} goes up the hierarchy), and translation only moves down",
            span,
            hint=_reachable_hint(library, level),
        )
    )


def sideways_error(library: Library, function: str, level: str, target: str,
                   span: Span | None) -> MclError:
    """Target on another branch: the path would go up to a common ancestor and down again."""
    mine, theirs = lineage(library, level), lineage(library, target)
    common = [a for a, b in zip(mine, theirs, strict=False) if a == b][-1]
    up = list(reversed(mine[mine.index(common):]))
    down = theirs[theirs.index(common):]
    return MclError(
        error(
            "translate-sideways",
            f"cannot translate '{function}' from {level} to {target}: they lie on different "
            f"branches; the path would go up {arrow(up)} and then down {arrow(down)}, and "
            "translation only moves down",
            span,
            hint=_reachable_hint(library, level),
        )
    )


def _reachable_hint(library: Library, level: str) -> str:
    below = descendants(library, level)
    if not below:
        return f"{level} is a leaf: nothing lies below it"
    return f"from {level} you can translate to {', '.join(below)}"
