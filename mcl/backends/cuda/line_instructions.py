"""The machine instructions NVIDIA's compiler makes of each source line of a kernel, where
they can be had without a GPU (the CUDA backend's instruction counter, which the command
line hands the feedback, mcl.feedback.compiler_instructions): NVRTC compiles the
kernel's generated CUDA with line information (`-lineinfo`) for the architecture of its
leaf's CUDA mapping, as for the register count (mcl.backends.cuda.registers), and
`nvdisasm` (`nvidia-cuda-nvdisasm`, in the extra `mcl[cuda]`) lists the cubin's
instructions with the line each comes from. The generated code carries a `#line`
directive per statement (mcl.codegen), so the lines are the MCPL source's.

The SASS, not the PTX: ptxas expands one PTX instruction into many (a signed division by
a size, `div.s32`, into 27 instructions, the decomposition of a block index into three
into 73, which Nsight Compute attributes to the foreach lines exactly so), and it decides
how often a loop is unrolled (a load in a loop unrolled by 4 appears 4 times and once
more in the remainder).

None where a count cannot come (the register count's reasons, or no `nvdisasm`). A
compile and a disassembly cost about a second, so the counts are kept as the register
counts are: per generated source, architecture and NVRTC version, in the process and on
disk (the cache folder `line-instructions`).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.backends.by_program import program_key, read_kept, toolchain_key, write_kept
from mcl.backends.cuda.registers import (
    compiled_arch,
    generated_cuda,
    kept_counts,
    kernel_names,
    lineinfo_cubin,
    run_within,
    source_key,
)
from mcl.diagnostics import MclError
from mcl.feedback.compiler_budget import NotCompiled
from mcl.feedback.compiler_budget import seconds as compile_seconds
from mcl.feedback.compiler_instructions import LineCode, Lines
from mcl.feedback.facts.compiled import Store

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import KernelFacts

CACHE_KIND = "line-instructions"
# The folder of the listings kept by the inputs of code generation (mcl.backends.by_program).
WARM_KIND = "line-instructions-by-program"
# The folder of the path of nvdisasm, kept by the toolchain (_nvdisasm).
TOOL_KIND = "nvdisasm"
# The form of the kept counts, in their key: 2 keeps the loads in flight at each use
# added and the uses (1 kept the most).
CACHE_FORM = 2
# Loads and stores, by the root of their opcode (generic, global, shared; atomics and
# reductions move their operand too); local loads and stores (spills) are not the
# source's accesses.
_MEMORY = frozenset({"LD", "ST", "LDG", "STG", "LDS", "STS", "ATOM", "ATOMG", "ATOMS",
                     "RED", "REDG"})
_GLOBAL_LOADS = frozenset({"LD", "LDG"})
# The bytes per thread of a load or store by its width modifier; 4 where none is given.
_WIDTHS = {"128": 16, "64": 8, "U16": 2, "S16": 2, "U8": 1, "S8": 1}
_LINE = re.compile(r'//## File "([^"]*)", line (\d+)')
_SECTION = re.compile(r"^\s*\.section\s+\.text\.([\w$]+)")
_LABEL = re.compile(r"^\s*(\.L_x_\d+):")
_INSTRUCTION = re.compile(
    r"^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)(.*)")
_TARGET = re.compile(r"\((\.L_x_\d+)\)")
_FUNCTION = re.compile(r"^\s*\.type\s+([^,\s]+)\s*,\s*@function")
_REGISTER = re.compile(r"\bR\d+\b")
# Instructions after which no load issued before is still in flight.
_WAITS_ALL = frozenset({"BRA", "BAR", "EXIT", "RET", "CALL", "WARPSYNC"})
_memory: Store[str, dict[str, int]] = Store(64)


def line_instructions(facts: KernelFacts) -> Lines | NotCompiled | None:
    """The machine code of each source line of the function of `facts` (over all of its
    generated kernels), NotCompiled where NVRTC or nvdisasm ran past its budget, or None
    (see the module). A listing found before for the same inputs of code generation is
    read back without generating or loading NVRTC (mcl.backends.by_program)."""
    arch = compiled_arch(facts)
    if arch is None:
        # nvdisasm is looked for only where code is compiled: finding it imports
        # cuda.pathfinder, and the compile's budget mcl.cpu_budget, which a check at any
        # other leaf need not pay for
        return None
    warm = program_key(facts, arch, CACHE_KIND, CACHE_FORM)
    kept = read_kept(warm, WARM_KIND)
    if kept is not None:
        return _lines(kept, {key.rsplit(":", 3)[0] for key in kept})
    try:
        made = generated_cuda(facts, arch)
    except (MclError, ValueError, ImportError, OSError, subprocess.SubprocessError):
        return None
    if made is None:
        return None
    from mcl.cpu_budget import PastBudget, StepFailed

    generated, arch = made

    def listing(tool: str) -> dict[str, int]:
        # compiled only where the listing of this source is not kept: the cubin of a
        # source whose listing is kept on disk (the code an edit left as it was) is
        # not needed, and compiling it took as long as the rest of the check
        try:
            cubin = lineinfo_cubin(generated, arch)
        except PastBudget as past:
            raise _CompilePastBudget(past.seconds) from None
        return _flat(per_line(_disassemble(tool, cubin), ()))

    try:
        tool = _nvdisasm()
        if tool is None:
            return None
        flat = kept_counts(
            source_key(generated, arch, CACHE_KIND, CACHE_FORM, tool), CACHE_KIND, _memory,
            lambda: listing(tool))
        names = set(kernel_names(facts, generated))
    except _CompilePastBudget as past:
        return NotCompiled("NVRTC", past.seconds)
    except PastBudget as past:
        return NotCompiled("nvdisasm", past.seconds)
    except (MclError, ValueError, ImportError, OSError, subprocess.SubprocessError,
            StepFailed):
        return None
    write_kept(warm, {k: v for k, v in flat.items() if k.rsplit(":", 3)[0] in names},
               WARM_KIND)
    return _lines(flat, names)


class _CompilePastBudget(Exception):
    """NVRTC's compile ran past its budget (mcl.cpu_budget.PastBudget of the compile,
    told apart from one of nvdisasm)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def per_line(listing: str, kernels: tuple[str, ...] | set[str]
             ) -> dict[tuple[str, int, int], LineCode]:
    """(kernel, source line, loop depth) -> its code, from `nvdisasm --print-line-info`'s
    listing; only the kernels named (every one where none is). The loop depth of an
    instruction is how many loops of the machine code hold it: a branch back to an
    earlier label closes a loop from that label to itself. Lines of a file other than
    the MCPL source (the generated `.cu` itself: the kernel's entry) count as line 0.
    The padding (NOP) and the closing branch to itself are not executed and not
    counted, nor the functions the kernel calls, placed after it in its section: the
    slow paths of a correctly rounded division or square root, which run only for
    operands near the ends of the range."""
    rows: list[_Row] = []
    labels: dict[tuple[str, str], int] = {}
    loops: dict[str, list[tuple[int, int]]] = {}
    kernel, line, address, pending, called = "", 0, 0, [], False
    for text in listing.splitlines():
        if (section := _SECTION.match(text)) is not None:
            kernel, line, called = section.group(1), 0, False
            continue
        if (function := _FUNCTION.match(text)) is not None and function.group(1) != kernel:
            called = True  # a function the kernel calls: to the end of its section
            continue
        if called:
            continue
        if (where := _LINE.search(text)) is not None:
            line = 0 if where.group(1).endswith(".cu") else int(where.group(2))
            continue
        if (named := _LABEL.match(text)) is not None:
            pending.append(named.group(1))
            continue
        instruction = _INSTRUCTION.match(text)
        if instruction is None:
            continue
        address = int(instruction.group(1), 16)
        labels.update({(kernel, label): address for label in pending})
        pending = []
        parts = instruction.group(3).split(".")
        target = _TARGET.search(instruction.group(4))
        if parts[0] == "BRA" and target is not None:
            start = labels.get((kernel, target.group(1)))
            if start == address:
                continue  # the closing branch to itself
            if start is not None:
                loops.setdefault(kernel, []).append((start, address))
        if parts[0] != "NOP" and (not kernels or kernel in kernels):
            depth = 0  # set below, once every loop is known
            rows.append(_Row(kernel, line, address, depth, parts, instruction.group(4),
                             instruction.group(2) is not None))
    for row in rows:
        row.depth = sum(a <= row.address <= b for a, b in loops.get(row.kernel, ()))
    found: dict[tuple[str, int, int], list[int]] = {}
    for row in rows:
        counts = found.setdefault(row.key, [0, 0, 0, 0, 0, 0])
        counts[0] += 1
        if row.parts[0] in _MEMORY:
            counts[1] += _width(row.parts)
            counts[2] += row.parts[0] in _GLOBAL_LOADS
        counts[3] += row.parts[0] == "BRA" and row.predicated
    for key, (added, uses) in _in_flight(rows).items():
        found[key][4:] = [added, uses]
    return {k: _code(v, k[2]) for k, v in found.items()}


