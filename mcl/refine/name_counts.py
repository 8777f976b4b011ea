"""name-counts: make the unit counts a function computes before its foreach loops named
constants of the file, the counts read from the hardware description's `max_nr_units`
(the block size) with `// tune:` values.

Translation splits a foreach over a level's groups with counts it declares at the top of
the function (the paper's Fig. 9: `int nrThreadsM =
gpu.hierarchy.blocks.block.threads.max_nr_units;`, then the warps of it at hopper). As
locals they are invisible to the refinements that read named constants: set-constant
cannot choose another block size, and stage-tile cannot size a tile by the block's
units. Named, the program is the same (the model's estimate does not change), but both
can act on it: a step that is neutral on its own and enables the next (the search looks
one step past it, mcl.refine.search).

    int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;      (1024)
    int nrThreadsTj = hopper.hierarchy.blocks.block.warps.warp.threads.nr_units;
    int nrWarpsTj = nrThreadsM / nrThreadsTj;
becomes, above the function,
    // tune: 32, 64, 128, 256, 512, 1024
    // require: NR_THREADS_M % NR_THREADS_TJ == 0
    const int NR_THREADS_M = 1024;
    const int NR_THREADS_TJ = 32;
    const int NR_WARPS_TJ = NR_THREADS_M / NR_THREADS_TJ;
with every use of the locals reading the constants. A count read from `max_nr_units` is
the largest the level allows, any smaller one is a choice: its tune values are the powers
of two up to it that the `require` rules allow (a division of two counts that the
translation made assumes it divides: a remainder would leave units without work). A
count the description fixes (`nr_units`, a warp's threads) is not tuned."""

from __future__ import annotations

import re
from collections.abc import Mapping

from mcl.mcpl import ast
from mcl.mcpl.printer import print_expr
from mcl.refine.edits import TextEdit, deleting_line
from mcl.refine.kernel import KernelAtLevel
from mcl.refine.places import every_name
from mcl.refine.refinement import Proposal, Refinement, Refused
from mcl.translate.counts import StaticInts


class NameCounts(Refinement):
    name = "name-counts"
    summary = ("make the unit counts the function computes before its foreach loops "
               "named constants, the block size with tune values")
    parameters = ()
    # The program stays the same, so the model estimates no gain: it is applied by name,
    # or by the search as a step that enables others (`enables`).
    listed = False
    enables = True
    preconditions = (
        "the function declares `int` counts among its first statements, before any "
        "foreach, that are never assigned again and are declared once: each from a "
        "description constant, a named constant or an earlier such count, not from a "
        "parameter",
        "each such declaration stands alone on its line",
        "the constants' names (the counts' in capitals, `nrThreadsM` -> `NR_THREADS_M`) "
        "are not taken in the file",
    )

    def proposals(self, kernel: KernelAtLevel) -> list[Proposal | Refused]:
        try:
            return [self.propose(kernel, {})]
        except Refused as refused:
            return [refused]

    def propose(self, kernel: KernelAtLevel, args: Mapping[str, str]) -> Proposal:
        function = kernel.source_function
        if function.span is None or not kernel.in_file(function.span):
            raise Refused(f"{function.name} is not written in {kernel.path.name}")
        counts = static_counts(kernel)
        if not counts:
            raise Refused(f"{function.name} declares no count before its foreach loops that "
                          "is constant without its parameters")
        taken = every_name(function) | {c.name for c in kernel.constants()} \
            | {f.name for f in kernel.source.program.main.functions}
        names = {decl.name: _constant_name(decl.name) for decl, _ in counts}
        clash = sorted(n for n in names.values() if n in taken)
        if clash or len(set(names.values())) < len(names):
            raise Refused(f"the constants' names {', '.join(clash or names.values())} are "
                          "taken in the file")
        edits = [TextEdit.inserting(function.span.line, 1,
                                    _constants_text(counts, names) + "\n")]
        for decl, _ in counts:
            edits.append(deleting_line(kernel.text, decl))
        removed = [decl for decl, _ in counts]
        for stmt in function.body.stmts:
            if any(stmt is decl for decl in removed):
                continue  # its line goes, uses in it with it
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name) and node.name in names \
                        and node.span is not None:
                    edits.append(TextEdit.replacing(node.span, names[node.name]))
        what = ", ".join(f"{old} -> {new}" for old, new in names.items())
        return Proposal(self.name, (), function.span.line,
                        f"the counts named constants ({what})", tuple(edits),
                        group=self.name)


