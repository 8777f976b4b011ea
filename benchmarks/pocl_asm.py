"""What PoCL's compiler made of a CPU version of the matmul series: the vector FMAs of
the hottest loop by register width and the stack accesses beside them (spills).

    PYTHONPATH=. python benchmarks/pocl_asm.py --versions x86_avx512_v3,x86_avx512_v4 \\
        [--device 1] [-D NR_VECS=1] [--tuned] [--out DIR]

PoCL compiles a kernel's work-group function at its first launch and keeps the machine
code in its kernel cache as a shared object (mcl.backends.opencl.pocl_cache). The script points
`POCL_CACHE_DIR` at a fresh folder, launches each version once at a small size, and
disassembles the `.so` (objdump). The innermost loop with the most FMAs is the
micro-kernel: its FMAs say which registers PoCL's LLVM used (zmm: AVX-512, ymm: AVX2 or
LLVM's preference for 256-bit vectors), and a store to the stack inside that loop is a
register spill (the loop writes no private array), a stack load either a spill reload or
a read of a packed private array (x86_avx512_v4's bPack). The counts are static (per
loop body), so they compare builds, not runtimes. `-D NAME=VALUE` sets a named constant
of every version (docs/tuning.md); `--tuned` uses each version's .tuned.toml entry for
the device instead.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_JUMP = re.compile(r"^j[a-z]+$")
_STACK = re.compile(r"\((%rsp|%rbp)\)|\((%rsp|%rbp),")


@dataclass(frozen=True)
class Instruction:
    address: int
    mnemonic: str
    operands: str


@dataclass
class Loop:
    start: int
    end: int
    counts: Counter

    @property
    def fmas(self) -> int:
        return sum(v for k, v in self.counts.items() if k.startswith("fma "))

    @property
    def fma_lanes(self) -> int:
        """Float multiply-adds per pass through the loop (scalar FMAs count one)."""
        return sum(self.counts[f"fma {w}"] * n for w, n in LANES.items()) \
            + self.counts["fma scalar"]


# Float lanes of a vector register.
LANES = {"zmm": 16, "ymm": 8, "xmm": 4}


def disassemble(shared_object: Path) -> list[Instruction]:
    return parse(subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(shared_object)],
                                capture_output=True, text=True, check=True).stdout)


def parse(text: str) -> list[Instruction]:
    """The instructions of `objdump -d --no-show-raw-insn` output."""
    found = []
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) != 2 or not parts[0].endswith(":"):
            continue
        try:
            address = int(parts[0][:-1], 16)
        except ValueError:
            continue
        mnemonic, _, operands = parts[1].partition(" ")
        found.append(Instruction(address, mnemonic, operands.strip()))
    return found


def classify(ins: Instruction) -> list[str]:
    """The counters an instruction adds to: FMAs by register width, vector loads and
    stores, broadcasts, and stack loads and stores (AT&T syntax: the destination last)."""
    keys = []
    width = next((w for w in LANES if f"%{w}" in ins.operands), None)
    if ins.mnemonic.startswith("vfmadd") or ins.mnemonic.startswith("vfnmadd"):
        keys.append(f"fma {width}" if width else "fma scalar")
    if "broadcast" in ins.mnemonic:
        keys.append("broadcast")
    if "(" in ins.operands:
        memory_last = ins.operands.rstrip().endswith(")")
        on_stack = bool(_STACK.search(ins.operands))
        if ins.mnemonic.startswith("vmov") and width:
            keys.append("vector store" if memory_last else "vector load")
        if on_stack:
            keys.append("stack store" if memory_last and ins.mnemonic.startswith(("vmov", "mov"))
                        else "stack load")
    return keys


def loops(code: list[Instruction]) -> list[Loop]:
    """Every backward jump's range, with the counts of the instructions inside it."""
    found = []
    index = {ins.address: k for k, ins in enumerate(code)}
    for k, ins in enumerate(code):
        if not _JUMP.match(ins.mnemonic):
            continue
        target = ins.operands.split()[0] if ins.operands else ""
        try:
            address = int(target, 16)
        except ValueError:
            continue
        if address >= ins.address or address not in index:
            continue
        body = code[index[address]:k + 1]
        counts: Counter = Counter(key for i in body for key in classify(i))
        counts["instructions"] = len(body)
        found.append(Loop(address, ins.address, counts))
    return found


