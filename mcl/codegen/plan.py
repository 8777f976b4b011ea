"""What the kernel emitter hands to the hosts: the generated kernel source (in the language
of a backend, mcl.backends) plus, per MCPL function, a launch plan (buffers, host
statements, kernels with their arguments and NDRange). A backend's runner interprets a
plan; its host harness prints it. Sizes and
counts stay MCPL expressions in the function's own names (docs/architecture.md: one symbolic
vocabulary), evaluated only when the host knows the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mcl.codegen.bracket_depth import Nesting
from mcl.diagnostics import Span
from mcl.mcpl.ast import Decl, Expr, Function, Stmt, TypeDef
from mcl.mcpl.ast import Launch as Launch  # the host passes import it from here
from mcl.mcpl.sidetables import SideTables


@dataclass(frozen=True)
class ParamPlan:
    """A parameter of the MCPL function as the host sees it. `element` is the MCPL
    primitive ('float') or user type name; arrays have `size` (number of elements) and
    `access` ('r', 'w' or 'rw': buffer flags and what is copied back)."""

    name: str
    element: str
    is_array: bool
    size: Expr | None = None
    access: str = "rw"
    is_struct: bool = False
    address_space: str = "global"
    # A written scalar parameter: a one-element buffer (is_array, size 1) whose value the
    # host returns as a scalar.
    scalar: bool = False

    @property
    def written(self) -> bool:
        return "w" in self.access

    @property
    def read(self) -> bool:
        return "r" in self.access or not self.access


@dataclass(frozen=True)
class KernelArg:
    """One argument of a generated kernel, in order. kind:
    'buffer' (a parameter array), 'scalar' (a parameter scalar), 'host' (a variable
    computed by host statements), 'local' (a __local array sized at launch: `size`
    elements of `element`)."""

    name: str
    kind: str
    element: str
    size: Expr | None = None
    is_struct: bool = False


@dataclass(frozen=True)
class KernelPlan:
    """A generated kernel: its name, arguments, the NDRange per dimension as numbers of
    work-groups and work-group sizes (global size = groups * local), and build macros."""

    name: str
    function: str
    args: tuple[KernelArg, ...]
    groups: tuple[Expr, ...]
    local: tuple[Expr, ...]
    span: Span | None = None
    # Macros the host defines when it builds the kernel (`-D NAME=value`): sizes of
    # private arrays that depend on the kernel's sizes.
    defines: tuple[tuple[str, Expr], ...] = ()


HostStmt = Stmt | Launch


@dataclass(frozen=True)
class HostVar:
    """A scalar computed on the host (Fig. 9's dimension statements) and passed to kernels."""

    name: str
    element: str


@dataclass(frozen=True)
class FunctionPlan:
    """The host code and kernels generated of one function."""

    function: Function
    params: tuple[ParamPlan, ...]
    host_vars: tuple[HostVar, ...]
    host_body: tuple[HostStmt, ...]
    kernels: tuple[KernelPlan, ...]

    @property
    def name(self) -> str:
        return self.function.name

    def param(self, name: str) -> ParamPlan:
        return next(p for p in self.params if p.name == name)


@dataclass(frozen=True)
class GeneratedModule:
    """Everything generated for one MCPL module at one leaf target."""

    name: str
    target: str
    device_type: str
    source: str  # the kernels, in `language`
    functions: tuple[FunctionPlan, ...]
    types: tuple[TypeDef, ...]
    constants: tuple[Decl, ...]
    language: str  # the backend whose language `source` is in (mcl.backends.get_backend)
    uses_double: bool = False
    arch: str | None = None  # the leaf's architecture, where its mapping names one
    # The checker's types of the host statements and launch sizes the harness prints.
    tables: SideTables = field(default_factory=SideTables, compare=False, repr=False)
    # The deepest bracket nesting of `source`'s functions, as the emitter measured it
    # (a backend's `check_source` compares it with its compiler's limit).
    nesting: Nesting = field(default_factory=Nesting, compare=False, repr=False)
    # The for-loops of the MCPL source generated as one wide access per unit (a vector
    # copy through aligned pointers): the loop's span -> the bytes a unit moves at once.
    wide_copies: Mapping[Span, int] = field(default_factory=dict, compare=False, repr=False)

    def function(self, name: str) -> FunctionPlan | None:
        return next((f for f in self.functions if f.name == name), None)
