"""OpenCL C 1.2, the kernel language of the OpenCL backend (mcl.codegen.dialect says what
a dialect is)."""

from __future__ import annotations

from dataclasses import dataclass

from mcl.codegen.c_expr import ATOMICS, UNARY, ExprPrinter, atomic_target_error
from mcl.codegen.dialect import Dialect
from mcl.codegen.scope import FLOAT, INT
from mcl.mcpl.ast import Binary, Call, Expr
from mcl.mcpl.builtins import CFunction

_UNIT_FUNCTIONS = {
    "work-group": "get_group_id",
    "work-item": "get_local_id",
    "global": "get_global_id",
}


@dataclass(frozen=True)
class OpenCLDialect(Dialect):
    """OpenCL C's words."""

    def builtin(self, c: CFunction) -> str:
        return c.opencl

    def power(self, p: ExprPrinter, e: Binary, int_exponent: bool) -> str:
        if int_exponent:
            return f"pown({p.as_float(e.left)}, {p.expr(e.right)})"
        return f"pow({p.as_float(e.left)}, {p.as_float(e.right)})"

    def sincos(self, p: ExprPrinter, x: str, cosine: Expr) -> str:
        return f"sincos({x}, &{p.wrap(cosine, UNARY)})"

    def atomic(self, p: ExprPrinter, e: Call, target_t: object, space: str, pointer: str,
               operands: list[str]) -> str:
        # OpenCL 1.x has no float atomics: a compare-and-swap loop of the prelude.
        if e.func == "atomicAddFloat" or (e.func == "atomicAdd" and target_t == FLOAT):
            helper = f"mcl_atomic_add_float_{space}"
            p.needs.helpers.add(helper)
            return f"{helper}({pointer}, {operands[0]})"
        if target_t != INT:
            raise atomic_target_error(e)
        return f"{ATOMICS[e.func].opencl}({', '.join([pointer, *operands])})"

    def qualifier(self, address_space: str) -> str:
        # OpenCL 1.2 pointers name their address space.
        return "" if address_space == "private" else f"__{address_space} "

    def unit_index(self, role: str, dim: int) -> str:
        return f"(int){_UNIT_FUNCTIONS[role]}({dim})"

    def barrier(self, fence_flags: str) -> str:
        return f"barrier({fence_flags});"

    def group_size_attribute(self, sizes: list[str]) -> str:
        padded = sizes + ["1"] * (3 - len(sizes))
        return f" __attribute__((reqd_work_group_size({', '.join(padded)})))"

    def kernel_head(self, attribute: str, name: str) -> str:
        # The attribute stands before `void`.
        return f"{self.kernel_keyword}{attribute} void {name}(\n"

    def shared_parameter(self, element: str, cname: str) -> str:
        return f"__local {element}* restrict {cname}"

    def unaligned_vector_copy(self, width: int, src: str, dst: str) -> str | None:
        return f"vstore{width}(vload{width}(0, {src}), 0, {dst});"

    def header(self, uses_double: bool) -> list[str]:
        return ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if uses_double else []


# Fields in order: backend, title, suffix, kernel keyword, device-function prefix,
# restrict, shared keyword, 16-byte alignment.
OPENCL = OpenCLDialect("opencl", "OpenCL", ".cl", "__kernel", "", "restrict", "__local",
                       " __attribute__((aligned(16)))")
