"""Hover texts (Markdown): a variable's type and memory space (where it is used and where
it is declared), a called function's signature, a memory space's place in the
description, an array access's feedback figures (reuse, caches: symbolic and numeric), a
foreach's par_group and its unit limits in the description, and a description's
resolved definition."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.lsp import lookup
from mcl.lsp.convert import contains
from mcl.lsp.worker import MessageRecord
from mcl.mcpl import ast
from mcl.mcpl.builtins import Builtin
from mcl.mcpl.nesting import ARRAY, PARAMETER, SCALAR, default_space
from mcl.mcpl.printer import print_expr, print_param, print_type
from mcl.mcpl.sidetables import Binding, SideTables
from mcl.mcpl.visitor import unknown_node

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program


def kernel_hover(program: Program | None, tables: SideTables, library: Any,
                 feedback: list[MessageRecord], path: Path, text: str, line: int,
                 character: int) -> str | None:
    from mcl.lsp.navigation import word_at

    module = lookup.module_at(program, path)
    if module is None:
        return None
    found = lookup.find(module, line, character)
    word = word_at(text, line, character)
    parts = [_node_text(found.innermost, word, found, tables, library, line)]
    access = found.innermost_of(ast.Index)
    if access is not None:
        parts += access_texts(access, feedback)
    return "\n\n---\n\n".join(p for p in parts if p) or None


def _node_text(node: ast.Node | None, word: str | None, found: lookup.Found,
               tables: SideTables, library: Any, line: int) -> str | None:
    """What the hover says of `node`, the innermost node around the cursor on `line`."""
    hwd = _description(library, found.function)
    foreach = found.innermost_of(ast.Foreach)
    declaring = found.innermost_of(ast.Decl, ast.Param)
    declared = tables.binding_declared_by(declaring) if declaring is not None else None
    match node:
        case ast.Name():
            bound = tables.binding_of(node)
            return variable_text(bound, hwd, _level(found, bound.node, hwd)) \
                if bound is not None else None
        case ast.Call() if word == node.func:
            bound = tables.binding_of(node)
            return call_text(bound.node if bound is not None else None, word)
        case ast.Function() if word == node.name:
            return call_text(node, word)
        case _ if hwd is not None and word is not None and hwd.memory_space(word) is not None \
                and (declaring is not None or isinstance(node, ast.Barrier)):
            return space_text(hwd, word)
        case _ if declared is not None and word == declared.name:
            return variable_text(declared, hwd, _level(found, declared.node, hwd))
        case _ if foreach is not None and (node is foreach or _on_header(foreach, line)):
            return foreach_text(foreach, hwd)
        case ast.Function() if hwd is not None:
            return description_text(hwd)
        case ast.Import() if library is not None and node.dotted in library:
            return description_text(library.get(node.dotted))
        case ast.HwdConst():
            return constant_text(node, library)
        case (None | ast.Call() | ast.Function() | ast.Import() | ast.Prim() | ast.NamedType()
              | ast.ArrayType() | ast.IntLit() | ast.FloatLit() | ast.BoolLit() | ast.Index()
              | ast.Field() | ast.Unary() | ast.Binary() | ast.Decl() | ast.ViewDecl()
              | ast.Assign() | ast.IncDec() | ast.CallStmt() | ast.Swap() | ast.If() | ast.For()
              | ast.Foreach() | ast.Barrier() | ast.Return() | ast.Block() | ast.Launch()
              | ast.Param() | ast.TypeDef() | ast.Module() | ast.View()):
            return None  # nothing to say of it
        case _:
            unknown_node(node, "hover")


def constant_text(node: ast.HwdConst, library: Any) -> str:
    """`gpu.hierarchy.blocks.block.threads.max_nr_units` = 1,024, resolved in its
    description (hdl.md: properties are inherited from the descriptions above)."""
    dotted = ".".join(node.path)
    name = node.path[0]
    if library is None or name not in library:
        return f"`{dotted}`: description `{name}` is not loaded"
    shown = constant_value(node, library)
    if shown is None:
        return f"`{dotted}`: no such property in `{name}`"
    return f"`{dotted}` = {shown} (hardware description `{name}`)"


def constant_value(node: ast.HwdConst, library: Any) -> str | None:
    """The value of a description constant as shown to the user; None if unknown."""
    if library is None or node.path[0] not in library:
        return None
    value = library.get(node.path[0]).value(node.path)
    if value is None:
        return None
    return _quantity(value) if hasattr(value, "unit") or isinstance(value, bool) \
        else _number(value)


def _on_header(foreach: ast.Foreach, line: int) -> bool:
    return foreach.span is not None and foreach.span.line == line + 1


def _description(library: Any, function: ast.Function | None) -> Any:
    if library is None or function is None or function.hwd not in library:
        return None
    return library.get(function.hwd)


def call_text(target: object, name: str) -> str:
    """The signature of a called function (as the checker resolved the call: the
    program's own function, else a built-in)."""
    if isinstance(target, ast.Function):
        params = ", ".join(print_param(p) for p in target.params)
        where = target.span.file if target.span is not None else ""
        return (f"```mcpl\n{target.hwd} {print_type(target.ret)} {target.name}({params})\n```"
                + (f"\n\n{where}" if where else ""))
    if isinstance(target, Builtin):
        return f"```mcpl\n{target.signature}\n```\n\nbuilt-in"
    return f"`{name}`: unknown function"


def space_text(hwd: Any, name: str) -> str:
    """A memory space: where the description declares it, which units share it."""
    from mcl.mcpl.nesting import scope_label

    space = hwd.memory_space(name)
    flags = [f for f, on in (("default", space.default), ("read-only", space.read_only)) if on]
    sharing = [g.name for g in hwd.shared_by(name)]
    lines = [f"**memory space** `{name}` of `{hwd.name}`"
             + (f" ({', '.join(flags)})" if flags else ""),
             "", f"- declared in {scope_label(space.scope)}"]
    if sharing:
        lines.append("- shared by the units of " + ", ".join(f"`{g}`" for g in sharing)
                     + f": `barrier({name})` orders their accesses")
    return "\n".join(lines)


def _level(found: lookup.Found, node: Any, hwd: Any) -> Any:
    """The par_group of the innermost foreach around the declaration `node` (None:
    outside all, and for parameters and declarations of another module: an imported
    constant)."""
    if hwd is None or isinstance(node, ast.Param) or node.span is None \
            or not lookup.in_file(node.span, Path(found.module.file)):
        return None
    chain = lookup.find(found.module, node.span.line - 1, node.span.column - 1).chain
    around = [n for n in chain if isinstance(n, ast.Foreach) and n is not node]
    return hwd.par_group(around[-1].group) if around else None


def variable_text(d: Binding, hwd: Any, level: Any = None) -> str:
    node = d.node
    if isinstance(node, ast.Foreach):
        return f"**{d.name}**: foreach index (`int`), one value per unit of `{node.group}`"
    if isinstance(node, ast.View):
        return f"**{d.name}**: view `{print_type(node.type)}`"
    typ = print_type(node.type) if hasattr(node, "type") else "?"
    spaces = tuple(getattr(node, "spaces", ()))
    if spaces:
        where = "memory space " + ", ".join(f"`{s}`" for s in spaces)
    else:
        space = default_space_of(node, hwd, level)
        where = f"memory space `{space.name}` (the default)" if space is not None \
            else "no memory space written"
    const = "const " if getattr(node, "const", False) else ""
    return f"**{d.name}**: {d.kind.value}, `{const}{typ}`, {where}"


def default_space_of(node: Any, hwd: Any, level: Any) -> Any:
    """The memory space a declaration without a modifier lives in (mcl.mcpl.nesting's
    rule, hdl.md 3.2), at `level` (the par_group around it); None without defaults."""
    if hwd is None:
        return None
    if isinstance(node, ast.Param):
        kind = PARAMETER
    else:
        kind = ARRAY if isinstance(getattr(node, "type", None), ast.ArrayType) else SCALAR
    return default_space(hwd, kind, level)


def foreach_text(foreach: ast.Foreach, hwd: Any) -> str:
    text = (f"**foreach** `{foreach.var}` over `{print_expr(foreach.count)}` units of "
            f"par_group `{foreach.group}`")
    group = hwd.par_group(foreach.group) if hwd is not None else None
    if group is None:
        return text
    lines = [text, "", f"in `{hwd.name}`: " + _count(group)]
    if group.unit is not None:
        lines.append(f"- unit: par_unit `{group.unit.name}`"
                     + _spaces(" with memory ", group.unit.spaces))
        for info in hwd.execution_units_for(group.unit.name):
            lines.append(f"- runs on `{info.node.path}`: {_number(info.slots)} slots each, "
                         f"{_number(info.nr_units)} units"
                         + (", in lock-step" if info.simd else ""))
    if group.spaces:
        lines.append(_spaces("- shared memory: ", group.spaces))
    return "\n".join(lines)


def _count(group: Any) -> str:
    if group.nr_units is not None:
        return f"exactly {_number(group.nr_units)} units"
    return f"at most {_number(group.max_nr_units)} units"


def _number(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, float) and value == float("inf"):
        return "unlimited"
    value = getattr(value, "value", value)
    return f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(
        value, float) else str(value)


def _spaces(prefix: str, spaces: list[Any]) -> str:
    return prefix + ", ".join(f"`{s.name}`" for s in spaces) if spaces else ""


def description_text(hwd: Any) -> str:
    lines = [f"**hardware description** `{hwd.name}`"
             + (f" (specializes `{hwd.parent}`)" if hwd.parent else ""), ""]
    for group in hwd.par_groups():
        unit = f", par_unit `{group.unit.name}`" if group.unit else ""
        lines.append(f"- par_group `{group.name}`: {_count(group)}{unit}"
                     + _spaces("; memory ", group.spaces))
    spaces = [s.name for s in hwd.memory_spaces()]
    if spaces:
        lines.append("- memory spaces: " + ", ".join(f"`{s}`" for s in spaces))
    if hwd.file:
        lines.append(f"\n{hwd.file}")
    return "\n".join(lines)


def access_texts(access: ast.Index, feedback: list[MessageRecord]) -> list[str]:
    """The feedback messages about this array access, each with its figures."""
    out = []
    for m in feedback:
        if m.span is None or access.span is None:
            continue
        if (m.span.line, m.span.column, m.span.end_line, m.span.end_column) != (
                access.span.line, access.span.column, access.span.end_line,
                access.span.end_column):
            continue
        lines = [f"**{m.code}** ({m.severity}): {m.text}"]
        for f in m.figures:
            number = "" if f.numeric is None else f" = {_figure(f.numeric)}"
            about = " (estimated)" if f.estimated else ""
            lines.append(f"- {f.name}: `{f.symbolic}`{number}{about}")
        out.append("\n".join(lines))
    return out


def _figure(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:.4g}"


def hdl_hover(hdl: Any, library: Any, line: int, character: int) -> str | None:
    """In an .hdl file: the block under the cursor, or the block a reference names,
    resolved in the description's library."""
    from mcl.hdl.syntax import BlockStmt, RefStmt

    if hdl is None:
        return None
    if contains(hdl.name_span, line, character) and library is not None \
            and hdl.name in library:
        return description_text(library.get(hdl.name))
    if hdl.parent and contains(hdl.parent_span, line, character) and library is not None \
            and hdl.parent in library:
        return description_text(library.get(hdl.parent))
    stack = list(hdl.blocks)
    while stack:
        node = stack.pop()
        if isinstance(node, BlockStmt):
            if contains(node.name_span, line, character):
                return _block_text(hdl, node, library)
            stack.extend(node.body)
        elif isinstance(node, RefStmt) and contains(node.span, line, character):
            return _reference_text(hdl, node, library)
    return None


def _block_text(hdl: Any, block: Any, library: Any) -> str:
    text = f"**{block.kind}** `{block.name}`"
    hwd = library.get(hdl.name) if library is not None and hdl.name in library else None
    if hwd is not None:
        if block.kind == "par_group" and hwd.par_group(block.name) is not None:
            return text + "\n\n" + _count(hwd.par_group(block.name))
        for node in hwd.device.walk():
            if node.name == block.name:
                return text + "\n\n" + _device_text(node)
    return text


def _reference_text(hdl: Any, ref: Any, library: Any) -> str:
    parts = list(ref.name.parts)
    name = parts[-1]
    hwd = library.get(hdl.name) if library is not None and hdl.name in library else None
    text = f"reference `{'.'.join(parts)}`"
    if hwd is None:
        return text
    for candidate in (hwd, *hwd.lineage.values()):
        for node in candidate.device.walk():
            if node.name == name:
                return f"{text}: resolved in `{candidate.name}`\n\n" + _device_text(node)
        group = candidate.par_group(name)
        if group is not None:
            return f"{text}: par_group of `{candidate.name}`, {_count(group)}"
        space = next((s for s in candidate.memory_spaces() if s.name == name), None)
        if space is not None:
            return f"{text}: memory space of `{candidate.name}`"
    return text


def _quantity(value: Any) -> str:
    from mcl.hdl.units import format_quantity

    if isinstance(value, bool):
        return "true" if value else "false"
    return format_quantity(value.value, value.unit)


def _device_text(node: Any) -> str:
    lines = [f"`{node.path}` ({node.kind})"]
    lines += [f"- {k} = {_quantity(v)}" for k, v in node.values.items()]
    lines += [f"- {flag}" for flag in sorted(node.flags)]
    return "\n".join(lines)
