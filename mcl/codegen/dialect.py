"""The spellings that differ between the kernel languages mcl generates: OpenCL C and CUDA
C++ (paper section 7: the leaf's mapping file says how the programming abstractions become
constructs of the target language; the emitter's structure is the same for both).

Everything else -- statements, expressions, names, launch plans -- is shared C: the
emitter asks its `Dialect` only for the words below. The mapping file chooses the dialect
(`<leaf>.opencl.toml` or `<leaf>.cuda.toml`, `mcl.codegen.mapping`).
"""

from __future__ import annotations

from dataclasses import dataclass

# NDRange dimension -> CUDA's component of a dim3.
_AXIS = ("x", "y", "z")


@dataclass(frozen=True)
class Dialect:
    name: str  # "opencl" or "cuda"
    suffix: str  # file name suffix of a kernel module
    kernel_keyword: str  # before `void NAME(` of a kernel
    device_function: str  # before a function the kernels call
    restrict: str
    shared_keyword: str  # declaration of memory shared by the units of a group
    aligned16: str  # attribute that aligns an array to 16 bytes (vector copies)

    @property
    def is_cuda(self) -> bool:
        return self.name == "cuda"

    @property
    def maybe_unused(self) -> str:
        """Before a declaration that one of the kernels of a function may not use: a view
        declared before the function's first foreach is repeated in every kernel made
        from it (NVRTC warns of an unused variable, OpenCL C has no such attribute)."""
        return "[[maybe_unused]] " if self.is_cuda else ""

    def qualifier(self, address_space: str) -> str:
        """The qualifier (with a trailing space) of a pointer into `address_space`: CUDA
        pointers are generic, OpenCL 1.2 pointers name their address space."""
        if self.is_cuda or address_space == "private":
            return ""
        return f"__{address_space} "

    def unit_index(self, role: str, dim: int) -> str:
        """The index of the executing unit along NDRange dimension `dim` for a par_group
        of `role` (an int expression)."""
        if self.is_cuda:
            axis = _AXIS[dim]
            return {
                "work-group": f"(int)blockIdx.{axis}",
                "work-item": f"(int)threadIdx.{axis}",
                "global": f"(int)(blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis})",
            }[role]
        function = {
            "work-group": "get_group_id",
            "work-item": "get_local_id",
            "global": "get_global_id",
        }[role]
        return f"(int){function}({dim})"

    def barrier(self, fence_flags: str) -> str:
        """A barrier of the units of a group. CUDA's `__syncthreads()` orders both shared
        and global accesses of the block, so it needs no fence flags."""
        return "__syncthreads();" if self.is_cuda else f"barrier({fence_flags});"

    def group_size_attribute(self, sizes: list[str]) -> str:
        """The attribute that tells the compiler the exact size of every group: it sizes
        registers for it (OpenCL's reqd_work_group_size, CUDA's launch bounds)."""
        if self.is_cuda:
            return f" __launch_bounds__({' * '.join(f'({s})' for s in sizes)})"
        padded = sizes + ["1"] * (3 - len(sizes))
        return f" __attribute__((reqd_work_group_size({', '.join(padded)})))"

    def header(self) -> list[str]:
        """Lines after the file's opening comment."""
        if self.is_cuda:
            # OpenCL's short type names, which the shared statements use for bytes.
            return ["typedef unsigned char uchar;", "typedef unsigned int uint;"]
        return []


# Fields in order: name, suffix, kernel keyword, device-function prefix, restrict, shared
# keyword, 16-byte alignment. CUDA kernels have C linkage: the runner and the host harness
# find them by their MCPL names.
OPENCL = Dialect("opencl", ".cl", "__kernel", "", "restrict", "__local",
                 " __attribute__((aligned(16)))")
CUDA = Dialect("cuda", ".cu", 'extern "C" __global__', "__device__ ", "__restrict__",
               "__shared__", " __align__(16)")

DIALECTS = {d.name: d for d in (OPENCL, CUDA)}
LANGUAGES = tuple(DIALECTS)


def line_directives(text: str) -> str:
    """CUDA source whose statements carry `#line` directives: each line that ends in the
    `// file.mcpl:LINE` comment of `statements.where` is preceded by `#line LINE "file"`,
    so nvcc/NVRTC messages, compute-sanitizer reports and profiler source views name the
    MCPL line (paper 4.4: code and feedback stay related to what the programmer wrote)."""
    import re

    pattern = re.compile(r"//\s*([^\s:/]+\.(?:mcpl|mcl)):(\d+)")
    out: list[str] = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        found = pattern.search(line)
        if found and not stripped.startswith(("#", "//")):
            out.append(f'#line {found.group(2)} "{found.group(1)}"')
        out.append(line)
    return "\n".join(out)