def micro_kernel(found: list[Loop]) -> Loop | None:
    """Of the loops with FMAs that hold no other such loop (innermost), the one with the
    most FMAs."""
    with_fmas = [loop for loop in found if loop.fmas]
    innermost = [
        loop for loop in with_fmas
        if not any(other is not loop and loop.start <= other.start and other.end <= loop.end
                   for other in with_fmas)
    ]
    return max(innermost, key=lambda loop: loop.fmas, default=None)


def build_and_launch(name: str, device: Any, library: Any, constants: dict[str, int],
                     tuned: bool, size: int) -> str | None:
    """Build version `name` and launch it once (PoCL compiles at the first launch); the
    constants used, or None when it could not run."""
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import prepare_session, tuned_overrides
    from mcl.report.series import load_series
    from mcl.verify import load_reference, make_inputs

    spec = load_series(REPO / "kernels" / "matmul", library).version(name)
    if spec is None or spec.path is None or spec.leaf_for("cpu") is None:
        print(f"{name}: not a CPU version of the series")
        return None
    leaf = spec.leaf_for("cpu")
    assert leaf is not None
    program = load_program(spec.path, (), library)
    sizes = {"n": size, "m": size, "p": size}
    overrides = dict(constants) or None
    if tuned:
        overrides = tuned_overrides(program, leaf, device, sizes) or overrides
    session, problem = prepare_session(program, "matmul", leaf, library, device, overrides)
    if session is None:
        print(f"{name}: {problem}")
        return None
    reference = load_reference(REPO / "kernels" / "matmul" / "reference.py")
    _, inputs = make_inputs(reference, sizes, 0)
    session.run("matmul", dict(inputs), 1)
    return ", ".join(f"{k} = {v}" for k, v in sorted((overrides or {}).items())) or "as written"


def hot_loop(name: str, device: Any, library: Any, constants: dict[str, int],
             tuned: bool = False, size: int = 200) -> tuple[Loop, list[Instruction], str] | str:
    """PoCL's micro-kernel of version `name` (built and launched with these constants in
    the kernel cache of POCL_CACHE_DIR), all its instructions and the constants used; or
    why there is none."""
    cache = Path(os.environ["POCL_CACHE_DIR"])
    before = set(cache.rglob("*.so"))
    used = build_and_launch(name, device, library, constants, tuned, size)
    if used is None:
        return f"{name}: could not be built"
    made = sorted(set(cache.rglob("*.so")) - before)
    if not made:
        return f"{name}: PoCL left no .so in {cache}"
    code = disassemble(made[0])
    hot = micro_kernel(loops(code))
    if hot is None:
        return f"{name}: no loop with FMAs in {made[0]}"
    return hot, code, used


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", help="OpenCL device (default: the PoCL CPU device)")
    parser.add_argument("--versions", default="x86_avx512_v3,x86_avx512_v4")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME=VALUE", help="a named constant (repeatable)")
    parser.add_argument("--tuned", action="store_true", help="use each .tuned.toml")
    parser.add_argument("--size", type=int, default=200, help="n = m = p of the launch")
    parser.add_argument("--out", metavar="DIR", help="write each version's micro-kernel")
    args = parser.parse_args(argv)
    constants = {k: int(v) for k, v in (d.split("=", 1) for d in args.defines)}

    # PoCL reads its cache folder when the platform is first used: before pyopencl loads.
    os.environ["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="pocl-asm-")
    sys.path.insert(0, str(REPO))
    from mcl.backends.opencl.runner import describe, select_device
    from mcl.hdl.library import default_library

    device = select_device(args.device)
    library = default_library()
    print(f"device: {describe(device)}")
    columns = ("fma zmm", "fma ymm", "fma xmm", "fma scalar", "vector load", "broadcast",
               "stack load", "stack store", "instructions")
    print(f"{'version':<18}" + "".join(f"{c:>13}" for c in columns) + "  constants")
    for name in [v.strip() for v in args.versions.split(",") if v.strip()]:
        found = hot_loop(name, device, library, constants, args.tuned, args.size)
        if isinstance(found, str):
            print(found)
            continue
        hot, code, used = found
        print(f"{name:<18}" + "".join(f"{hot.counts[c]:>13}" for c in columns) + f"  {used}")
        if args.out:
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            lines = [f"{i.address:x}: {i.mnemonic} {i.operands}" for i in code
                     if hot.start <= i.address <= hot.end]
            (out / f"{name}.loop.s").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
