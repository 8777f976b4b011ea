"""The spellings that differ between the kernel languages mcl generates (paper section 7:
the leaf's mapping file says how the programming abstractions become constructs of the
target language; the emitter's structure is the same for all of them).

Everything else -- statements, expressions, names, launch plans -- is shared C: the
emitter asks its `Dialect` only for the words below (and, through `CLanguage`, for the
expressions that differ). Each backend brings its dialect (mcl.backends: OpenCL C in
mcl.backends.opencl.dialect, CUDA C++ in mcl.backends.cuda.dialect); the leaf's mapping
file `<leaf>.<backend>.toml` chooses it (`mcl.codegen.mapping`).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from mcl.codegen.c_expr import CLanguage
from mcl.codegen.ctree import Pragma
from mcl.diagnostics import Span


@dataclass(frozen=True)
class Dialect(CLanguage):
    """The words of a backend's kernel language."""

    name: str  # the backend's name
    title: str  # the language's name in the file's opening comment
    suffix: str  # file name suffix of a kernel module
    kernel_keyword: str  # before `void NAME(` of a kernel
    device_function: str  # before a function the kernels call
    restrict: str
    shared_keyword: str  # declaration of memory shared by the units of a group
    aligned16: str  # attribute that aligns an array to 16 bytes (vector copies)
    # Before a declaration that one of the kernels of a function may not use: a view
    # declared before the function's first foreach is repeated in every kernel made from
    # it (a compiler may warn of an unused variable).
    maybe_unused: str = ""
    # Where group-shared arrays sized by the host live: False, a kernel argument each (a
    # pointer the host sizes at the launch); True, one block of dynamic shared memory per
    # launch, each array at a byte offset the host passes (mcl.codegen.kernels.shared_offset).
    shared_by_offset: bool = False
    # Bytes of group-shared arrays a kernel may declare with constant sizes; above it they
    # go where arrays sized by the host go (CUDA: a block's static shared memory stops at
    # 48 KB, more only as dynamic shared memory the kernel opts in to). None: no limit.
    static_shared_limit: int | None = None

    @abstractmethod
    def qualifier(self, address_space: str) -> str:
        """The qualifier (with a trailing space) of a pointer into `address_space`."""

    @abstractmethod
    def unit_index(self, role: str, dim: int) -> str:
        """The index of the executing unit along NDRange dimension `dim` for a par_group
        of `role` (an int expression)."""

    @abstractmethod
    def barrier(self, fence_flags: str) -> str:
        """A barrier of the units of a group (`fence_flags`: OpenCL's fence flags of the
        spaces it orders, mcl.codegen.mapping.FENCE_FLAGS)."""

    @abstractmethod
    def group_size_attribute(self, sizes: list[str]) -> str:
        """The attribute that tells the compiler the exact size of every group: it sizes
        registers for it."""

    @abstractmethod
    def kernel_head(self, attribute: str, name: str) -> str:
        """The first line of kernel `name` up to its open parenthesis and newline, with
        the `group_size_attribute` `attribute`."""

    @abstractmethod
    def shared_parameter(self, element: str, cname: str) -> str:
        """The kernel parameter of group-shared array `cname` of `element`s sized by the
        host: the array itself, or with `shared_by_offset` its offset."""

    @abstractmethod
    def unaligned_vector_copy(self, width: int, src: str, dst: str) -> str | None:
        """A copy of `width` contiguous elements from `src` to `dst` that may not be
        aligned to the vector's size, or None where the language has no such copy."""

    def line_directive(self, span: Span) -> str | None:
        """The preprocessor line before a generated statement of MCPL source `span` (a span
        with a file) that makes the compiler's messages name the MCPL line, or None where
        the language's tools gain nothing from one (OpenCL). The printer of the C syntax
        tree (mcl.codegen.ctree) writes it from the statement's span, and the statement's
        own `// file.mcpl:LINE` comment either way."""
        return None

    def unroll_pragma(self, steps: int, innermost: bool) -> Pragma | None:
        """The pragma before a loop of `steps` constant steps that unroll.py unrolls
        (`innermost`: no loop stands inside it), or None for no pragma."""
        return Pragma("unroll", f"{steps} steps")

    @abstractmethod
    def header(self, uses_double: bool) -> list[str]:
        """Lines after the file's opening comment (`uses_double`: the module computes in
        double precision)."""
