"""CUDA C++, the kernel language of the CUDA backend (mcl.codegen.dialect says what a
dialect is). Kernels have C linkage: the runner and the host harness find them by their
MCPL names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mcl.codegen.c_expr import ATOMICS, ExprPrinter, atomic_target_error
from mcl.codegen.dialect import Dialect
from mcl.codegen.kernels import shared_offset
from mcl.codegen.scope import FLOAT, INT
from mcl.diagnostics import Span
from mcl.mcpl.ast import Binary, Call, Expr
from mcl.mcpl.builtins import CFunction

# NDRange dimension -> CUDA's component of a dim3.
_AXIS = ("x", "y", "z")


@dataclass(frozen=True)
class CudaDialect(Dialect):
    """CUDA's words."""

    def builtin(self, c: CFunction) -> str:
        return c.cuda

    def power(self, p: ExprPrinter, e: Binary, int_exponent: bool) -> str:
        if int_exponent:
            # CUDA's pow(float, int) overload: exact for small integral exponents like pown.
            return f"pow({p.as_float(e.left)}, {p.expr(e.right)})"
        return f"pow({p.as_float(e.left)}, {p.as_float(e.right)})"

    def sincos(self, p: ExprPrinter, x: str, cosine: Expr) -> str:
        # CUDA's sincosf stores both: MCPL's yields sin(x) in a comma expression.
        return f"({p.expr(cosine)} = cos({x}), sin({x}))"

    def atomic(self, p: ExprPrinter, e: Call, target_t: object, space: str, pointer: str,
               operands: list[str]) -> str:
        if target_t not in (INT, FLOAT) or (
                target_t == FLOAT and e.func not in ("atomicAdd", "atomicAddFloat")):
            raise atomic_target_error(e)
        atomic = ATOMICS[e.func]
        return f"{atomic.cuda}({', '.join([pointer, *operands, *atomic.cuda_operands])})"

    def qualifier(self, address_space: str) -> str:
        return ""  # CUDA pointers are generic

    def unit_index(self, role: str, dim: int) -> str:
        axis = _AXIS[dim]
        return {
            "work-group": f"(int)blockIdx.{axis}",
            "work-item": f"(int)threadIdx.{axis}",
            "global": f"(int)(blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis})",
        }[role]

    def barrier(self, fence_flags: str) -> str:
        # __syncthreads() orders both shared and global accesses of the block, so it needs
        # no fence flags.
        return "__syncthreads();"

    def group_size_attribute(self, sizes: list[str]) -> str:
        return f" __launch_bounds__({' * '.join(f'({s})' for s in sizes)})"

    def kernel_head(self, attribute: str, name: str) -> str:
        # Launch bounds come after `void`.
        return f"{self.kernel_keyword} void{attribute} {name}(\n"

    def shared_parameter(self, element: str, cname: str) -> str:
        return f"const int {shared_offset(cname)}"

    def unaligned_vector_copy(self, width: int, src: str, dst: str) -> str | None:
        return None  # no vload/vstore: the loop stays a loop

    def line_directive(self, span: Span) -> str | None:
        # nvcc/NVRTC messages, compute-sanitizer reports and profiler source views name the
        # MCPL line (paper 4.4: code and feedback stay related to what the programmer
        # wrote); the file is named as the statement's comment names it.
        name = Path(span.file).name.replace("\\", "\\\\").replace('"', '\\"')
        return f'#line {span.line} "{name}"'

    def header(self, uses_double: bool) -> list[str]:
        # OpenCL's short type names, which the shared statements use for bytes.
        return ["typedef unsigned char uchar;", "typedef unsigned int uint;"]


# Fields in order: backend, title, suffix, kernel keyword, device-function prefix,
# restrict, shared keyword, 16-byte alignment.
CUDA = CudaDialect("cuda", "CUDA", ".cu", 'extern "C" __global__', "__device__ ",
                   "__restrict__", "__shared__", " __align__(16)",
                   maybe_unused="[[maybe_unused]] ", shared_by_offset=True,
                   static_shared_limit=48 * 1024)
