"""Names and scalar types as they appear in generated OpenCL C and C++.

Generated code keeps the MCPL names (readability, paper 4.4: feedback and code refer to
the programmer's names); only names that collide with OpenCL C / C++ keywords or
built-ins get a trailing underscore.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcl.mcpl import types as T

if TYPE_CHECKING:  # numpy is imported where a buffer's type is asked: code generation
    import numpy as np  # alone (`mcl check` at hopper, for the compiler's counts) needs none

# MCPL primitive -> (OpenCL C type, host C++ type, numpy dtype, size in bytes), from the one
# table of primitive types; void has no values to store.
PRIMITIVES: dict[str, tuple[str, str, str, int]] = {
    p.name: (p.opencl, p.host, p.buffer_dtype, p.size)
    for p in T.PRIMITIVES.values() if p.name != "void"
}

_C_KEYWORDS = """
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool true false complex imaginary
""".split()
_OPENCL_WORDS = """
kernel __kernel global __global local __local constant __constant private __private
read_only write_only read_write __read_only __write_only __read_write image1d_t image2d_t
image3d_t image1d_array_t image2d_array_t image1d_buffer_t sampler_t event_t half uchar
ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t uniform pipe generic __generic
get_global_id get_local_id get_group_id get_global_size get_local_size get_num_groups
barrier mem_fence min max fmin fmax sqrt exp log sin cos tan sincos fabs abs pow pown
floor ceil fmod atomic_add atomic_cmpxchg as_uint as_float clamp mad fma select
sign step smoothstep degrees radians mix cross dot length normalize distance rsqrt tan atan
atan2 tanh exp2 log2 log10 round trunc erf erfc hypot cbrt asin acos sinh cosh rint
native_sin native_cos native_exp native_log popcount rotate upsample any all
atomic_sub atomic_min atomic_max atomic_inc atomic_dec atomic_xchg atomic_and atomic_or
atomic_xor convert_int convert_float printf
""".split()
_CPP_WORDS = """
new delete class this template typename operator namespace using public protected
friend virtual try catch throw explicit mutable nullptr std main
""".split()
_VECTOR_TYPES = [
    f"{base}{n}"
    for base in (
        "char",
        "uchar",
        "short",
        "ushort",
        "int",
        "uint",
        "long",
        "ulong",
        "float",
        "double",
        "half",
    )
    for n in (2, 3, 4, 8, 16)
]
RESERVED = frozenset(_C_KEYWORDS + _OPENCL_WORDS + _CPP_WORDS + _VECTOR_TYPES)


def c_name(name: str) -> str:
    """The identifier used in generated code for MCPL name `name`."""
    if name in RESERVED or name.startswith(("mcl_", "get_", "__")):
        return name + "_"
    return name


def opencl_type(prim: str) -> str:
    return PRIMITIVES[prim][0]


def host_type(prim: str) -> str:
    return PRIMITIVES[prim][1]


def numpy_dtype(prim: str) -> np.dtype:
    import numpy as np

    return np.dtype(PRIMITIVES[prim][2])


def byte_size(prim: str) -> int:
    return PRIMITIVES[prim][3]
