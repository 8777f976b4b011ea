"""The MCPL checker: every rule of mcpl.md §5, as a pure function of a loaded program.

    check_program(program, library) -> list[Diagnostic]      errors and warnings, in order
    infer_access(program) -> {function: {param: "r" | "w" | "rw" | ""}}

`program` is a `mcl.mcpl.loader.Program` (the main module and all it imports); `library`
an HDL library (`mcl.hdl.library`) that gives each function its hardware description.
Module-level rules (hardware descriptions named, duplicate definitions, exports, top-level
constants, user types) are checked here; function bodies by `mcl.mcpl.check_function`;
read/write inference lives in `mcl.mcpl.access`. Nothing is mutated.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import Diagnostic, Severity, Span, did_you_mean, error
from mcl.hdl.model import HardwareDescription
from mcl.mcpl import ast
from mcl.mcpl import types as T
from mcl.mcpl.access import AccessTable, written_names
from mcl.mcpl.check_function import FunctionChecker
from mcl.mcpl.constfold import FoldError, fold
from mcl.mcpl.environment import ModuleEnv, resolve_callee
from mcl.mcpl.function_check import checked_function
from mcl.mcpl.function_flow import flow_diagnostics
from mcl.mcpl.positions import SourceText, head
from mcl.mcpl.recursion import recursion_errors
from mcl.mcpl.sidetables import SideTables

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import Program

__all__ = ["access_table", "check_program", "infer_access"]


def _library_names(library: HwdLibrary) -> set[str]:
    names = library.names
    return set(names() if callable(names) else names)


def access_table(program: Program) -> AccessTable:
    """Parameter access modes of every function of `program`, to a fixed point over calls
    (section 4.3: 'the whole call hierarchy has to be fully specified')."""
    functions: list[tuple[ast.Function, Any]] = []
    for module in program.modules.values():
        resolve = partial(resolve_callee, program, module)
        functions.extend((f, resolve) for f in module.functions)
    return AccessTable(functions)


def infer_access(program: Program) -> dict[str, dict[str, str]]:
    """For each function (by name; a function of the main module wins over a library
    function of the same name), the access mode of each parameter: "r", "w", "rw", or ""
    when the function never uses it."""
    table = access_table(program)
    result: dict[str, dict[str, str]] = {}
    ordered = [m for m in program.modules.values() if m is not program.main] + [program.main]
    for module in ordered:
        for f in module.functions:
            result[f.name] = table.params(f)
    return result


def integer_constants(module: ast.Module) -> dict[str, int]:
    """The module's integer constants (`const int TILE = 32;`), each folded with the ones
    before it: the barrier check reasons about subscripts such as `r * ROWS + w`."""
    found: dict[str, int] = {}
    for c in module.constants:
        try:
            value = fold(c.init, found.get) if c.init is not None else None
        except FoldError:
            value = None
        if isinstance(value, int) and not isinstance(value, bool):
            found[c.name] = value
    return found


def host_constants(f: ast.Function, constants: dict[str, int], library: HwdLibrary
                   ) -> dict[str, int]:
    """The integer scalars `f` declares before its foreach statements and never writes
    again, folded with `constants` and the values the hardware description states
    (translation writes `int nrThreadsTj = fermi.hierarchy....threads.nr_units;` and sizes
    the units' indices with it: the barrier check must see the 32)."""
    written = set(written_names(f.body))
    found: dict[str, int] = {}

    def value(e: ast.Expr) -> object:
        if isinstance(e, ast.HwdConst):
            if e.path[0] not in library.names():
                return None
            v = library.get(e.path[0]).value(e.path)
            return getattr(v, "value", v)
        try:
            return fold(e, lambda n: found.get(n, constants.get(n)))
        except FoldError:
            return None

    for s in f.body.stmts:
        if isinstance(s, ast.Foreach):
            break
        if isinstance(s, ast.Decl) and s.init is not None and s.name not in written \
                and not isinstance(s.type, ast.ArrayType):
            v = value(s.init)
            if isinstance(v, int | float) and not isinstance(v, bool) and float(v).is_integer():
                found[s.name] = int(v)
    return found


def check_program(program: Program, library: HwdLibrary, tables: SideTables | None = None,
                  flow: bool = True) -> list[Diagnostic]:
    """Check every module of `program` against mcpl.md §5; diagnostics sorted by position.
    With `tables`, record there the type of every expression and the declaration of
    every name (`mcl.mcpl.sidetables`; the pipeline's `CheckedProgram` holds them).
    `flow=False` leaves out the flow checks of the main module's functions (barriers,
    divergence, ...: mcl.mcpl.function_flow), which add diagnostics and nothing else."""
    tables = tables if tables is not None else SideTables()
    try:
        table = access_table(program)
        diags: list[Diagnostic] = []
        hwd_imports = program.hwd_imports
        for qualified, module in program.modules.items():
            env = ModuleEnv(program, module, library, table, tables)
            diags += _ModuleChecker(env, hwd_imports.get(qualified, ())).run()
        diags += recursion_errors(program)
        if flow and not any(d.severity is Severity.ERROR for d in diags):
            constants = integer_constants(program.main)
            for f in program.main.functions:
                known = constants | host_constants(f, constants, library)
                hwd = library.get(f.hwd) if f.hwd in library.names() else None
                diags += flow_diagnostics(f, known, hwd)
    except RecursionError:
        # The parser folds long operator chains without recursion; the walks over the tree
        # recurse, so a sum of thousands of terms is reported rather than crashing.
        return [
            error(
                "mcpl-too-deep",
                "the code is nested too deeply to check",
                head(program.main.span, 1),
                "split very long or deeply nested expressions into smaller pieces",
            )
        ]
    return sorted(diags, key=_position)


def _position(d: Diagnostic) -> tuple[str, int, int]:
    return (d.span.file, d.span.line, d.span.column) if d.span else ("", 0, 0)


class _ModuleChecker:
    def __init__(self, env: ModuleEnv, hwd_imports: tuple[str, ...]) -> None:
        self.env = env
        self.module = env.module
        self.hwd_imports = hwd_imports
        self.source = SourceText(self.module.file)
        self.library_names = _library_names(env.library)
        self.diags: list[Diagnostic] = []

    def run(self) -> list[Diagnostic]:
        self.check_hwd_imports()
        self.check_duplicates()
        self.check_exports()
        self.check_constants()
        for typedef in self.module.types:
            self.check_typedef(typedef)
        for function in self.module.functions:
            self.env.function_binding(function)
            hwd = self.hardware_description(function)
            self.diags += checked_function(self.env, function, hwd, self.source)
        return self.diags

    # -- hardware descriptions -----------------------------------------------------
    def unknown_hwd(self, name: str, span: Span | None, what: str) -> None:
        failed = getattr(self.env.library, "failed", {}).get(name)
        if failed:  # it exists but did not load: its own errors, where they are
            self.diags.append(error(
                "mcpl-hwd-not-loaded",
                f"hardware description '{name}' {what} did not load", span,
                "fix the errors in its file, shown below"))
            self.diags += [d for d in failed if d not in self.diags]
            return
        self.diags.append(
            error(
                "mcpl-unknown-hwd",
                f"unknown hardware description '{name}' {what}",
                span,
                did_you_mean(name, self.library_names)
                or "hardware descriptions: " + ", ".join(sorted(self.library_names)),
            )
        )

    def check_hwd_imports(self) -> None:
        for imp in self.module.imports:
            if len(imp.path) == 1 and imp.path[0] in self.hwd_imports:
                if imp.path[0] not in self.library_names:
                    where = self.source.word(imp.path[0], imp.span)
                    self.unknown_hwd(imp.path[0], where, "in import")

    def hardware_description(self, f: ast.Function) -> HardwareDescription | None:
        """The description a function is written for (section 4.3: 'it is possible to
        specify a hardware description per function')."""
        if f.hwd not in self.library_names:
            self.unknown_hwd(f.hwd, head(f.span, len(f.hwd)), f"for function '{f.name}'")
            return None
        return self.env.library.get(f.hwd)

    # -- definitions ------------------------------------------------------------------
    def check_duplicates(self) -> None:
        seen: dict[str, Any] = {}
        kinds = (
            ("constant", self.module.constants),
            ("type", self.module.types),
            ("function", self.module.functions),
        )
        for kind, definitions in kinds:
            for d in definitions:
                first = seen.get(d.name)
                if first is None:
                    seen[d.name] = d
                    continue
                line = f" (line {first.span.line})" if first.span else ""
                self.diags.append(
                    error(
                        "mcpl-duplicate",
                        f"{kind} '{d.name}' is defined twice in this module",
                        self.source.word(d.name, d.span),
                        f"the first definition{line} already uses the name; rename one",
                    )
                )

    def check_exports(self) -> None:
        if self.module.exports is None:
            return
        defined = {f.name for f in self.module.functions} | {t.name for t in self.module.types}
        defined |= {c.name for c in self.module.constants}
        for name in self.module.exports:
            if name not in defined:
                self.diags.append(
                    error(
                        "mcpl-unknown-export",
                        f"'{name}' is exported but not defined in this module",
                        self.source.word(name, self.module.span),
                        did_you_mean(name, defined) or "remove it from the export line",
                    )
                )

    def check_constants(self) -> None:
        """`const float PI = 3.14...;` — MCPL has no global variables (section 4.3)."""
        constants = ast.Function(
            "", ast.Prim("void"), "<constants>", (), ast.Block(()), span=self.module.span
        )
        checker = FunctionChecker(self.env, constants, None, self.source)
        for c in self.module.constants:
            self.env.constant_binding(c)
            # The grammar only admits `const` at the top (no global variables, section 4.3).
            if c.spaces:
                self.diags.append(
                    error(
                        "mcpl-constant-space",
                        f"constant '{c.name}' cannot have a memory space",
                        c.span,
                        "remove the memory-space modifier",
                    )
                )
            t = checker.resolve_type(c.type)
            if c.init is None:
                self.diags.append(
                    error(
                        "mcpl-constant-value",
                        f"constant '{c.name}' needs a value",
                        c.span,
                        f"write `const ... {c.name} = VALUE;`",
                    )
                )
                continue
            value = checker.expr(c.init)
            if not T.assignable(t, value):
                self.diags.append(
                    error(
                        "mcpl-type-mismatch",
                        f"cannot initialise constant '{c.name}' of type {t} with {value}",
                        c.init.span,
                        T.conversion_hint(t, value),
                    )
                )
        checker.record_bindings()
        self.diags += checker.diags

    def check_typedef(self, typedef: ast.TypeDef) -> None:
        """`type Complex { float real; float imag; }`, `type Tile(int n) { float[n] d; }`:
        field types resolve and sizes use the type's parameters or constants."""
        self.env.typedef_binding(typedef)
        for f in typedef.fields:  # before the walk below, which would make them variables
            self.env.field_binding(f)
        as_function = ast.Function(
            "",
            ast.Prim("void"),
            typedef.name,
            typedef.params,
            ast.Block(typedef.fields, span=typedef.span),
            span=typedef.span,
        )
        checker = FunctionChecker(self.env, as_function, None, self.source, fields=True)
        self.diags += checker.run()
