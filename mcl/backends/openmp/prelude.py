"""The C that stands before the generated kernels of the OpenMP backend: what the shared
emitter's statements and expressions need beyond C99 with GNU extensions.

The shared expression printer writes OpenCL's built-in names (`fmin`, `pown`, `min` of
ints, `atomic_add`, `sincos`): they are defined here for C, so the printer stays one
for every language. `<tgmath.h>` makes `sqrt`, `exp`, `fmin`, ... type-generic as they are
in OpenCL (a float argument computes in float). Vectors of lanes (mcl/codegen/lanes.py,
printed for C by `lanes.CLaneEmitter`) are GCC/Clang vector types named as OpenCL names
them (`float16`, `int8`), with loads and stores of any alignment.
"""

from __future__ import annotations

from mcl.codegen.lanes import WIDTHS

# Element types of the lane vectors (lanes.py vectorises float and int only).
_ELEMENTS = ("float", "int")


def vector_name(element: str, width: int) -> str:
    return f"{element}{width}"


def vload(element: str, width: int) -> str:
    """The function that loads a vector from an address of any alignment."""
    return f"mcl_vload_{vector_name(element, width)}"


def vstore(element: str, width: int) -> str:
    return f"mcl_vstore_{vector_name(element, width)}"


def _vector_types() -> str:
    lines = []
    for element in _ELEMENTS:
        for width in WIDTHS:
            name = vector_name(element, width)
            size = 4 * width
            lines += [
                f"typedef {element} {name} __attribute__((vector_size({size})));",
                f"static inline {name} {vload(element, width)}(const {element}* p)"
                f" {{ {name} v; memcpy(&v, p, sizeof v); return v; }}",
                f"static inline void {vstore(element, width)}({element}* p, {name} v)"
                " { memcpy(p, &v, sizeof v); }",
            ]
    return "\n".join(lines)


# OpenCL's integer atomics on GCC's type-generic builtins; min and max by compare-and-swap
# (GCC has no __atomic_fetch_min). They are relaxed: OpenCL 1.x atomics order nothing else.
_ATOMICS = """\
#define atomic_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define atomic_sub(p, v) __atomic_fetch_sub((p), (v), __ATOMIC_RELAXED)
#define atomic_inc(p) __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#define atomic_dec(p) __atomic_fetch_sub((p), 1, __ATOMIC_RELAXED)
#define atomic_xchg(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define atomic_and(p, v) __atomic_fetch_and((p), (v), __ATOMIC_RELAXED)
#define atomic_or(p, v) __atomic_fetch_or((p), (v), __ATOMIC_RELAXED)
#define atomic_xor(p, v) __atomic_fetch_xor((p), (v), __ATOMIC_RELAXED)
#define atomic_cmpxchg(p, c, v) __sync_val_compare_and_swap((p), (c), (v))
static inline int atomic_min(volatile int* p, int v)
{
    int old = *p;
    while (v < old && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
    return old;
}
static inline int atomic_max(volatile int* p, int v)
{
    int old = *p;
    while (v > old && !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
    return old;
}"""

_SCALARS = """\
typedef unsigned char uchar;
typedef unsigned int uint;
// OpenCL's address-space qualifiers (in mcl's runtime helpers): C has one address space.
#define __global
#define __local
#define __constant const
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline uint as_uint(float x) { uint u; memcpy(&u, &x, sizeof u); return u; }
static inline float as_float(uint u) { float x; memcpy(&x, &u, sizeof x); return x; }
#define pown(x, n) pow((x), (__typeof__(x))(n))
// OpenCL's sincos(x, &c): returns sin(x), stores cos(x) (glibc's sincos differs).
#define sincos(x, c) (*(c) = cos(x), sin(x))"""


# The runner calls it once after loading the library: the threads of OpenMP's pool are
# created then, not in the first kernel's time.
START_FUNCTION = "mcl_openmp_start"
_START = f"""\
void {START_FUNCTION}(void)
{{
    #pragma omp parallel
    {{
    }}
}}"""


def prelude() -> str:
    """Includes, OpenCL built-ins in C, the lane vector types, and the pool's start."""
    return "\n".join([
        "#include <math.h>",
        "#include <stdbool.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <tgmath.h>",
        "",
        _SCALARS,
        "",
        _ATOMICS,
        "",
        _vector_types(),
        "",
        _START,
        "",
    ])
