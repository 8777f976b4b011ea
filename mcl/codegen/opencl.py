"""The kernel emitter: an MCPL module at a leaf level -> kernel source in a backend's
language (OpenCL C, CUDA C++: its `Dialect`, mcl.backends) + launch plans.

The end of the paper's outer process (sections 4.4 and 7): "the compiler takes as input a
function written for hardware description fermi. It reads in the hardware description
fermi but also a configuration file that tells the compiler how the programming
abstractions defined in hardware description fermi can be mapped to OpenCL". Functions
written above the leaf are translated down first (4.4: "we can generate code for fermi
from a program written in gpu. First, the compiler translates the program to nvidia, then
it translates to fermi, and from there the compiler generates OpenCL and C++ code"): the
translation is mcl.pipeline's, which checks its result; this module takes a program whose
kernels are already at the leaf.

A function with foreach statements becomes one kernel per top-level foreach nest (one for
the usual function); statements outside all foreach run on the host (Fig. 9's dimension
statements) and compute launch sizes and scalar arguments. Functions the kernels call
become device functions, specialised per address space of their pointer parameters.
The emitter builds each function as a C syntax tree (mcl.codegen.ctree) and prints the
file from it; then the backend checks the text (`check_source`, mcl.codegen.backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mcl.codegen.c_expr import ExprPrinter, Needs, by_reference, instance_name
from mcl.codegen.constants import used_constants
from mcl.codegen.ctree import (
    CodeLine,
    Comment,
    Compound,
    Directive,
    FunctionDef,
    Node,
    TopNode,
    TranslationUnit,
    TreePrinter,
    Verbatim,
)
from mcl.codegen.host_eval import Number, static_host_values
from mcl.codegen.kernels import KernelEmitter
from mcl.codegen.layout import flat_dims, product
from mcl.codegen.mapping import OpenCLMapping
from mcl.codegen.passes import (
    LOWERING,
    LoweringContext,
    LoweringPass,
    backend_passes,
    lower,
)
from mcl.codegen.plan import (
    FunctionPlan,
    GeneratedModule,
    HostStmt,
    HostVar,
    KernelArg,
    Launch,
    ParamPlan,
)
from mcl.codegen.prelude import HELPERS
from mcl.codegen.scope import CScope, CVar, signature_only
from mcl.codegen.statements import BodyEmitter, SpaceResolver, element_type
from mcl.diagnostics import MclError, error
from mcl.hdl.model import HardwareDescription
from mcl.mcpl.ast import (
    ArrayType,
    Assign,
    Barrier,
    Block,
    Decl,
    For,
    Foreach,
    Function,
    If,
    IncDec,
    Module,
    NamedType,
    Prim,
    Return,
    Stmt,
    Type,
    TypeDef,
    ViewDecl,
    has_foreach,
    walk,
)
from mcl.mcpl.loader import Program, as_program
from mcl.mcpl.nesting import PARAMETER, SCALAR
from mcl.mcpl.sidetables import SideTables
from mcl.mcpl.visitor import StrictVisitor

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram
    from mcl.translate.levels import Library


@dataclass(frozen=True)
class CodegenInput:
    """What the emitter needs from a program: the (leaf-level) main module, every function,
    type and constant visible to it, and the read/write mode of every parameter."""

    module: Module
    functions: Mapping[str, Function]
    types: Mapping[str, TypeDef]
    constants: tuple[Decl, ...]
    access: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # The checker's side tables of `module`, with the nodes code generation builds.
    tables: SideTables = field(default_factory=SideTables)

    @property
    def name(self) -> str:
        """The name of the generated files: the `module` line, else the first kernel
        function (kernels/matmul/perfect.mcpl gives matmul.cl, not perfect.cl)."""
        if self.module.name:
            return self.module.name
        kernel = next((f.name for f in self.module.functions if has_foreach(f)), None)
        return kernel or (Path(self.module.file).stem if self.module.file else "module")


# ---------------------------------------------------------------------- program -> input


def codegen_input(
    checked: CheckedProgram, target: str, library: Library,
    overrides: Mapping[str, Number] | None = None
) -> CodegenInput:
    """Gather a checked program whose kernels are at leaf `target` for code generation,
    after the lowering passes every backend runs (mcl.codegen.passes.LOWERING: description
    constants replaced by their values, named constants given the values of `overrides`,
    `mcl tune`'s or a `.tuned.toml`'s, as if the MCPL said so, host code included). The
    checker's side tables of the program follow the rewrites."""
    return gather(lower_to_emit(checked, LoweringContext(target, library, overrides or {})))


