"""C's spellings for the shared emitter (mcl.codegen.dialect), and the mapping the OpenMP
backend generates with.

The OpenMP backend reads the leaf's `<leaf>.openmp.toml` in OpenCL's words, and where a
leaf has none (the usual case) its OpenCL mapping `<leaf>.opencl.toml`: its roles already
say what a CPU needs. A par_group of role `work-group` is an iteration of the
kernel's `#pragma omp parallel for` loop over the work-groups (`mcl_group<dim>`), one of
role `work-item` an iteration of a loop inside it (`mcl_item<dim>`, `#pragma omp simd`),
one of role `global` both (`mcl_group * mcl_local + mcl_item`), one of role `loop` a loop
as everywhere. Memory is one address space, so the qualifiers are empty; memory shared by
the work-items of a group is an array declared in the group's iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcl.backends.opencl.dialect import OpenCLDialect
from mcl.codegen.ctree import Pragma
from mcl.diagnostics import MclError, error

if TYPE_CHECKING:
    from mcl.hdl.model import HardwareDescription

LANGUAGE = "openmp"
# The leaf mapping the backend reads, and the device types it generates for: CPU leaves
# (a Xeon Phi runs x86 code as well).
MAPPING_LANGUAGE = "opencl"
DEVICE_TYPES = ("cpu", "accelerator")


def group_index(dim: int) -> str:
    return f"mcl_group{dim}"


def item_index(dim: int) -> str:
    return f"mcl_item{dim}"


def groups_argument(dim: int) -> str:
    """The kernel argument with the number of work-groups along `dim`."""
    return f"mcl_groups{dim}"


def local_argument(dim: int) -> str:
    """The kernel argument with the number of work-items of a group along `dim`."""
    return f"mcl_local{dim}"


@dataclass(frozen=True)
class OpenMPDialect(OpenCLDialect):
    """OpenCL C's spellings of built-ins and atomics (the prelude defines them in C), C's
    of everything else."""

    def qualifier(self, address_space: str) -> str:
        return ""

    def unit_index(self, role: str, dim: int) -> str:
        return {
            "work-group": group_index(dim),
            "work-item": item_index(dim),
            "global": f"({group_index(dim)} * {local_argument(dim)} + {item_index(dim)})",
        }[role]

    def barrier(self, fence_flags: str) -> str:
        # The kernel emitter splits the work-items' loop at each barrier
        # (mcl.backends.openmp.kernels): none is left for the statement printer.
        raise MclError(error("codegen-internal", "internal error: a barrier reached the C "
                             "statement printer of the OpenMP backend; please report this"))

    def group_size_attribute(self, sizes: list[str]) -> str:
        return ""

    def unroll_pragma(self, steps: int, innermost: bool) -> Pragma | None:
        # GCC's and Clang's pragma, on loops with no loop inside only. Unrolling a loop
        # around loops (matmul x86_avx512_v4's 16 register tiles) makes GCC keep the
        # arrays of the inner loops on the stack instead of in registers (measured: the
        # micro-kernel's 24 vector sums were loaded and stored at every step, 2.5x
        # slower); the C compiler unrolls such loops itself where it pays.
        return Pragma(f"GCC unroll {steps}") if innermost else None

    def kernel_head(self, attribute: str, name: str) -> str:
        return f"void {name}(\n"

    def shared_parameter(self, element: str, cname: str) -> str:
        # kernels.py declares shared memory in the group's iteration, sized by constants.
        raise MclError(error("codegen-internal", "internal error: shared memory sized by "
                             "the host reached the OpenMP backend's signature"))

    def unaligned_vector_copy(self, width: int, src: str, dst: str) -> str | None:
        return None  # the C compiler vectorises the loop itself

    def header(self, uses_double: bool) -> list[str]:
        from mcl.backends.openmp.prelude import prelude

        return [prelude()]


# Fields in order: backend, title, suffix, kernel keyword, device-function prefix,
# restrict, shared keyword, 16-byte alignment.
OPENMP = OpenMPDialect(LANGUAGE, "C with OpenMP", ".c", "void", "static ", "restrict", "",
                       " __attribute__((aligned(16)))")


def opencl_mapping_data(hwd: HardwareDescription) -> tuple[dict, str] | None:
    """The data of the leaf's `<leaf>.opencl.toml` (the backend's mapping, read in OpenCL's
    words), or None without one."""
    from mcl.codegen.mapping import mapping_path, toml_module

    path = mapping_path(hwd, MAPPING_LANGUAGE)
    if not path.is_file():
        return None
    return toml_module().loads(path.read_text(encoding="utf-8")), str(path)
