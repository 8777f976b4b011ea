"""Code generation's lowering passes: the rewrites of a checked leaf-level program, in the
order they run, before the emitter prints it (docs/codegen.md, "Passes").

    LOWERING                          the passes every backend runs, in order
    backend_passes(backend)           those a backend adds after them (`lowering_passes`)
    lower(checked, context, passes)   run `passes`, each dumped with MCL_DUMP=after:NAME

Each pass is a function CheckedProgram -> CheckedProgram: a tree-to-tree rewrite whose
result is MCPL again (so `MCL_DUMP=after:<pass>` prints it as the parser reads it), with
the checker's side tables following it (`SideTables.rewrite`; the nodes a pass builds are
typed as they are built, `mcl.mcpl.typed.Typed`): the emitter reads the types of the
program it is given, and never types anything itself.

What the emitter decides while it prints -- `#pragma unroll` (unroll.py), vector copies
(vectorize.py), the lanes of a CPU leaf as OpenCL vectors (lanes.py), the split of a
function into host statements and kernels -- has no MCPL form (a pragma, a `float4`, a
launch), so it stays in the emitter.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from mcl.codegen.kernel_views import views_into_kernels
from mcl.diagnostics import MclError, error
from mcl.hdl.model import Quantity
from mcl.identity import Ref
from mcl.mcpl.ast import Decl, FloatLit, Function, HwdConst, IntLit, Module, has_foreach
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.dump import dump_program
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.typed import Typed
from mcl.mcpl.types import INT_MAX, INT_MIN
from mcl.mcpl.unit_scalars import counts_on_host

if TYPE_CHECKING:
    from mcl.codegen.host_eval import Number
    from mcl.translate.levels import Library


@dataclass(frozen=True)
class LoweringContext:
    """What the passes know besides the program: the leaf, the library of descriptions
    and the values `mcl tune` or a `.tuned.toml` gives named constants."""

    target: str
    library: Library
    overrides: Mapping[str, Number] = field(default_factory=dict)


@dataclass(frozen=True)
class LoweringPass:
    """A named rewrite of a checked program (its name is MCL_DUMP's `after:NAME`)."""

    name: str
    run: Callable[[CheckedProgram, LoweringContext], CheckedProgram]
    summary: str  # one line: what the pass rewrites


# ---------------------------------------------------------------------- the passes


def resolve_hwd_constants(module: Module, library: Library, tables: SideTables) -> Module:
    """`gpu.hierarchy.blocks.block.threads.max_nr_units` -> 1024 (a pure pass; `tables`,
    the checker's of `module`, follow it: each literal is built typed)."""
    typed = Typed(tables)

    def fold(node: object) -> object | None:
        if not isinstance(node, HwdConst):
            return None
        value: object = library.get(node.path[0]).value(node.path)  # a Quantity's number below
        if isinstance(value, Quantity):
            value = value.value
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise MclError(
                error(
                    "codegen-hwd-constant",
                    f"{'.'.join(node.path)} has no finite numeric value ({value!r})",
                    node.span,
                )
            )
        if float(value).is_integer():
            if not INT_MIN <= value <= INT_MAX:
                # hopper's 80 GB of memory in bytes: as a C literal it would be a long.
                raise MclError(
                    error(
                        "codegen-int-range",
                        f"{'.'.join(node.path)} = {int(value)} does not fit in a 32-bit int",
                        node.span,
                        "compute with a smaller unit, or pass the value as a parameter",
                    )
                )
            return typed.int_lit(int(value), node.span)
        return typed.float_lit(float(value), node.span)

    return tables.rewrite(module, fold)


def override_constants(constants: list[Decl], overrides: Mapping[str, Number],
                       typed: Typed, known: set[str] | None = None) -> list[Decl]:
    """The top-level constants with the values of `overrides` (by name), literals built
    by `typed`; `known`: the names a program defines (default: those of `constants`)."""
    known = {c.name for c in constants} if known is None else known
    for name in overrides:
        if name not in known:
            raise MclError(
                error(
                    "codegen-unknown-constant",
                    f"the kernel has no top-level constant '{name}' to set",
                    hint="named constants: " + (", ".join(sorted(known)) or "none"),
                )
            )
    out = []
    for c in constants:
        if c.name in overrides:
            value = overrides[c.name]
            lit: IntLit | FloatLit = (
                typed.float_lit(float(value), c.span)
                if isinstance(value, float)
                else typed.int_lit(int(value), c.span)
            )
            c = replace(c, init=lit)
        out.append(c)
    return out


def _with_main(checked: CheckedProgram, rewrite: Callable[[Module], Module],
               every_module: bool = False) -> CheckedProgram:
    """`checked` with its main module (or, `every_module`, each module) rewritten."""
    program = checked.program
    main = program.main
    modules = {name: rewrite(m) if every_module or m is main else m
               for name, m in program.modules.items()}
    new_main = next((new for (name, new) in modules.items()
                     if program.modules[name] is main), None)
    if new_main is None:  # a main module the modules do not list
        new_main = rewrite(main)
    return replace(checked, program=replace(program, main=new_main, modules=modules))


def resolve_constants(checked: CheckedProgram, context: LoweringContext) -> CheckedProgram:
    """Description constants of the main module (`gpu.hierarchy...max_nr_units`) become
    the literals of the leaf's values (`resolve_hwd_constants`)."""
    return _with_main(
        checked, lambda m: resolve_hwd_constants(m, context.library, checked.tables))


def override_named_constants(checked: CheckedProgram, context: LoweringContext
                             ) -> CheckedProgram:
    """Named constants take the values of `context.overrides` (`mcl tune`, a
    `.tuned.toml`): as if the MCPL said so, in every module that defines them."""
    if not context.overrides:
        return checked
    known = {c.name for m in checked.program.modules.values() for c in m.constants}
    known |= {c.name for c in checked.main.constants}
    typed = Typed(checked.tables)
    return _with_main(checked, lambda m: replace(m, constants=tuple(override_constants(
        list(m.constants), context.overrides, typed, known))), every_module=True)


def kernel_views(checked: CheckedProgram, context: LoweringContext) -> CheckedProgram:
    """Views declared outside all foreach are declared again in each kernel after them
    (mcl.codegen.kernel_views), in the functions that become kernels at the leaf."""
    def lowered(f: Function) -> Function:
        return views_into_kernels(f) if has_foreach(f) and f.hwd == context.target else f

    return _with_main(checked, lambda m: replace(
        m, functions=tuple(lowered(f) for f in m.functions)))


def host_counts(checked: CheckedProgram, context: LoweringContext) -> CheckedProgram:
    """A foreach count that reads a scalar declared between foreach levels reads its
    initialiser instead (mcl.mcpl.unit_scalars): the host computes the launch's sizes, and
    that scalar lives in the units."""
    tables = checked.tables

    def lowered(f: Function) -> Function:
        if not (has_foreach(f) and f.hwd == context.target):
            return f
        counts = counts_on_host(f.body, tables.rewrite)
        if not counts:
            return f
        return tables.rewrite(f, lambda node: counts.get(Ref(node)))

    return _with_main(checked, lambda m: replace(
        m, functions=tuple(lowered(f) for f in m.functions)))


# The passes every backend runs, in the order they run; a backend adds its own after
# them (`lowering_passes`, mcl.codegen.backend).
LOWERING: tuple[LoweringPass, ...] = (
    LoweringPass("resolve-constants", resolve_constants,
                 "description constants become the leaf's values"),
    LoweringPass("override-constants", override_named_constants,
                 "named constants take the values of mcl tune or a .tuned.toml"),
    LoweringPass("kernel-views", kernel_views,
                 "views outside all foreach are declared again in each kernel"),
    LoweringPass("host-counts", host_counts,
                 "a count that reads a scalar declared between foreach levels reads its "
                 "initialiser"),
)


def backend_passes(backend: object) -> tuple[LoweringPass, ...]:
    """The passes `backend` adds after LOWERING: its `lowering_passes`, where it has any
    (an optional member of mcl.codegen.backend.Backend)."""
    return tuple(getattr(backend, "lowering_passes", ()))


def lower(checked: CheckedProgram, context: LoweringContext,
          passes: tuple[LoweringPass, ...] = LOWERING) -> CheckedProgram:
    """`checked` through `passes` in order, each result printed as MCPL when MCL_DUMP
    asks for it. The side tables are copied first: the caller's stay as they were."""
    checked = replace(checked, tables=checked.tables.copy())
    for p in passes:
        checked = p.run(checked, context)
        dump_program(p.name, checked.program, context.target)
    return checked