def lower_to_emit(checked: CheckedProgram, context: LoweringContext,
                  passes: tuple[LoweringPass, ...] = LOWERING) -> CheckedProgram:
    """`checked`, whose kernels are at leaf `context.target`, through the lowering
    `passes` (a copy of its side tables following them)."""
    _require_at_leaf(checked.main, context.target, context.library)
    return lower(checked, context, passes)


def gather(lowered: CheckedProgram) -> CodegenInput:
    """What the emitter reads of a lowered program: every function, type and constant
    visible to the main module (its own definitions win) and the parameters' modes."""
    program = lowered.program
    main = program.main
    others: list[Module] = [m for m in program.modules.values() if m is not main]
    functions: dict[str, Function] = {}
    types: dict[str, TypeDef] = {}
    constants: list[Decl] = []
    for m in [*others, main]:  # the main module's own definitions win
        functions.update({f.name: f for f in m.functions})
        types.update({t.name: t for t in m.types})
        constants = [c for c in constants if c.name not in {d.name for d in m.constants}]
        constants += list(m.constants)
    return CodegenInput(main, functions, types, tuple(constants), _access(program),
                        lowered.tables)


def _access(program: Program) -> dict[str, dict[str, str]]:
    """Read/write modes of every parameter from the checker (paper 4.3: "the compiler can
    automatically infer which variables are constant or written")."""
    from mcl.mcpl.check import infer_access

    modes = infer_access(program)
    return {getattr(f, "name", f): dict(params) for f, params in modes.items()}


def _require_at_leaf(main: Module, target: str, library: Library) -> None:
    """Kernels written above the leaf are translated by the pipeline (mcl.pipeline.generate),
    which checks the translation; code generated here from them would be wrong."""
    ancestors = getattr(library, "ancestors", None)
    above = set(ancestors(target)) if ancestors is not None and target in library.names() \
        else set()
    for f in main.functions:
        if f.hwd in above and has_foreach(f):
            raise MclError(
                error(
                    "codegen-above-leaf",
                    f"'{f.name}' is written for {f.hwd}, above the leaf {target}: code is "
                    "generated from a program translated to the leaf",
                    f.span,
                    hint=f"translate it first (mcl.pipeline.generate does; on the command "
                    f"line: mcl translate FILE --to {target})",
                )
            )


# ---------------------------------------------------------------------- the emitter