def static_counts(kernel: KernelAtLevel) -> list[tuple[ast.Decl, int]]:
    """The leading `int` declarations of the function (before its first foreach) whose
    values are constant without its parameters, with those values, in order."""
    from mcl.translate.counts import host_constants

    function = kernel.source_function

    descriptions = {name: kernel.library.get(name) for name in kernel.library.names()}
    # host_constants binds only counts never assigned again and declared once
    statics = host_constants(function, kernel.source.program.main, StaticInts(descriptions, {}))
    params = {p.name for p in function.params}
    out: list[tuple[ast.Decl, int]] = []
    for stmt in function.body.stmts:
        if isinstance(stmt, ast.Foreach) or any(isinstance(n, ast.Foreach)
                                                 for n in ast.walk(stmt)):
            break
        if not isinstance(stmt, ast.Decl) or stmt.init is None \
                or not isinstance(stmt.type, ast.Prim) or stmt.type.name != "int":
            continue
        reads = {n.name for n in ast.walk(stmt.init) if isinstance(n, ast.Name)}
        if reads & params:
            continue
        value = statics.value(ast.Name(stmt.name))
        if value is not None and value >= 1:
            out.append((stmt, value))
    return out


def _constant_name(local: str) -> str:
    """`nrThreadsM` -> `NR_THREADS_M`, `nrWarpsTj` -> `NR_WARPS_TJ`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", local).upper()


def _constants_text(counts: list[tuple[ast.Decl, int]], names: Mapping[str, str]) -> str:
    """The constants' declarations, each tuned block size with its tune and require
    lines, derived counts as expressions of the constants."""
    renamed = {decl.name: _renamed(decl.init, names) for decl, _ in counts if decl.init}
    rules: dict[str, list[str]] = {}
    for decl, _ in counts:
        init = decl.init
        if isinstance(init, ast.Binary) and init.op == "/" \
                and isinstance(init.left, ast.Name) and isinstance(init.right, ast.Name) \
                and init.left.name in names and init.right.name in names:
            rules.setdefault(init.left.name, []).append(
                f"{names[init.left.name]} % {names[init.right.name]} == 0")
    values = dict((decl.name, value) for decl, value in counts)
    lines: list[str] = []
    for decl, value in counts:
        init = decl.init
        assert init is not None
        if isinstance(init, ast.HwdConst) and init.path[-1] == "max_nr_units":
            lines.append(f"// At most {'.'.join(init.path)}; a smaller count is a choice.")
            lines.append("// tune: " + ", ".join(
                str(v) for v in _tune_values(value, decl.name, counts, values)))
            lines += [f"// require: {rule}" for rule in rules.get(decl.name, [])]
            lines.append(f"const int {names[decl.name]} = {value};")
        elif isinstance(init, ast.HwdConst):
            # The value, not the description constant: the tuner and the refinements
            # read a named constant's value from the file alone (mcl.tune.space).
            lines.append(f"// {'.'.join(init.path)}, fixed by the level.")
            lines.append(f"const int {names[decl.name]} = {value};")
        else:
            lines.append(f"const int {names[decl.name]} = {renamed[decl.name]};")
    return "\n".join(lines) + "\n"


def _tune_values(most: int, name: str, counts: list[tuple[ast.Decl, int]],
                 values: Mapping[str, int]) -> list[int]:
    """The powers of two up to `most` (and `most`) that every count dividing `name` in a
    declaration divides."""
    divisors = [values[d.init.right.name] for d, _ in counts
                if isinstance(d.init, ast.Binary) and d.init.op == "/"
                and isinstance(d.init.left, ast.Name) and d.init.left.name == name
                and isinstance(d.init.right, ast.Name) and d.init.right.name in values]
    candidates = sorted({1 << k for k in range(most.bit_length()) if 1 << k <= most} | {most})
    return [v for v in candidates if all(v % d == 0 for d in divisors)]


def _renamed(e: ast.Expr, names: Mapping[str, str]) -> str:
    """`e` printed with the counts' names replaced by the constants'."""
    printed = print_expr(e)
    for old, new in names.items():
        printed = re.sub(rf"\b{re.escape(old)}\b", new, printed)
    return printed
