"""C's spellings for the shared emitter (mcl.codegen.dialect), and the mapping the OpenMP
backend generates with.

The OpenMP backend reads the leaf's OpenCL mapping (`<leaf>.opencl.toml`): its roles
already say what a CPU needs. A par_group of role `work-group` is an iteration of the
kernel's `#pragma omp parallel for` loop over the work-groups (`mcl_group<dim>`), one of
role `work-item` an iteration of a loop inside it (`mcl_item<dim>`, `#pragma omp simd`),
one of role `global` both (`mcl_group * mcl_local + mcl_item`), one of role `loop` a loop
as everywhere. Memory is one address space, so the qualifiers are empty; memory shared by
the work-items of a group is an array declared in the group's iteration.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from mcl.codegen.dialect import Dialect
from mcl.codegen.mapping import OpenCLMapping
from mcl.diagnostics import MclError, error

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
class OpenMPDialect(Dialect):
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

    def header(self) -> list[str]:
        from mcl.backends.openmp.prelude import prelude

        return [prelude()]


# Fields in order: name, suffix, kernel keyword, device-function prefix, restrict, shared
# keyword, 16-byte alignment (used with vector copies, which this backend leaves to the C
# compiler's vectoriser).
OPENMP = OpenMPDialect(LANGUAGE, ".c", "void", "static ", "restrict", "", "")


@dataclass(frozen=True)
class OpenMPMapping(OpenCLMapping):
    """A leaf's OpenCL mapping, spelled in C."""

    @property
    def dialect(self) -> Dialect:
        return OPENMP


def openmp_mapping(mapping: OpenCLMapping) -> OpenMPMapping:
    """`mapping` for C: the same par_groups and spaces; copies of 4 floats are left to the
    C compiler (`vector_width` 0)."""
    values = {f.name: getattr(mapping, f.name) for f in fields(mapping)}
    values["vector_width"] = 0
    return OpenMPMapping(**values)
