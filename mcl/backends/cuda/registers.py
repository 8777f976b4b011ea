"""The registers per thread NVIDIA's compiler gives a kernel, where it can be asked without
a GPU (the CUDA backend's register counter, which the registry finds by this module's
name, mcl.backends.register_count, and the command line hands the feedback,
mcl.feedback.compiler_registers): NVRTC (`nvidia-cuda-nvrtc`, the extra `mcl[cuda]`)
compiles the kernel's generated CUDA for the architecture its leaf's CUDA mapping names
(hopper: sm_90), and the count is read from the cubin (mcl.backends.cuda.cubin), as
ptxas decided it. The occupancy analysis uses it instead of the estimate of
`kernel_api.Context.registers_per_thread`, which was 0.2 to 2 times the compiler's count
on the kernels it was checked on (docs/validation.md, "Theoretical occupancy").

No count (None) where NVRTC is not installed, the level has no CUDA mapping or an
architecture this NVRTC does not compile for (fermi's sm_20), the description is not the
one the default library holds under its name (code generation reads the mapping beside
the description's file), or the program does not generate.

A compile costs about a second, so counts are kept per generated source, architecture
and NVRTC version: in the process (the editor's worker analyses the same kernel again at
every edit, most of which leave the generated CUDA as it was) and on disk under `<cache
dir>/registers` (mcl.parse_cache.cache_root: `$MCL_CACHE_DIR`, else
`$XDG_CACHE_HOME/mcl`, else `~/.cache/mcl`), at most `DISK_ENTRIES` files, the oldest
removed first. The disk cache is an optimisation only: a folder that cannot be written,
an entry that cannot be read, is ignored.

A module beside the backends' packages, not inside `mcl.backends.cuda`: importing that
package loads the code generators and numpy, which a check at fermi must not pay for.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from mcl.backends.bundled_leaf import bundled_leaf
from mcl.backends.by_program import program_key, read_kept, toolchain_key, write_kept
from mcl.diagnostics import MclError
from mcl.feedback.budget import not_counted
from mcl.feedback.compiler_budget import NotCompiled
from mcl.feedback.compiler_budget import seconds as compile_seconds
from mcl.feedback.facts.compiled import Store
from mcl.identity import Ref

if TYPE_CHECKING:
    from collections.abc import Callable

    from mcl.feedback.facts.kernel import KernelFacts

T = TypeVar("T")
# The folder of the answers kept by the inputs of code generation (mcl.backends.by_program).
WARM_KIND = "registers-by-program"
# The folder of NVRTC's version and architectures, kept by the toolchain (nvrtc_facts).
NVRTC_KIND = "nvrtc"
# The oldest architecture the NVRTC that `mcl[cuda]` asks for (nvidia-cuda-nvrtc 13)
# compiles for: fermi's sm_20 is ruled out without loading NVRTC.
OLDEST_ARCH = 75
_ARCH = re.compile(r'^arch\s*=\s*"(sm_\d+)"', re.MULTILINE)
_memory: Store[str, dict[str, int]] = Store(64)
# The last cubins compiled, by generated source, architecture and NVRTC version: the
# register count and the time model's listing per line read the same compile.
_cubins: Store[str, bytes] = Store(4)
# The compiles that ran past their budget (of the seconds kept), by the same key.
_past_budget: Store[str, float] = Store(16)
# The generated CUDA modules, by the checked program (its identity) and level they were
# made of: the register count and the listing per line ask for the same one.
_generated: Store[tuple[Ref, str], tuple[Any, str]] = Store(2)


def register_count(facts: KernelFacts) -> int | NotCompiled | None:
    """The registers per thread NVRTC's ptxas gives the function of `facts` (the most of
    its kernels, where its foreach nests make several), NotCompiled where the compile ran
    past its budget, or None (see the module). A count found before for the same inputs
    of code generation is read back without generating or loading NVRTC
    (mcl.backends.by_program)."""
    arch = compiled_arch(facts)
    if arch is None:
        return None
    warm = program_key(facts, arch, "registers")
    kept = read_kept(warm, WARM_KIND)
    if kept is not None and isinstance(kept.get("count"), int):
        return kept["count"]
    try:
        made = generated_cuda(facts, arch)
    except (MclError, ValueError, ImportError):
        return None
    if made is None:
        return None
    # the compile's budget and the cubin reader are imported only where a compile comes:
    # a check at any other leaf (fermi) pays for this module alone
    from mcl.backends.cuda.cubin import register_counts
    from mcl.cpu_budget import PastBudget, StepFailed

    generated, arch = made
    try:
        counts = kept_counts(source_key(generated, arch), "registers", _memory,
                             lambda: register_counts(lineinfo_cubin(generated, arch)))
    except PastBudget as past:
        return NotCompiled("NVRTC", past.seconds)
    except (MclError, ValueError, ImportError, StepFailed):
        return None
    found = [counts[k] for k in kernel_names(facts, generated) if k in counts]
    if not found:
        return None
    write_kept(warm, {"count": max(found)}, WARM_KIND)
    return max(found)


def run_within(work: Callable[[], T], seconds: float) -> T:
    """mcl.cpu_budget.run_within, imported where a compile comes (see register_count)."""
    from mcl.cpu_budget import run_within as run

    return run(work, seconds)


def source_key(generated: Any, arch: str, *parts: object) -> str:
    """The key of what a compile of the generated CUDA module `generated` for `arch`
    gives: its source, the architecture, the NVRTC version, and `parts` (what else the
    result depends on)."""
    given = "".join(f"{p}\0" for p in parts)
    return hashlib.sha256(f"{given}{arch}\0{nvrtc_facts()[0]}\0{generated.source}".encode()
                          ).hexdigest()


@cache
def nvrtc_facts() -> tuple[str, tuple[int, ...]]:
    """NVRTC's version ("13.0") and the architectures it compiles for (90 for sm_90),
    kept on disk by the toolchain (mcl.backends.by_program.toolchain_key: the NVIDIA
    distributions installed and where a toolkit is looked for), as the answers kept by
    the inputs of code generation are: asking NVRTC imports NVIDIA's bindings and loads
    the library (about 70 ms of CPU), which a check whose code was generated again after
    an edit, as it was before, need not pay for (the counts are kept by its source). An
    MclError where NVRTC is not installed."""
    key = toolchain_key(NVRTC_KIND)
    kept = read_kept(key, NVRTC_KIND)
    if kept is not None and {"major", "minor"} <= kept.keys():
        archs = tuple(sorted(v for k, v in kept.items() if k.startswith("sm_")))
        return f"{kept['major']}.{kept['minor']}", archs
    from mcl.backends.cuda.nvrtc import supported_archs, version

    found, archs = version(), tuple(supported_archs())
    major, _, minor = found.partition(".")
    write_kept(key, {"major": int(major), "minor": int(minor),
                     **{f"sm_{a}": a for a in archs}}, NVRTC_KIND)
    return found, archs


def kept_counts(key: str, kind: str, memory: Store[str, dict[str, int]],
                count: Callable[[], dict[str, int]]) -> dict[str, int]:
    """The counts under `key`: kept in the process (`memory`), else on disk in the
    folder of `kind`, else `count()` (the compiler's seconds are no analysis of the
    kernel: not counted in the feedback's budget), then kept in both."""
    counts = memory.get(key) or read_kept(key, kind)
    if counts is None:
        with not_counted():
            counts = count()
        write_kept(key, counts, kind)
    return memory.put(key, counts)


def lineinfo_cubin(generated: Any, arch: str) -> bytes:
    """The cubin NVRTC makes of the generated CUDA module `generated` for `arch`, with
    line information (`-lineinfo`, which changes no instruction and no register: it
    only maps the code to source lines), compiled once per process for the register
    count and the listing per line (mcl.backends.cuda.line_instructions): a second
    compile doubled what a cold `mcl check` spends in the compiler. The compile runs
    under the compiler's budget of CPU time (mcl.feedback.compiler_budget; PastBudget
    past it, kept so that the listing does not wait as long again)."""
    from mcl.backends.cuda.nvrtc import compile_cuda
    from mcl.cpu_budget import PastBudget

    key = source_key(generated, arch)
    cubin = _cubins.get(key)
    if cubin is None:
        seconds = compile_seconds()
        if (_past_budget.get(key) or 0.0) >= seconds:  # asked again: no second wait
            raise PastBudget(seconds)
        try:
            cubin = _cubins.put(key, run_within(lambda: compile_cuda(
                generated.source, f"{generated.name}.cu", arch, ("-lineinfo",)).cubin,
                seconds))
        except PastBudget:
            _past_budget.put(key, seconds)
            raise
    return cubin


def compiled_arch(facts: KernelFacts) -> str | None:
    """The architecture NVRTC would compile the program of `facts` for, as far as can be
    told without loading it: None at a level other than a bundled leaf, for a program
    with errors, where the leaf's CUDA mapping names no architecture or one older than
    OLDEST_ARCH, or where NVIDIA's bindings are not installed."""
    if bundled_leaf(facts) is None:
        return None
    arch = stated_arch(facts.hwd)
    if arch is None or int(arch.removeprefix("sm_")) < OLDEST_ARCH or \
            importlib.util.find_spec("cuda.bindings") is None:
        return None
    return arch


def generated_cuda(facts: KernelFacts, arch: str) -> tuple[Any, str] | None:
    """The generated CUDA module of the program of `facts` and `arch`, the architecture
    NVRTC compiles it for (`compiled_arch`, which the caller asked first), or None where
    no compiler count can come (see the module). What rules a count out is asked first,
    NVRTC last: importing it brings numpy, which a check at a level without a count must
    not pay for. An MclError, ValueError or ImportError of code generation or NVRTC is the
    caller's to catch."""
    hwd = facts.hwd
    library = bundled_leaf(facts)
    if library is None:
        return None
    from mcl.backends import generate_module

    if int(arch.removeprefix("sm_")) not in nvrtc_facts()[1]:
        return None
    key = (Ref(facts.checked), hwd.name)
    return _generated.get(key) or _generated.put(
        key, (generate_module(facts.checked, hwd.name, library, language="cuda"), arch))


def kernel_names(facts: KernelFacts, generated: Any) -> list[str]:
    """The names of the generated kernels of the function of `facts`."""
    plan = generated.function(facts.function.name)
    return [k.name for k in (plan.kernels if plan else ())]


def stated_arch(hwd: Any) -> str | None:
    """The `arch` of the description's CUDA mapping (`sm_90`), found in its file by a
    pattern: code generation's mapping reader (`mcl.codegen.mapping.read_mapping`) brings
    the code generators, a TOML parser and numpy, which a check at fermi (sm_20, no count)
    must not pay for; it validates the mapping when a count is compiled."""
    path = Path(hwd.file).with_name(f"{hwd.name}.cuda.toml") if hwd.file else None
    try:
        text = path.read_text(encoding="utf-8") if path else ""
    except OSError:
        return None
    found = _ARCH.search(text)
    return found.group(1) if found else None
