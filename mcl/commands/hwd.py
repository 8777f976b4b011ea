"""`mcl hwd list | show NAME | path FROM TO | detect`: look at the hardware descriptions
(`detect` writes one for the local machine: mcl/commands/hwd_detect.py).

`list` prints the hierarchy of descriptions as a tree (the paper's Fig. 4), `show` one
resolved description (its parallelism hierarchy and its device: memories, caches,
execution units and slots), `path` the descriptions a kernel passes through when it is
translated from one level down to another. All read the bundled library plus
`--hwd-path DIR` (repeatable) and $MCL_HWD_PATH.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from mcl.commands.options import add_hwd_path_argument, library_from_args
from mcl.styled import text_console
from mcl.tables import print_table

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.hdl.model import DeviceNode, HardwareDescription, MemorySpace, ParGroup, Quantity


def register(sub: argparse._SubParsersAction) -> None:
    hwd = sub.add_parser(
        "hwd",
        help="list, show and relate hardware descriptions",
        description="Inspect the hardware descriptions (HDL) that kernels are written against.",
    )
    hwd_sub = hwd.add_subparsers(dest="hwd_command", metavar="SUBCOMMAND")
    hwd.set_defaults(func=lambda args: _missing_subcommand(hwd))

    p = hwd_sub.add_parser("list", help="the hierarchy of descriptions as a tree",
                           description="Print the hierarchy of hardware descriptions as a tree "
                           "(leaves, marked, are the levels code is generated from).")
    _add_format(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run_list)

    p = hwd_sub.add_parser("show", help="one resolved description",
                           description="Show a resolved description: its parallelism hierarchy "
                           "and its device (memories, caches, interconnects, execution units "
                           "and their slots).")
    p.add_argument("name", metavar="NAME", help="description name, e.g. fermi")
    _add_format(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run_show)

    p = hwd_sub.add_parser("path", help="the descriptions from one level down to another",
                           description="Print the descriptions a kernel passes through when "
                           "translated from FROM down to TO (the paper's Appendix A.1).")
    p.add_argument("frm", metavar="FROM", help="the higher level, e.g. perfect")
    p.add_argument("to", metavar="TO", help="the lower level, e.g. fermi")
    add_hwd_path_argument(p)
    p.set_defaults(func=run_path)

    from mcl.commands.hwd_detect import register as register_detect

    register_detect(hwd_sub)

    from mcl.commands import hwd_import

    hwd_import.register(hwd_sub)


def _missing_subcommand(parser: argparse.ArgumentParser) -> int:
    """`mcl hwd` alone: usage on stderr and exit status 2, as `mcl` alone."""
    import sys

    parser.print_usage(sys.stderr)
    print("mcl hwd: error: a subcommand is required: list, show, path or detect", file=sys.stderr)
    return 2


def _add_format(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or one JSON document on stdout (schema shipped in "
                   "mcl/schemas/, with schema_version)")


def _json(document: dict) -> None:
    import json

    from mcl.schemas import SCHEMA_VERSION

    print(json.dumps({"schema_version": SCHEMA_VERSION, **document}, indent=2))


def _number(value: float | int | None) -> float | int | None:
    """JSON has no infinity: unlimited is null."""
    return None if value is None or value == float("inf") else value


def _library(args: argparse.Namespace, *, failures: bool = False) -> HwdLibrary:
    """The library, its warnings rendered; with `failures`, the errors of every description
    that did not load in full instead of the one-line warning about each."""
    from mcl.render import render_diagnostics

    library = library_from_args(args)
    if getattr(args, "format", "text") == "json":
        return library  # the document carries the diagnostics
    shown = [w for w in library.warnings if not (failures and w.code == "hdl-not-loaded")]
    if failures:
        shown += [d for name in sorted(library.failed) for d in library.failed[name]]
    if shown:
        render_diagnostics(shown)
    return library


def _console() -> Console:
    return text_console()


# ------------------------------------------------------------------ list


def run_list(args: argparse.Namespace) -> int:
    """The tree of what loads; the errors of what does not, and exit status 1 then."""
    from mcl.resources import hwdescs_dir

    library = _library(args, failures=True)
    if args.format == "json":
        return _list_json(library)
    roots = [n for n in library.names() if library.parent(n) is None]
    console = _console()
    user = [str(p) for p in library.sources if p != hwdescs_dir()]
    if user:
        bundled = hwdescs_dir() in library.sources
        console.print(Text(("bundled descriptions and " if bundled else "only ")
                           + ", ".join(user), style="dim"), soft_wrap=True)
    for root in roots:
        tree = Tree(_list_label(library, root))
        _add_children(library, root, tree)
        console.print(tree)
    if library.failed:
        names = ", ".join(sorted(library.failed))
        console.print(Text(f"did not load: {names} (errors above)", style="bold red"))
        return 1
    return 0


def _list_json(library: HwdLibrary) -> int:
    from mcl.render import diagnostic_to_json

    _json({
        "sources": [str(p) for p in library.sources],
        "descriptions": [{"name": n, "parent": library.parent(n), "leaf": library.is_leaf(n),
                          "file": library.get(n).file} for n in library.names()],
        "failed": [{"name": n, "diagnostics": [diagnostic_to_json(d) for d in diags]}
                   for n, diags in sorted(library.failed.items())],
        "warnings": [diagnostic_to_json(d) for d in library.warnings
                     if d.code != "hdl-not-loaded"],
    })
    return 1 if library.failed else 0


def _list_label(library: HwdLibrary, name: str) -> Text:
    label = Text(name, style="bold")
    if library.is_leaf(name):
        label.append("  (leaf)", style="green")
    return label


def _add_children(library: HwdLibrary, name: str, tree: Tree) -> None:
    for child in library.children(name):
        _add_children(library, child, tree.add(_list_label(library, child)))


# ------------------------------------------------------------------ path


def run_path(args: argparse.Namespace) -> int:
    library = _library(args)
    _console().print(" → ".join(library.path(args.frm, args.to)))
    return 0


# ------------------------------------------------------------------ show


def run_show(args: argparse.Namespace) -> int:
    library = _library(args)
    hwd = library.get(args.name)
    if args.format == "json":
        return _show_json(hwd)
    console = _console()
    head = Text(hwd.name, style="bold")
    if hwd.parent:
        head.append(f"  specializes {hwd.parent}")
    head.append(f"  ({hwd.file})", style="dim")
    console.print(head)
    console.print(_hierarchy_tree(hwd))
    console.print(_device_tree(hwd))
    print_table(console, _memory_table(hwd))
    print_table(console, _execution_table(hwd))
    functions = hwd.feedback_functions()
    if functions:
        console.print("performance feedback: " + ", ".join(
            f"{name} (on {node.path})" for name, node in functions))
    return 0


def _show_json(hwd: HardwareDescription) -> int:
    groups = []
    for group in hwd.par_groups():
        groups.append({
            "name": group.name, "count": _number(group.count), "exact": group.exact,
            "unit": group.unit.name if group.unit else None,
            "memory_spaces": [s.name for s in group.spaces],
            "unit_memory_spaces": [s.name for s in group.unit.spaces] if group.unit else [],
        })
    memories = [{
        "block": info.node.path, "kind": info.node.kind, "spaces": list(info.spaces),
        "capacity": _number(info.capacity), "line_size": _number(info.line_size),
        "nr_banks": _number(info.nr_banks), "addressable": info.addressable,
        "resides_on": info.resides_on.path if info.resides_on else None,
    } for info in hwd.memories() + hwd.caches()]
    execution = [{
        "par_unit": unit.name, "runs_on": info.node.path, "slots": _number(info.slots),
        "units": _number(info.nr_units), "lock_step": info.simd,
    } for unit in hwd.par_units() for info in hwd.execution_units_for(unit.name)]
    _json({
        "name": hwd.name, "parent": hwd.parent, "file": hwd.file,
        "memory_spaces": [s.name for s in hwd.parallelism.spaces],
        "par_groups": groups, "memories": memories, "execution": execution,
        "feedback_functions": [{"name": name, "on": node.path}
                               for name, node in hwd.feedback_functions()],
    })
    return 0


def _space_label(space: MemorySpace) -> Text:
    text = Text("memory_space ", style="dim") + Text(space.name, style="cyan")
    flags = [f for f in ("default", "read_only") if getattr(space, f)]
    if flags:
        text.append(f"  ({', '.join(flags)})")
    return text


def _count(group: ParGroup) -> str:
    value = "unlimited" if group.count == float("inf") else f"{group.count:g}"
    return f"exactly {value}" if group.exact else f"at most {value}"


def _hierarchy_tree(hwd: HardwareDescription) -> Tree:
    tree = Tree(Text("parallelism hierarchy", style="bold"))
    for space in hwd.parallelism.spaces:
        tree.add(_space_label(space))
    node = tree
    executing = hwd.executing_unit() if hwd.par_units() else None
    for group in hwd.par_groups():
        node = node.add(Text("par_group ", style="dim") + Text(group.name, style="bold")
                        + Text(f"  ({_count(group)})"))
        for space in group.spaces:
            node.add(_space_label(space))
        if group.unit is None:
            break
        label = Text("par_unit ", style="dim") + Text(group.unit.name, style="bold")
        if group.unit is executing:
            label.append("  (executing unit)", style="green")
        node = node.add(label)
        for space in group.unit.spaces:
            node.add(_space_label(space))
    return tree


def _quantity(q: Quantity | bool) -> str:
    from mcl.hdl.units import format_quantity

    if isinstance(q, bool):
        return "true" if q else "false"
    return format_quantity(q.value, q.unit)


def _arg(value: object) -> str:
    from mcl.hdl.model import Quantity

    match value:
        case Quantity():
            return _quantity(value)
        case float() if value == float("inf"):
            return "unlimited"
        case bool():
            return str(value)
        case int() | float():
            return f"{value:g}"
    return str(value)


def _device_label(node: DeviceNode) -> Text:
    label = Text(f"{node.kind} ", style="dim") + Text(node.name, style="bold")
    details = [f"{k} = {_quantity(v)}" for k, v in node.values.items()]
    details += sorted(node.flags)
    for prop, args in node.args.items():
        if prop == "op":
            details.append("ops " + " ".join(f"{a[0]}:{_arg(a[1])}" for a in args if len(a) == 2))
        else:
            details += [f"{prop}({', '.join(_arg(a) for a in arg)})" for arg in args]
    if details:
        label.append("  " + "; ".join(details))
    return label


def _device_tree(hwd: HardwareDescription) -> Tree:
    def add(tree: Tree, node: DeviceNode) -> None:
        for child in node.children:
            add(tree.add(_device_label(child)), child)

    root = Tree(_device_label(hwd.device))
    add(root, hwd.device)
    return root


def _memory_table(hwd: HardwareDescription) -> Table:
    table = Table(title="memories and caches", title_justify="left", show_edge=False)
    for column in ("block", "kind", "holds", "capacity", "line", "banks", "on"):
        table.add_column(column)
    for info in hwd.memories() + hwd.caches():
        def q(v: float | int | None) -> str:
            from mcl.hdl.units import format_quantity

            return "" if v is None else format_quantity(v, "B")

        table.add_row(
            info.node.path,
            info.node.kind + ("" if info.addressable else " (registers)"),
            ", ".join(info.spaces),
            q(info.capacity),
            q(info.line_size),
            "" if info.nr_banks is None else f"{info.nr_banks:g}",
            info.resides_on.path if info.resides_on else "",
        )
    return table


def _execution_table(hwd: HardwareDescription) -> Table:
    table = Table(title="execution slots per par_unit", title_justify="left", show_edge=False)
    for column in ("par_unit", "runs on", "slots each", "units", "lock-step"):
        table.add_column(column)
    for unit in hwd.par_units():
        for info in hwd.execution_units_for(unit.name):
            table.add_row(unit.name, info.node.path, _arg(info.slots), _arg(info.nr_units),
                          "yes" if info.simd else "")
    return table
