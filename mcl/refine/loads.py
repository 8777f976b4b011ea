"""The loads a refinement acts on, as the kernel's source writes them: the one load of a
line (`line=`, `access=` of a refinement's parameters), the whole element accesses of a
function, the nodes stored to, and the element type of an access. Shared by the
refinements that move or redirect a load (hoist-load, stage-tile)."""

from __future__ import annotations

import re

from mcl.identity import Ref
from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.refinement import Refused


def the_load(kernel: KernelAtLevel, function: ast.Function, line: int,
             access: str | None) -> ast.Index:
    """The load at `line` of the kernel's file (the one written `access`, where given);
    `Refused` where the line has none or several."""
    targets = stored_nodes(function.body)
    loads = [n for n in full_accesses(function.body) if n.span is not None
             and n.span.line == line and kernel.in_file(n.span) and Ref(n) not in targets]
    if access is not None:
        wanted = re.sub(r"\s+", "", access)
        loads = [n for n in loads if re.sub(r"\s+", "", print_expr(n)) == wanted]
    texts = sorted({print_expr(n) for n in loads})
    if not loads:
        raise Refused(f"line {line} has no load" + (f" {access}" if access else ""))
    if len(texts) > 1:
        raise Refused(f"line {line} has several loads ({', '.join(texts)}): give access=")
    return loads[0]


def full_accesses(node: object) -> list[ast.Index]:
    """Element accesses below `node`, each whole: `d[i][j]`, not its part `d[i]`."""
    parts = {Ref(n.base) for n in ast.walk(node) if isinstance(n, ast.Index)}
    return [n for n in ast.walk(node) if isinstance(n, ast.Index) and Ref(n) not in parts]


def stored_nodes(node: object) -> set[Ref[object]]:
    """The nodes stored to below `node` (and their parts)."""
    ids: set[Ref[object]] = set()
    for n in ast.walk(node):
        match n:
            case ast.Assign(target=t) | ast.IncDec(target=t):
                ids |= {Ref(x) for x in ast.walk(t)}
            case ast.Swap(left=left, right=right):
                ids |= {Ref(x) for x in (*ast.walk(left), *ast.walk(right))}
            case _:
                pass
    return ids


def element_type(function: ast.Function, load: ast.Index) -> str:
    """The primitive type of the element `load` reads; `Refused` where it is not one
    number of an array the function declares or takes."""
    array = ast.root_name(load)
    declared: list[ast.Type] = [p.type for p in function.params if p.name == array]
    for n in ast.walk(function.body):
        match n:
            case ast.Decl(name=name, type=t) if name == array:
                declared.append(t)
            case ast.Decl(view=ast.View(name=name, type=t)) | ast.ViewDecl(
                    view=ast.View(name=name, type=t)) if name == array:
                declared.append(t)
            case _:
                pass
    if len(declared) != 1 or not isinstance(declared[0], ast.ArrayType) \
            or not isinstance(declared[0].element, ast.Prim) \
            or declared[0].rank != sum(len(i.indices) for i in ast.walk(load)
                                       if isinstance(i, ast.Index)):
        raise Refused(f"the element of {print_expr(load)} is not one number of a "
                      "declared array")
    return declared[0].element.name
