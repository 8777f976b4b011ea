"""The top-level constants generated code needs: those a piece of code names, and those
their initialisers name in turn. The OpenCL source defines them as macros
(`mcl.codegen.opencl`), the C++ host as `constexpr`s (`mcl.codegen.host_cpp`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mcl.mcpl.ast import Decl, Name, walk


def used_constants(constants: Sequence[Decl], roots: Iterable[object]) -> list[Decl]:
    """The `constants` (in declaration order) that the names in the trees `roots` use,
    directly or through the initialiser of another used constant."""
    by_name = {c.name: c for c in constants}
    todo = [n.name for root in roots for n in walk(root) if isinstance(n, Name)]
    used: set[str] = set()
    while todo:
        name = todo.pop()
        if name in by_name and name not in used:
            used.add(name)
            init = by_name[name].init
            todo += [n.name for n in walk(init) if isinstance(n, Name)] if init else []
    return [c for c in constants if c.name in used]