def _code(v: list[int], depth: int) -> LineCode:
    """A line's code from its figures: instructions, bytes, global loads, conditional
    branches, and the loads in flight at its loads' uses added and how many uses."""
    return LineCode(v[0], v[1], v[2], depth, v[3], v[4] / v[5] if v[5] else 0.0,
                    v[4], v[5])


@dataclass
class _Row:
    """One instruction of the listing."""

    kernel: str
    line: int
    address: int
    depth: int
    parts: list[str]  # the opcode and its modifiers
    operands: str
    predicated: bool

    @property
    def key(self) -> tuple[str, int, int]:
        return self.kernel, self.line, self.depth


def _width(parts: list[str]) -> int:
    """The bytes per thread of a load or store, by its width modifier."""
    return next((_WIDTHS[p] for p in parts[1:] if p in _WIDTHS), 4)


def _in_flight(rows: list[_Row]) -> dict[tuple[str, int, int], tuple[int, int]]:
    """For each line with global loads, the loads a warp has issued and not yet used
    when it first uses each of the line's (the registers a load writes are read or
    written again: the warp waits there), added over the line's loads, and how many
    loads that is: their mean is the loads a warp keeps in flight on average (Little's
    law's figure), in the order of the listing; a branch or a barrier waits for all.
    Loads a loop unrolled by 4 issues one after another before their first use are 4,
    3, 2 and 1 in flight at their uses, 2.5 on average; a load used by the next
    instruction is 1 (Hong and Kim's memory-warp parallelism, ISCA 2009, within one
    warp)."""
    out: dict[tuple[str, int, int], tuple[int, int]] = {}
    waiting: dict[str, int] = {}  # a register a load writes -> the load's address
    lines: dict[int, tuple[str, int, int]] = {}  # a load's address -> its line
    kernel = ""
    for row in rows:
        if row.kernel != kernel:
            waiting, kernel = {}, row.kernel
        used = set(_REGISTER.findall(row.operands))
        if row.parts[0] in _WAITS_ALL:
            used |= set(waiting)
        done = {waiting[r] for r in used if r in waiting}
        issued = len(set(waiting.values()))
        for load in done:
            added, uses = out.get(lines[load], (0, 0))
            out[lines[load]] = added + issued, uses + 1
        waiting = {r: load for r, load in waiting.items() if load not in done}
        first = _REGISTER.match(row.operands.strip())
        if row.parts[0] in _GLOBAL_LOADS and first is not None:
            lines[row.address] = row.key
            base = int(first.group(0)[1:])
            for r in range(base, base + max(1, _width(row.parts) // 4)):
                waiting[f"R{r}"] = row.address
    return out


def _flat(code: dict[tuple[str, int, int], LineCode]) -> dict[str, int]:
    """`code` as the disk cache keeps it: `kernel:line:depth:figure` -> a number (the
    figures: instructions, bytes, global loads, conditional branches, the loads in
    flight at its loads' uses added, and the uses)."""
    out: dict[str, int] = {}
    for (kernel, line, depth), c in code.items():
        out[f"{kernel}:{line}:{depth}:i"] = c.instructions
        out[f"{kernel}:{line}:{depth}:b"] = c.memory_bytes
        out[f"{kernel}:{line}:{depth}:g"] = c.global_loads
        out[f"{kernel}:{line}:{depth}:r"] = c.branches
        out[f"{kernel}:{line}:{depth}:f"] = c.flying
        out[f"{kernel}:{line}:{depth}:u"] = c.uses
    return out


def _lines(flat: dict[str, int], kernels: set[str]) -> dict[int, tuple[LineCode, ...]]:
    """The code of each source line over the `kernels` named, by loop depth, from the
    cache's form."""
    sums: dict[tuple[int, int], list[int]] = {}
    for key, value in flat.items():
        kernel, line, depth, figure = key.rsplit(":", 3)
        if kernel in kernels:
            v = sums.setdefault((int(line), int(depth)), [0, 0, 0, 0, 0, 0])
            v["ibgrfu".index(figure)] += value
    out: dict[int, tuple[LineCode, ...]] = {}
    for (at, deep), v in sorted(sums.items()):
        out[at] = (*out.get(at, ()), _code(v, deep))
    return out


def _nvdisasm() -> str | None:
    """The path of `nvdisasm` (the wheel `nvidia-cuda-nvdisasm`, or a CUDA toolkit's),
    or None. A path found is kept on disk by the toolchain (by_program.toolchain_key: the
    NVIDIA distributions installed and where a toolkit is looked for) while the file is
    there: looking for it imports `cuda.pathfinder` and searches the folders (about 40 ms
    of a check after an edit whose listing is kept by its generated source). None is
    not kept: a toolkit installed later is found."""
    key = toolchain_key(TOOL_KIND)
    kept = read_kept(key, TOOL_KIND)
    if kept is not None and len(kept) == 1:
        path = next(iter(kept))
        if os.path.isfile(path):
            return path
    found = _find_nvdisasm()
    if found is not None:
        write_kept(key, {found: 1}, TOOL_KIND)
    return found


def _find_nvdisasm() -> str | None:
    """The path of `nvdisasm` as NVIDIA's finder gives it, or None."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        return None
    try:
        return find_nvidia_binary_utility("nvdisasm")
    except Exception:  # noqa: BLE001 - a finder that fails finds nothing
        return None


def _disassemble(tool: str, cubin: bytes) -> str:
    """`nvdisasm --print-line-info` of `cubin` (the tool reads a file, not a pipe), under
    the compiler's budget of CPU time (mcl.feedback.compiler_budget): run from a child
    process under it, whose CPU limit the tool inherits and whose CPU time includes the
    tool's once it has ended (PastBudget past it)."""
    from mcl.cpu_budget import WALL_FACTOR

    seconds = compile_seconds()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        return run_within(lambda: subprocess.run(
            [tool, "--print-line-info", str(path)], capture_output=True, text=True,
            check=True, timeout=seconds * WALL_FACTOR).stdout, seconds)
