"""benchmarks/pocl_asm.py: finding the micro-kernel in PoCL's machine code and counting its
FMAs and spills, and what it finds in x86_avx512_v4 (an explicit register tile)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import types

import pytest

from .series_support import BENCHMARKS, benchmark_script


def _script() -> types.ModuleType:
    return benchmark_script("pocl_asm")


# Two nested loops as objdump prints them: the outer one holds the inner one, which has
# the FMAs and spills one sum to the stack.
OBJDUMP = """
0000000000001000 <_pocl_kernel_matmul>:
    1000:\tvmovaps (%rdi),%ymm0
    1004:\tvbroadcastss (%r8,%rdx,4),%ymm1
    100a:\tvfmadd231ps %ymm0,%ymm1,%ymm2
    1010:\tvfmadd231ps %ymm0,%ymm1,%ymm3
    1016:\tvmovaps %ymm3,0x40(%rsp)
    101c:\tvmovaps 0x60(%rsp),%ymm4
    1022:\tvfmadd231ps %zmm0,%zmm1,%zmm4
    1028:\tdec    %rbx
    102b:\tjne    1000 <_pocl_kernel_matmul>
    102d:\tvmovups %ymm2,(%rsi)
    1031:\tdec    %rcx
    1034:\tjne    1000 <_pocl_kernel_matmul>
    1036:\tret
"""


def test_the_innermost_loop_with_fmas_is_the_micro_kernel() -> None:
    script = _script()
    code = script.parse(OBJDUMP)
    assert len(code) == 13
    found = script.loops(code)
    assert [(hex(loop.start), hex(loop.end)) for loop in found] == [
        ("0x1000", "0x102b"), ("0x1000", "0x1034")]
    hot = script.micro_kernel(found)
    assert hot is not None and hot.end == 0x102B
    assert hot.counts["fma ymm"] == 2 and hot.counts["fma zmm"] == 1
    assert hot.fma_lanes == 2 * 8 + 16
    assert hot.counts["stack store"] == 1 and hot.counts["stack load"] == 1
    assert hot.counts["broadcast"] == 1 and hot.counts["vector load"] == 2
    assert hot.counts["vector store"] == 1


@pytest.mark.slow
def test_v4_keeps_its_register_tile_in_registers() -> None:
    """With one vector of columns per row (NR_VECS = 1, the tile for a 16-register AVX2
    build) the micro-kernel of x86_avx512_v4 is 6 vector multiply-adds of 16 lanes per
    step of k on whatever registers the PoCL build uses, and spills nothing. (A process of
    its own: PoCL takes its cache folder from the environment once per process.)"""
    pytest.importorskip("pyopencl")
    if shutil.which("objdump") is None:
        pytest.skip("objdump (binutils) is not installed")
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "pocl_asm.py"), "--versions", "x86_avx512_v4",
         "-D", "NR_VECS=1", "--size", "100"],
        capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()[-2:]
    assert header.split()[:3] == ["version", "fma", "zmm"]
    cells = row.split()
    assert cells[0] == "x86_avx512_v4" and cells[-3:] == ["NR_VECS", "=", "1"]
    zmm, ymm, xmm, scalar, _, _, _, stack_stores = (int(c) for c in cells[1:9])
    assert 16 * zmm + 8 * ymm + 4 * xmm + scalar == 6 * 16
    assert stack_stores == 0
