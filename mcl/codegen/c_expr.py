"""Print MCPL expressions in a C language: a backend's kernel language (OpenCL C, CUDA
C++: its `mcl.codegen.dialect.Dialect`) or the host's C++ (mcl.codegen.host_cpp).

The languages share C's expression syntax; they differ in the built-ins (OpenCL's
`fmin` and `atomic_add` versus `std::fmin`, CUDA's `atomicAdd`), so one printer serves all
and asks its `CLanguage` for the spellings that differ. It writes a built-in as its row of
`mcl.mcpl.builtins.BUILTINS` spells it (`c`, `c_int`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcl.codegen.c_names import c_name
from mcl.codegen.layout import flat_dims, index_chain, linear_offset
from mcl.codegen.scope import DOUBLE, FLOAT, INT, CScope, signature_only
from mcl.diagnostics import MclError, Span, error
from mcl.mcpl.ast import (
    BINARY_PRECEDENCE,
    ArrayType,
    Binary,
    BoolLit,
    Call,
    Expr,
    Field,
    FloatLit,
    HwdConst,
    Index,
    IntLit,
    Name,
    Param,
    Unary,
)
from mcl.mcpl.builtins import BUILTINS, Builtin, CAtomic, CCast, CFunction, CRule
from mcl.mcpl.types import INT_MAX, INT_MIN
from mcl.mcpl.visitor import StrictVisitor

ATOM = 100
UNARY = 12
# lib.atomic's functions (mcl/mcpl/stdlib/lib/atomic.mcpl; not built-ins, so not in
# BUILTINS) -> OpenCL 1.1 and CUDA atomics. CUDA's atomics on int and float carry MCPL's
# names; OpenCL's atomic_inc/atomic_dec (add or subtract one) are CUDA's atomicAdd/atomicSub
# of 1 (CUDA's own atomicInc wraps at a bound). atomicAddFloat has no OpenCL 1.x function:
# a compare-and-swap loop.
_LIBRARY_ATOMICS = {
    "atomicSub": CAtomic("atomic_sub", "atomicSub"),
    "atomicMin": CAtomic("atomic_min", "atomicMin"),
    "atomicMax": CAtomic("atomic_max", "atomicMax"),
    "atomicInc": CAtomic("atomic_inc", "atomicAdd", ("1",)),
    "atomicDec": CAtomic("atomic_dec", "atomicSub", ("1",)),
    "atomicExch": CAtomic("atomic_xchg", "atomicExch"),
    "atomicCAS": CAtomic("atomic_cmpxchg", "atomicCAS"),
    "atomicAnd": CAtomic("atomic_and", "atomicAnd"),
    "atomicOr": CAtomic("atomic_or", "atomicOr"),
    "atomicXor": CAtomic("atomic_xor", "atomicXor"),
    "atomicAddFloat": CAtomic("", "atomicAdd"),
}
# MCPL's atomics: the built-in ones (their BUILTINS rows) and lib.atomic's (whose atomicAdd
# is the built-in's).
ATOMICS: dict[str, CAtomic] = {
    b.name: b.c for b in BUILTINS.values() if isinstance(b.c, CAtomic)
} | _LIBRARY_ATOMICS


# A decimal floating constant as C reads it (C11 6.4.4.2), digits 0-9 only.
_C_DECIMAL_FLOAT = re.compile(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][+-]?[0-9]+)?")


def c_float_text(e: FloatLit) -> str:
    """The literal as C spells it (without a suffix): the source's own spelling when C
    reads it as the same value, else printed from the value (a spelling Python reads
    but C does not, such as other scripts' digits, never reaches the device compiler)."""
    text = e.text
    if not (_C_DECIMAL_FLOAT.fullmatch(text) and float(text) == e.value):
        text = repr(float(e.value))
    if not any(c in text for c in ".eE"):
        text += ".0"
    if text.startswith("."):
        text = "0" + text
    if text.endswith("."):
        text += "0"
    return text


def int_literal(e: IntLit) -> str:
    """An MCPL int literal as a C `int` literal. The checker rejects literals outside 32
    bits (`mcpl-int-range`), so one reaching here is a bug of an earlier pass: say so
    instead of writing a literal that C would silently make a `long`."""
    value = e.value
    if not INT_MIN <= value <= INT_MAX:
        raise MclError(
            error(
                "codegen-internal",
                f"internal error: the integer literal {value} does not fit in a 32-bit int "
                "and cannot be generated (the checker rejects such literals, so a pass "
                "before code generation produced it); please report this",
                e.span,
            )
        )
    if value == INT_MIN:
        # C reads `-2147483648` as `-(2147483648)`, and 2147483648 is a long.
        return f"({INT_MIN + 1} - 1)"
    return str(value) if value >= 0 else f"({value})"


@dataclass
class Needs:
    """What printed code needs besides itself: helper functions of the runtime prelude
    (`mcl_atomic_add_float_global`, `mcl_ipow`), MCPL functions specialised for the
    address spaces of their pointer parameters, and double precision."""

    helpers: set[str] = field(default_factory=set)
    instances: set[tuple[str, tuple[str, ...]]] = field(default_factory=set)
    double: bool = False
    # The for-loops printed as one wide access per unit, by span: its bytes
    # (mcl.codegen.vectorize.vector_copy; GeneratedModule.wide_copies).
    wide_copies: dict[Span, int] = field(default_factory=dict)


class CLanguage(ABC):
    """The spellings of expressions that differ between the C languages mcl writes. A
    kernel language's are its dialect's (mcl.codegen.dialect.Dialect, given by a
    backend); the host's C++ are mcl.codegen.host_cpp's."""

    # Before C's math functions (`fmod`, a library function's built-in): `std::` in C++.
    std: str = ""
    # Whether every atomic is a plain update (code that runs on one thread: the host).
    plain_atomics: bool = False

    @abstractmethod
    def builtin(self, c: CFunction) -> str:
        """The name of the function (or cast of one) that `c` spells a built-in as."""

    @abstractmethod
    def power(self, p: ExprPrinter, e: Binary, int_exponent: bool) -> str:
        """`e.left ^ e.right` of a floating result (`int_exponent`: the right is an int)."""

    @abstractmethod
    def sincos(self, p: ExprPrinter, x: str, cosine: Expr) -> str:
        """MCPL's `sincos(x, cosine)`: sin(x), storing cos(x) in `cosine`."""

    @abstractmethod
    def atomic(self, p: ExprPrinter, e: Call, target_t: object, space: str, pointer: str,
               operands: list[str]) -> str:
        """An atomic of `e` on global or local memory: `pointer` to the target element
        (of type `target_t`, in address space `space`) and the other `operands`."""


@dataclass
class ExprPrinter(StrictVisitor):
    """Prints MCPL expressions as C in a language's words (a kernel dialect or C++)."""

    scope: CScope
    language: CLanguage  # the kernel dialect or the host's C++
    access: dict[str, dict[str, str]] = field(default_factory=dict)  # function -> param -> mode
    needs: Needs = field(default_factory=Needs)
    float_suffix: str = "f"

    def expr(self, e: Expr) -> str:
        return self._p(e)[0]

    def wrap(self, e: Expr, prec: int) -> str:
        """`e` printed so that it can stand as an operand of an operator of `prec`."""
        text, p = self._p(e)
        return text if p >= prec else f"({text})"

    # ------------------------------------------------------------------ the printer
    def _p(self, e: Expr) -> tuple[str, int]:
        """The C text of `e` and its precedence."""
        return self.visit(e)

    def generic_visit(self, node: Any, *args: Any, **kwargs: Any) -> tuple[str, int]:
        # A node kind of the AST with no rule here (unknown kinds fail in `visit`).
        raise MclError(
            error("codegen-expr", f"cannot generate code for {type(node).__name__}", node.span)
        )

    def visit_IntLit(self, e: IntLit) -> tuple[str, int]:
        return int_literal(e), ATOM

    def visit_FloatLit(self, e: FloatLit) -> tuple[str, int]:
        return self._float(e), ATOM

    def visit_BoolLit(self, e: BoolLit) -> tuple[str, int]:
        return ("true" if e.value else "false"), ATOM

    def visit_Name(self, e: Name) -> tuple[str, int]:
        var = self.scope.lookup(e.name, e.span)
        if var.by_pointer and not var.is_array:
            return f"(*{var.cname})", ATOM
        return var.cname, ATOM

    def visit_HwdConst(self, e: HwdConst) -> tuple[str, int]:
        raise MclError(
            error(
                "codegen-hwd-constant",
                f"hardware description constant {'.'.join(e.path)} has no value",
                e.span,
            )
        )

    def visit_Index(self, e: Index) -> tuple[str, int]:
        return self._index(e), ATOM

    def visit_Field(self, e: Field) -> tuple[str, int]:
        base = e.base
        if isinstance(base, Name):
            var = self.scope.lookup(base.name, base.span)
            if var.by_pointer and not var.is_array:
                return f"{var.cname}->{e.name}", ATOM
        return f"{self.wrap(base, ATOM)}.{e.name}", ATOM

    def visit_Unary(self, e: Unary) -> tuple[str, int]:
        operand = self.wrap(e.operand, UNARY)
        if operand.startswith(("-", "!")):  # never print `--x` (a decrement)
            operand = f"({operand})"
        return f"{e.op}{operand}", UNARY

    def visit_Binary(self, e: Binary) -> tuple[str, int]:
        return self._binary(e)

    def visit_Call(self, e: Call) -> tuple[str, int]:
        return self._call(e), ATOM

    def _float(self, e: FloatLit) -> str:
        return c_float_text(e) + self.float_suffix

    def _binary(self, e: Binary) -> tuple[str, int]:
        if e.op == "^":  # MCPL's power operator
            return self._power(e), ATOM
        if e.op == "%" and (self.scope.is_float(e.left) or self.scope.is_float(e.right)):
            return f"{self.language.std}fmod({self.expr(e.left)}, {self.expr(e.right)})", ATOM
        prec = BINARY_PRECEDENCE[e.op]
        # Operands of & and | always get parentheses: C's precedence of the bitwise
        # operators surprises readers, and compilers warn about it.
        bitwise = e.op in ("&", "|")
        left = self.wrap(e.left, ATOM if bitwise else prec)
        right = self.wrap(e.right, ATOM if bitwise else prec + 1)
        return f"{left} {e.op} {right}", prec

    def _power(self, e: Binary) -> str:
        # Each operand is rendered once: rendering one twice doubles the work at every
        # level of a chain `a ^ b ^ c ^ ...`, exponential in its length.
        left_t, right_t = self.scope.type_of(e.left), self.scope.type_of(e.right)
        if left_t == INT and right_t == INT:
            self.needs.helpers.add("mcl_ipow")
            return f"mcl_ipow({self.expr(e.left)}, {self.expr(e.right)})"
        return self.language.power(self, e, right_t == INT)

    def as_float(self, e: Expr) -> str:
        if self.scope.is_float(e):
            return self.expr(e)
        return f"(float){self.wrap(e, UNARY)}"

    def _index(self, e: Index) -> str:
        base, indices = index_chain(e)
        base_t = self.scope.type_of(base)
        if not isinstance(base_t, ArrayType):
            raise MclError(error("codegen-index", "indexing a value that is not an array", e.span))
        dims = flat_dims(base_t)
        offset = self.expr(linear_offset(indices, dims, self.scope.typed))
        base_text = self.wrap(base, ATOM)
        if len(indices) < len(dims):  # a sub-array: a pointer to its first element
            return f"({base_text} + {offset})"
        return f"{base_text}[{offset}]"

    # ------------------------------------------------------------------ calls
    def _call(self, e: Call) -> str:
        f, args = e.func, e.args
        callee = self.scope.functions.get(f)
        if callee is not None and not signature_only(callee):
            return self._user_call(e)
        builtin = BUILTINS.get(f)
        if builtin is not None:
            return self._builtin(builtin, e)
        if f in ATOMICS:
            return self._atomic(e)
        if callee is not None:
            # A library function whose body only states its signature (mcpl.md section 3)
            # is the OpenCL built-in of the same name (stdlib lib/math/common.mcpl).
            items = ", ".join(
                self.as_float(a) if p.type in (FLOAT, DOUBLE) else self.expr(a)
                for p, a in zip(callee.params, args, strict=False)
            )
            return f"{self.language.std}{f}({items})"
        raise MclError(error("codegen-unknown-function", f"unknown function '{f}'", e.span))

    def _builtin(self, builtin: Builtin, e: Call) -> str:
        """A call of a built-in as its row of BUILTINS spells it."""
        c = builtin.c
        match c:
            case CCast():
                self.needs.double |= c.type == "double"
                return f"({c.type}){self.wrap(e.args[0], UNARY)}"
            case CAtomic():
                return self._atomic(e)
            case CRule():
                return C_RULES[c.name](self, e)
        if builtin.c_int is not None and not any(self.scope.is_float(a) for a in e.args):
            c = builtin.c_int
        name = self.language.builtin(c)
        items = ", ".join(self.as_float(a) if c.floating else self.expr(a) for a in e.args)
        return f"{name}({items})"

    def _sincos(self, e: Call) -> str:
        """float sincos(x, cosine): returns sin(x) and stores cos(x) (`CLanguage.sincos`:
        a language without such a function stores cos(x) and yields sin(x))."""
        return self.language.sincos(self, self.as_float(e.args[0]), e.args[1])

    def _atomic(self, e: Call) -> str:
        """MCPL's atomics as OpenCL 1.1 atomic functions on __global or __local memory."""
        target, *values = e.args
        operands = [self.expr(v) for v in values]
        var = self.scope.root_var(target)
        space = var.address_space if var is not None else "private"
        t = self.scope.type_of(target)
        if space == "private" or self.language.plain_atomics:
            if e.func in ("atomicAdd", "atomicAddFloat"):  # no other unit can see it
                return f"({self.expr(target)} += {operands[0]})"
            raise MclError(error("codegen-atomic", f"{e.func} on a private variable", e.span))
        if space not in ("global", "local"):
            raise MclError(
                error("codegen-atomic", f"{e.func} on memory in the {space} address space", e.span)
            )
        pointer = f"&{self.wrap(target, UNARY)}"
        return self.language.atomic(self, e, t, space, pointer, operands)

    def _user_call(self, e: Call) -> str:
        callee = self.scope.functions[e.func]
        if len(callee.params) != len(e.args):
            raise MclError(
                error("codegen-call", f"'{e.func}' takes {len(callee.params)} arguments", e.span)
            )
        modes = self.access.get(e.func, {})
        spaces: list[str] = []
        texts: list[str] = []
        for param, arg in zip(callee.params, e.args, strict=True):
            if by_reference(param, modes):
                spaces.append(self.address_space_of(arg))
                texts.append(self._reference_to(arg))
            else:
                texts.append(self.expr(arg))
        instance = (e.func, tuple(spaces))
        self.needs.instances.add(instance)
        return f"{instance_name(*instance)}({', '.join(texts)})"

    def address_space_of(self, e: Expr) -> str:
        var = self.scope.root_var(e)
        return var.address_space if var is not None else "private"

    def _reference_to(self, e: Expr) -> str:
        """A pointer to argument `e`: arrays decay to pointers, scalars give their address."""
        if isinstance(self.scope.type_of(e), ArrayType):
            return self.expr(e)
        if isinstance(e, Name):
            var = self.scope.lookup(e.name, e.span)
            if var.by_pointer:
                return var.cname
        return f"&{self.wrap(e, UNARY)}"


# The rules named by the CRule spellings of BUILTINS.
def atomic_target_error(e: Call) -> MclError:
    """An atomic on a target of a type the language's atomics do not take."""
    return MclError(error("codegen-atomic", f"{e.func} needs an int or float target", e.span))


C_RULES: dict[str, Callable[[ExprPrinter, Call], str]] = {"sincos": ExprPrinter._sincos}


def by_reference(param: Param, modes: Mapping[str, str]) -> bool:
    """MCPL passes variables by reference unless they are primitive and constant (paper
    4.3): arrays and written scalars or structs become pointers; the others are copied."""
    if isinstance(param.type, ArrayType):
        return True
    return "w" in modes.get(param.name, "")


def instance_name(name: str, spaces: tuple[str, ...]) -> str:
    """C name of MCPL function `name` specialised for the address spaces of its pointer
    parameters: OpenCL 1.2 has no generic address space, so `assign` called with a private
    and with a global argument becomes `assign` and `assign_g`."""
    if all(s == "private" for s in spaces):
        return c_name(name)
    return c_name(name) + "_" + "".join(s[0] for s in spaces)
