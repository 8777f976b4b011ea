"""OpenCL helper functions that generated kernels use when MCPL needs more than OpenCL C
offers: float atomics (OpenCL 1.x only has integer atomics, so a compare-and-swap loop on
the bits) and integer powers (MCPL's `^` on ints)."""

from __future__ import annotations


def _atomic_add_float(space: str) -> str:
    return f"""// atomicAdd on a float in __{space} memory: compare-and-swap on its bits.
float mcl_atomic_add_float_{space}(volatile __{space} float* target, float value)
{{
    uint old = as_uint(*target);
    uint assumed;
    do {{
        assumed = old;
        old = atomic_cmpxchg((volatile __{space} uint*)target, assumed,
                             as_uint(as_float(assumed) + value));
    }} while (old != assumed);
    return as_float(old);
}}
"""


HELPERS: dict[str, str] = {
    "mcl_atomic_add_float_global": _atomic_add_float("global"),
    "mcl_atomic_add_float_local": _atomic_add_float("local"),
    "mcl_ipow": """// MCPL's ^ on integers.
int mcl_ipow(int base, int exponent)
{
    int result = 1;
    if (exponent < 0) {
        return base == 1 ? 1 : (base == -1 ? (exponent % 2 ? -1 : 1) : 0);
    }
    for (; exponent > 0; exponent--) {
        result *= base;
    }
    return result;
}
""",
}
