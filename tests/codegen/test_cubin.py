"""mcl.backends.cuda.cubin reads the registers per thread NVIDIA's compiler gave each kernel of a
cubin that NVRTC made (no GPU needed)."""

from __future__ import annotations

import pytest

from mcl.backends.cuda.cubin import register_counts
from mcl.backends.cuda.nvrtc import compile_cuda

# `light` keeps a value or two; `heavy` keeps 48 sums live across a loop (unrolled), so
# it needs more registers; `capped` is `heavy` whose launch bounds (1024 threads, 2 blocks
# per SM) leave it at most 65,536 / 2,048 = 32 registers.
SOURCE = """
extern "C" __global__ void light(float* a) { a[threadIdx.x] += 1.0f; }

#define HEAVY(name, bounds) \\
extern "C" __global__ void bounds name(const float* __restrict__ a, float* b, int n) { \\
    float s[48]; \\
    _Pragma("unroll") for (int k = 0; k < 48; k++) s[k] = 0.0f; \\
    for (int i = threadIdx.x; i < n; i += blockDim.x) { \\
        _Pragma("unroll") for (int k = 0; k < 48; k++) s[k] += a[i * 48 + k] * (k + 1); \\
    } \\
    _Pragma("unroll") for (int k = 0; k < 48; k++) b[threadIdx.x * 48 + k] = s[k]; \\
}
HEAVY(heavy, )
HEAVY(capped, __launch_bounds__(1024, 2))
"""


def test_each_kernel_has_the_compiler_s_register_count() -> None:
    counts = register_counts(compile_cuda(SOURCE, "regs.cu", "sm_90").cubin)
    assert set(counts) == {"light", "heavy", "capped"}
    assert all(1 <= c <= 255 for c in counts.values())
    assert counts["light"] < counts["heavy"]
    assert counts["heavy"] >= 48  # its 48 live sums
    assert counts["capped"] <= 32


def test_not_a_cubin() -> None:
    with pytest.raises(ValueError, match="not a 64-bit"):
        register_counts(b"\x7fELF\x01\x01" + bytes(64))
    with pytest.raises(ValueError):
        register_counts(b"// PTX, not a cubin")
