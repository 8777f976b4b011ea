"""A version whose block no multiprocessor of its leaf can hold is an error of `mcl check`
with the limit named (mcl.feedback.block_refusal), not first a refusal at the launch:
shared memory per block (hopper: 228 kB less the 1 kB CUDA reserves per block; fermi:
48 kB) and the compiler's registers times the threads against the register file."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.feedback.occupancy import BlockUsage, SmResources, refusal

ROOT = Path(__file__).resolve().parents[2]
GPU_V3 = ROOT / "kernels" / "matmul" / "gpu_v3.mcpl"  # 4 * p floats of shared memory
SIZES = ["-D", "n=4096", "-D", "m=4096"]


def _check(path: Path, level: str, *defines: str,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    status = main(["check", str(path), "--level", level, "--severity", "warning",
                   *SIZES, *defines])
    captured = capsys.readouterr()
    # The report wraps its lines at the terminal's width: compared as one line.
    return status, " ".join((captured.err + captured.out).split())


def test_shared_memory_over_fermi_s_48_kb(capsys: pytest.CaptureFixture[str]) -> None:
    """matmul gpu_v3 at p = 4096 asks 65,536 B per block: fermi's SM holds 48 kB."""
    status, out = _check(GPU_V3, "fermi", "-D", "p=4096", capsys=capsys)
    assert status == 1
    assert "[mcpl-block-resources]" in out
    assert ("65,536 B of shared memory per block, but a multiprocessor gives one block at "
            "most 49,152 B") in out


@pytest.mark.parametrize(("p", "refused"), [(4096, False), (14528, False), (14529, True),
                                            (70000, True)])
def test_shared_memory_at_hopper_per_block(p: int, refused: bool,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """hopper gives one block 228 kB less the 1,024 B CUDA reserves: 232,448 B. 65,536 B
    (p = 4096) runs through CUDA's dynamic shared memory; 14,528 floats x 4 rows fill it
    exactly, one more float does not (the capacity alone, 233,472 B, would let it by)."""
    status, out = _check(GPU_V3, "hopper", "-D", f"p={p}", capsys=capsys)
    assert status == (1 if refused else 0), out
    assert ("[mcpl-block-resources]" in out) == refused
    if refused:
        assert (f"{16 * p:,} B of shared memory per block, but a multiprocessor gives one "
                "block at most 232,448 B (233,472 B less the 1,024 B reserved for each "
                "block)") in out


def _warps_from_a_parameter(tmp_path: Path) -> Path:
    """matmul hopper_v1 with its warps per block a parameter `nw`: no `__launch_bounds__`
    then caps NVRTC's registers, which it counts at over 64 per thread."""
    text = (ROOT / "kernels" / "matmul" / "hopper_v1.mcpl").read_text()
    text = text.replace("hopper void matmul(int n, int m, int p,",
                        "hopper void matmul(int n, int m, int p, int nw,")
    text = text.replace("foreach (int w in NR_WARPS warps)", "foreach (int w in nw warps)")
    path = tmp_path / "warps.mcpl"
    path.write_text(text)
    return path


def test_registers_times_threads_over_the_file(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """32 warps of the compiler's count (> 64 registers a thread) need more than hopper's
    65,536 registers; 4 warps fit."""
    path = _warps_from_a_parameter(tmp_path)
    status, out = _check(path, "hopper", "-D", "p=4096", "-D", "nw=32", capsys=capsys)
    assert status == 1, out
    found = re.search(r"(\d+) registers per thread \(the compiler's count\) for 1,024 "
                      r"threads: 32 warps of ([\d,]+) registers, ([\d,]+) in all, but the "
                      r"register file holds 65,536", out)
    assert found is not None, out
    registers, per_warp, total = (int(g.replace(",", "")) for g in found.groups())
    assert registers > 64 and per_warp == math.ceil(registers * 32 / 256) * 256
    assert total == 32 * per_warp > 65536
    status, out = _check(path, "hopper", "-D", "p=4096", "-D", "nw=4", capsys=capsys)
    assert status == 0, out


HOPPER_SM = SmResources(block_slots=32, thread_slots=2048, registers=65536,
                        shared_bytes=233472, warp_slots=64, register_unit=256,
                        register_partitions=4, shared_unit=128, shared_reserved=1024)


def test_refusal_names_the_first_resource_that_allows_no_block() -> None:
    assert refusal(HOPPER_SM, BlockUsage(1024, 64, 232448)) is None  # every limit met
    assert refusal(HOPPER_SM, BlockUsage(1024, 0, 232449)) is not None
    assert refusal(HOPPER_SM, BlockUsage(1024, 65, 0)) is not None  # 32 x 2,304 registers
    too_many = refusal(HOPPER_SM, BlockUsage(4096, 0, 0))
    assert too_many == ("4,096 threads per block, but a multiprocessor holds 2,048 threads "
                        "and 64 warps")
    # An estimate of the registers (0 here: not the compiler's count) refuses nothing.
    assert refusal(HOPPER_SM, BlockUsage(1024, 0, 0)) is None