@dataclass
class ModuleEmitter:
    """Emits the kernels and launch plans of one module."""

    source: CodegenInput
    hwd: HardwareDescription
    mapping: OpenCLMapping
    needs: Needs = field(default_factory=Needs)
    # What makes a kernel of a foreach nest: a backend whose kernels are shaped otherwise
    # (C loops over the work-groups, mcl.backends.openmp) gives its subclass here.
    kernel_emitter: ClassVar[type[KernelEmitter]] = KernelEmitter

    def __post_init__(self) -> None:
        self.spaces = SpaceResolver(self.mapping, self.hwd)
        self.uses_double = any(
            isinstance(n, Prim) and n.name == "double" for n in walk(self.source.module)
        )
        # The values of the named constants (trip counts of loops to unroll).
        self.constant_values = static_host_values((), self.source.constants)

    # ------------------------------------------------------------------ scopes
    def base_scope(self) -> CScope:
        scope = CScope(dict(self.source.types), dict(self.source.functions),
                      self.source.tables)
        for c in self.source.constants:
            scope.declare(CVar(c.name, c.type, "constant", None, kind="constant"))
        return scope

    def printer(self, scope: CScope) -> ExprPrinter:
        return ExprPrinter(
            scope,
            self.mapping.dialect,
            {k: dict(v) for k, v in self.source.access.items()},
            self.needs,
            "" if self.uses_double else "f",
        )

    def kernel_functions(self) -> list[Function]:
        """Functions with foreach statements at the target level; kernels written for
        another branch of the hierarchy (left unchanged by the translation) are not ours."""
        return [
            f for f in self.source.module.functions if has_foreach(f) and f.hwd == self.hwd.name
        ]

    # ------------------------------------------------------------------ module
    def emit(self, only: set[str] | None = None) -> GeneratedModule:
        plans: list[FunctionPlan] = []
        kernels: list[FunctionDef] = []
        for f in self.kernel_functions():
            if only is None or f.name in only:
                plan, trees = self.function(f)
                plans.append(plan)
                kernels += trees
        helpers, prototypes, emitted = self.helper_functions()
        parts: list[list[TopNode]] = [
            self.header(), *self.constant_defines(emitted), *self.struct_trees()]
        device = self.mapping.dialect.device_function
        parts += [[Verbatim(device + HELPERS[h])] for h in sorted(self.needs.helpers)]
        if prototypes:
            parts.append(list(prototypes))
        parts += [[f] for f in (*helpers, *kernels)]
        printer = TreePrinter(self.mapping.dialect)
        text = printer.unit(TranslationUnit(parts))
        return GeneratedModule(
            name=self.source.name,
            target=self.hwd.name,
            device_type=self.mapping.device_type,
            source=text,
            functions=tuple(plans),
            types=tuple(self.source.types.values()),
            constants=self.source.constants,
            uses_double=self.uses_double or self.needs.double,
            language=self.mapping.language,
            arch=self.mapping.arch,
            tables=self.source.tables,
            nesting=printer.nesting,  # of the functions, as the text has them
            wide_copies=dict(self.needs.wide_copies),
        )

    def header(self) -> list[TopNode]:
        file = Path(self.source.module.file).name if self.source.module.file else self.source.name
        dialect = self.mapping.dialect
        return [
            Comment(f"{dialect.title} generated by mcl from {file} for hardware description "
                    f"{self.hwd.name}"),
            Comment(f"(mapping: {Path(self.mapping.file).name})."
                    " Comments point back to the MCPL source."),
            *(Verbatim(line + "\n")
              for line in dialect.header(self.uses_double or self.needs.double)),
        ]

    def constant_defines(self, functions: list[Function]) -> list[list[TopNode]]:
        """Top-level constants used by the generated code, as macros (usable as sizes of
        private and __local arrays), each defined only where the build options did not
        define it already."""
        printer = self.printer(self.base_scope())
        lines: list[TopNode] = []
        for c in used_constants(self.source.constants, functions):
            if c.init is None:
                raise MclError(
                    error("codegen-constant", f"constant '{c.name}' has no value", c.span)
                )
            # Overridable with -D NAME=value when the kernel is built (Kernel Tuner
            # prepends its #defines), so one source serves other tile sizes.
            macro = CVar(c.name, c.type).cname
            lines += [
                Directive(f"#ifndef {macro}"),
                Directive(f"#define {macro} ({printer.expr(c.init)})", span=c.span),
                Directive("#endif"),
            ]
        return [lines] if lines else []

    def struct_trees(self) -> list[list[TopNode]]:
        trees: list[list[TopNode]] = []
        printer = self.printer(self.base_scope())
        for t in self.source.types.values():
            if t.params:
                raise MclError(
                    error(
                        "codegen-type-params",
                        f"type '{t.name}' has parameters; code "
                        "generation needs types of a fixed size",
                        t.span,
                    )
                )
            fields: list[Node] = []
            for d in t.fields:
                if isinstance(d.type, ArrayType):
                    size = printer.expr(product(flat_dims(d.type), printer.scope.typed))
                    fields.append(CodeLine(f"{element_type(d.type.element)} {d.name}[{size}];"))
                else:
                    fields.append(CodeLine(f"{element_type(d.type)} {d.name};"))
            trees.append([Compound([(CodeLine("typedef struct {", t.span), fields)],
                                   CodeLine(f"}} {t.name};"))])
        return trees

    # ------------------------------------------------------------------ kernels
    def function(self, f: Function) -> tuple[FunctionPlan, list[FunctionDef]]:
        if f.ret != Prim("void"):
            raise MclError(
                error("codegen-kernel-result", f"kernel '{f.name}' must return void", f.span)
            )
        scope = self.base_scope()
        modes = self.source.access.get(f.name, {})
        params: list[ParamPlan] = []
        param_args: list[tuple[str, KernelArg]] = []
        for p in f.params:
            is_array = isinstance(p.type, ArrayType)
            space, address_space = self.spaces.resolve(
                p.spaces, PARAMETER if is_array else SCALAR, p.span)
            element_t = p.type.element if isinstance(p.type, ArrayType) else p.type
            is_struct = isinstance(element_t, NamedType)
            written_scalar = not is_array and "w" in modes.get(p.name, "")
            written = "w" in (modes.get(p.name, "rw") or "r") if is_array else written_scalar
            var = scope.declare(
                CVar(p.name, p.type, address_space if is_array else "global" if written_scalar
                    else "private", space, by_pointer=written_scalar, kind="param",
                    readonly=not written)
            )
            if written_scalar:
                # A written scalar (a reduction's sum, a peak's location) is a result: the
                # original MCL passes it by pointer (paper 4.3), here a one-element __global
                # buffer the host copies in and back like an array's.
                one = scope.typed.int_lit(1)
                ctype = element_type(element_t, True)
                params.append(ParamPlan(p.name, element_t.name, True, one,
                                        modes.get(p.name, "rw"), is_struct, "global",
                                        scalar=True))
                dialect = self.mapping.dialect
                param_args.append((f"{dialect.qualifier('global')}{ctype}* {dialect.restrict} "
                                   f"{var.cname}",
                                   KernelArg(p.name, "buffer", element_t.name, one, is_struct)))
            elif isinstance(p.type, ArrayType):
                if address_space not in ("global", "constant"):
                    raise MclError(
                        error(
                            "codegen-param-space",
                            f"array parameter '{p.name}' is in memory space "
                            f"'{space}', which {self.mapping.file} maps to {address_space} memory; "
                            "kernel arrays must be __global or __constant",
                            p.span,
                        )
                    )
                mode = modes.get(p.name, "rw") or "r"
                const = "const " if var.readonly else ""
                dialect = self.mapping.dialect
                text = (
                    f"{dialect.qualifier(address_space)}{const}{element_type(element_t, True)}* "
                    f"{dialect.restrict} {var.cname}"
                )
                size = product(flat_dims(p.type), scope.typed)
                params.append(
                    ParamPlan(p.name, element_t.name, True, size, mode, is_struct, address_space)
                )
                param_args.append(
                    (text, KernelArg(p.name, "buffer", element_t.name, size, is_struct))
                )
            else:
                params.append(
                    ParamPlan(p.name, element_t.name, False, None, "r", is_struct, "private")
                )
                text = f"const {element_type(element_t, True)} {var.cname}"  # no bool arguments
                param_args.append(
                    (text, KernelArg(p.name, "scalar", element_t.name, None, is_struct))
                )
        host_body, nests, host_vars = split_host(f)
        for hv in host_vars.values():
            scope.declare(hv)
        body = BodyEmitter(
            self.printer(scope), self.mapping, self.spaces, constants=self.constant_values
        )
        static = static_host_values(host_body, self.source.constants)
        emitter = self.kernel_emitter(f, self.mapping, body, param_args, host_vars, static)
        trees, kernels = [], []
        for k, nest in enumerate(nests):
            name = (
                CVar(f.name, f.ret).cname if len(nests) == 1 else f"{CVar(f.name, f.ret).cname}_{k}"
            )
            tree, plan = emitter.emit(name, nest)
            trees.append(tree)
            kernels.append(plan)
        function_plan = FunctionPlan(
            f,
            tuple(params),
            tuple(HostVar(v.name, _scalar_name(v.type)) for v in host_vars.values()),
            host_body,
            tuple(kernels),
        )
        return function_plan, trees

    # ------------------------------------------------------------------ helpers
    def helper_functions(self) -> tuple[list[FunctionDef], list[CodeLine], list[Function]]:
        """Definitions and prototypes of every specialised MCPL function the kernels call
        (and the functions those call), plus the list of functions emitted."""
        done: dict[tuple[str, tuple[str, ...]], FunctionDef] = {}
        prototypes: list[CodeLine] = []
        emitted: list[Function] = self.kernel_functions()
        while pending := sorted(self.needs.instances - set(done)):
            for instance in pending:
                f = self.source.functions[instance[0]]
                tree = self.helper(f, instance[1])
                done[instance] = tree
                prototypes.append(CodeLine(tree.signature + ";"))
                emitted.append(f)
        return list(done.values()), prototypes, emitted

    def helper(self, f: Function, spaces: tuple[str, ...]) -> FunctionDef:
        if has_foreach(f):
            raise MclError(
                error(
                    "codegen-nested-kernel",
                    f"function '{f.name}' has foreach "
                    "statements and cannot be called from a kernel",
                    f.span,
                )
            )
        if signature_only(f):
            raise MclError(
                error(
                    "codegen-library-function",
                    f"library function '{f.name}' has no OpenCL built-in of that name",
                    f.span,
                )
            )
        scope = self.base_scope()
        modes = self.source.access.get(f.name, {})
        pointer_spaces = iter(spaces)
        params = []
        for p in f.params:
            if by_reference(p, modes):
                address_space = next(pointer_spaces)
                var = scope.declare(
                    CVar(p.name, p.type, address_space, None, by_pointer=True, kind="param")
                )
                element_t = p.type.element if isinstance(p.type, ArrayType) else p.type
                qualifier = self.mapping.dialect.qualifier(address_space)
                params.append(
                    f"{qualifier}{element_type(element_t, address_space != 'private')}* {var.cname}"
                )
            else:
                var = scope.declare(CVar(p.name, p.type, "private", None, kind="param"))
                params.append(f"{element_type(_not_array(p.type))} {var.cname}")
        ret = "void" if f.ret == Prim("void") else element_type(_not_array(f.ret))
        signature = (
            f"{self.mapping.dialect.device_function}{ret} "
            f"{instance_name(f.name, spaces)}({', '.join(params) or 'void'})"
        )
        body = BodyEmitter(
            self.printer(scope), self.mapping, self.spaces, constants=self.constant_values
        )
        for s in f.body.stmts:
            if isinstance(s, Barrier):
                raise MclError(
                    error(
                        "codegen-barrier",
                        "barriers stand in kernels, not in called functions",
                        s.span,
                    )
                )
        body.body(f.body)
        if body.specialised:
            raise MclError(
                error(
                    "codegen-private-array-size",
                    f"function '{f.name}' declares a "
                    "private array whose size depends on its parameters; OpenCL "
                    "needs a constant size there",
                    f.span,
                )
            )
        # The function's opening comment names its line.
        return FunctionDef(f.name, f.span, signature, body.out)


# ---------------------------------------------------------------------- host statements


def _not_array(t: Type) -> Prim | NamedType:
    """The type of a value passed by copy or returned: arrays go by reference
    (`by_reference`) and are never returned."""
    assert not isinstance(t, ArrayType)
    return t


def _scalar_name(t: Type) -> str:
    """The type name of a host variable: split_host keeps only scalars on the host."""
    assert isinstance(t, Prim)
    return t.name


def split_host(f: Function) -> tuple[tuple[HostStmt, ...], list[Foreach], dict[str, CVar]]:
    """Separate what runs on the host from the kernels: each top-level foreach becomes a
    Launch (kernel number k); the host variables are the scalars declared outside foreach.
    `f` is lowered (mcl.codegen.passes): its views outside foreach are in its kernels."""
    splitter = _HostSplitter()
    body = tuple(splitter.visit(s) for s in f.body.stmts)
    return body, splitter.nests, splitter.host_vars


class _HostSplitter(StrictVisitor):
    """The host side of a function's statements: every statement kind has a rule (a
    statement the host cannot run is a diagnostic); a new kind raises UnknownNodeError."""

    def __init__(self) -> None:
        self.nests: list[Foreach] = []
        self.host_vars: dict[str, CVar] = {}

    def visit_Foreach(self, s: Foreach) -> HostStmt:
        self.nests.append(s)
        return Launch(len(self.nests) - 1, span=s.span)

    def visit_ViewDecl(self, s: ViewDecl) -> HostStmt:
        # The `kernel-views` pass (mcl.codegen.kernel_views) has declared the views
        # outside all foreach in the kernels and left an empty block in their place.
        raise AssertionError(f"a view outside all foreach reached the host split ({s.span}): "
                             "split_host takes a function after the lowering passes")

    def visit_Decl(self, s: Decl) -> HostStmt:
        if isinstance(s.type, ArrayType) or isinstance(s.type, NamedType):
            raise MclError(
                error(
                    "codegen-host-decl",
                    f"'{s.name}' is declared outside all "
                    "foreach statements; only scalars can live on the host",
                    s.span,
                )
            )
        self.host_vars[s.name] = CVar(s.name, s.type, "private", None, kind="host")
        return s

    def visit_Assign(self, s: Assign) -> HostStmt:
        return s

    def visit_IncDec(self, s: IncDec) -> HostStmt:
        return s

    def visit_Block(self, s: Block) -> HostStmt:
        # A Launch stands where a foreach stood; Launch is no Stmt (mcl.mcpl.ast).
        return Block(tuple(self.visit(x) for x in s.stmts), span=s.span)

    def visit_If(self, s: If) -> HostStmt:
        orelse = self.visit(s.orelse) if s.orelse is not None else None
        return If(s.cond, self.visit(s.then), orelse, span=s.span)

    def visit_For(self, s: For) -> HostStmt:
        if isinstance(s.init, Decl):
            self.host_vars[s.init.name] = CVar(s.init.name, s.init.type, "private", None,
                                              kind="host")
        return For(s.init, s.cond, s.step, self.visit(s.body), span=s.span)

    def visit_Return(self, s: Return) -> HostStmt:
        if s.value is None:
            raise MclError(
                error("codegen-host-return", "return outside foreach is not supported", s.span)
            )
        return self.not_on_host(s)

    def not_on_host(self, s: Stmt) -> HostStmt:
        raise MclError(
            error(
                "codegen-host-stmt",
                f"{type(s).__name__} outside all foreach statements cannot run on the host",
                s.span,
            )
        )

    visit_CallStmt = visit_Swap = visit_Barrier = not_on_host


# ---------------------------------------------------------------------- entry points


def generate_module(
    checked: CheckedProgram,
    target: str,
    library: HwdLibrary,
    mapping: OpenCLMapping,
    only: set[str] | None = None,
    overrides: Mapping[str, Number] | None = None,
) -> GeneratedModule:
    """Kernel source in the language of `mapping`'s backend and launch plans for every
    function with foreach statements of the main module of the checked program whose
    kernels are at leaf `target` (mcl.pipeline.generate translates them there); named
    constants take the values of `overrides` where given. Code generation reads the types
    of the checked program's side tables. By backend name, with the leaf's own mapping:
    `mcl.backends.generate_module`."""
    require_leaf(target, library)
    hwd = library.get(target)
    # The shared passes, then the backend's own (mcl.codegen.passes).
    passes = (*LOWERING, *backend_passes(mapping.backend))
    lowered = lower_to_emit(checked, LoweringContext(target, library, overrides or {}),
                            passes)
    generated = mapping.backend.emit(gather(lowered), hwd, mapping, only)
    problems = mapping.backend.check_source(generated, checked.main.file)
    if problems:
        raise MclError(problems)
    return generated


def require_leaf(target: str, library: HwdLibrary) -> None:
    """Code comes from leaves only (paper 4.4)."""
    is_leaf = getattr(library, "is_leaf", None)
    if is_leaf is not None and not is_leaf(target):
        raise MclError(
            error(
                "codegen-not-leaf",
                f"'{target}' is not a leaf description; code is "
                "generated from leaves only (paper 4.4)",
                hint="pick one of: " + ", ".join(n for n in library.names() if is_leaf(n)),
            )
        )


def emit_opencl(
    function: Function,
    checked: CheckedProgram,
    target_hwd: HardwareDescription,
    mapping: OpenCLMapping,
    library: Library | None = None,
) -> str:
    """The kernel source (in `mapping`'s language) for one leaf-level MCPL function of a
    checked program (its kernels, the functions they call, the constants and types they
    use)."""
    if library is None:
        library = _SingleLibrary(target_hwd)
    main = checked.main
    if function not in main.functions:  # a function of the program's other modules
        main = Module(None, None, None, (), (), (), (function,), file=main.file)
        checked = replace(checked, program=as_program(main))
    source = codegen_input(checked, target_hwd.name, library)
    return mapping.backend.emit(source, target_hwd, mapping, {function.name}).source


@dataclass(frozen=True)
class _SingleLibrary:
    """Enough of a library to resolve constants of the one description at hand."""

    hwd: HardwareDescription

    def names(self) -> list[str]:
        return [self.hwd.name]

    def get(self, name: str) -> HardwareDescription:
        if name != self.hwd.name:
            raise MclError(error("codegen-hwd-constant", f"no description '{name}' at hand"))
        return self.hwd
