"""What code generation and a backend's compiler say about a kernel, kept on disk (the
folder of each kind under mcl's cache folder, mcl.parse_cache.cache_root) and found again
without generating its code: the key of an answer made of what the generated code is
made of.

The compiler's counts are kept by generated source (mcl.backends.cuda.registers,
line_instructions), and the wide copies were generated at every check
(mcl.backends.wide_copies): a warm check at hopper generated the kernel's code twice and
loaded NVRTC to ask its version and architectures, which brought code generation, numpy
and NVIDIA's bindings into every check there (a warm `mcl check` of matmul's perfect.mcpl
took 1.9 to 2.1 times `import sympy`, against 1.2 to 1.3 before those answers;
docs/feedback.md, "Start-up"). The answer for one function is therefore also kept under a
key of the inputs of code generation, which a check has at hand:

  - the checked program, every field of every node, the source spans included (the
    generated code carries a `#line` per statement, so the listing per line depends on
    them), written out by a walk over the dataclasses (`repr` leaves the spans out;
    `pickle` keeps per-process state and differs between runs);
  - the level's description and mapping: the text of every `.hdl` and `.toml` file in
    the folder of the level's description;
  - mcl's own code (the code generators): the path, size and modification time of each
    of its modules;
  - the compiler: the NVIDIA distributions installed on `sys.path` (their folders name
    their versions), the variables where a toolkit's tools and libraries are looked for
    (`CUDA_HOME`, `CUDA_PATH`, `CONDA_PREFIX`, `PATH`, `LD_LIBRARY_PATH`), and the
    Python version.

A change of any of these is a new key: the answer is made again the long way (and kept).
What depends on the compiler alone (NVRTC's version and architectures, the path of
`nvdisasm`) is kept under `toolchain_key`, the last item without the program: a check
whose program is new (after an edit) generates its code again, and finds the compiler's
counts kept by the generated source without loading NVRTC or looking for nvdisasm.
The disk cache is an optimisation only: a folder that cannot be written, an entry that
cannot be read, is ignored; past DISK_ENTRIES files in a folder the oldest go.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.feedback.facts.compiled import Store
from mcl.identity import Ref

if TYPE_CHECKING:
    from mcl.feedback.facts.kernel import KernelFacts

# The form of the key; a change of what it is made of changes it.
FORM = 2
# Files each folder keeps: an answer is a few bytes to a few kilobytes, one file each.
DISK_ENTRIES = 512
# The suffix of an answer's file (read_kept).
SUFFIX = ".marshal"
_MCL = Path(__file__).resolve().parents[1]  # the mcl package
_DISTRIBUTIONS = ("nvidia_cuda", "cuda_bindings", "cuda_pathfinder")
# The hash of the inputs of the last function asked about (_program_digest): a check
# asks about one function at a time.
_digests: Store[tuple[object, ...], Any] = Store(1)


def program_key(facts: KernelFacts, arch: str, *parts: object) -> str:
    """The key of an answer of the compiler for `arch` about the function of `facts`, and
    `parts` (what else it depends on: its kind and form)."""
    digest = _program_digest(facts).copy()
    digest.update(f"\0{arch}".encode())
    digest.update("".join(f"\0{p}" for p in parts).encode())
    return "p" + digest.hexdigest()


def _program_digest(facts: KernelFacts) -> Any:
    """The hash of what every answer about the function of `facts` depends on (all but
    the architecture and the kind of answer): made once per checked program, level and
    function, as the register count, the listing per line and the wide copies each ask
    for a key of the same program (the program walked and the descriptions read once,
    not three times)."""
    key = (Ref(facts.checked), facts.hwd.name, facts.hwd.file, facts.function.name)
    found = _digests.get(key)
    if found is None:
        program = facts.checked.program
        written: list[str] = []
        _write((facts.checked.level, sorted(program.modules.items()),
                sorted(program.hwd_imports.items())), written)
        found = hashlib.sha256(f"{FORM}\0{sys.version}\0{_mcl_stamp()}\0{_toolchain()}\0"
                               f"{facts.hwd.name}\0{facts.function.name}\0".encode())
        found.update(_library_text(facts.hwd.file).encode("utf-8", "surrogatepass"))
        found.update("".join(written).encode("utf-8", "surrogatepass"))
        _digests.put(key, found)
    return found


def toolchain_key(*parts: object) -> str:
    """The key of an answer of the compiler that depends on nothing but the compiler
    (its version and architectures, mcl.backends.cuda.registers.nvrtc_facts) and
    `parts`."""
    digest = hashlib.sha256(f"{FORM}\0{sys.version}\0{_toolchain()}\0".encode())
    digest.update("".join(f"\0{p}" for p in parts).encode())
    return "t" + digest.hexdigest()


def _write(value: Any, out: list[str]) -> None:
    """`value` in a form that names every field of every dataclass in it, in order."""
    kind: type = type(value)
    names = _field_names(kind)
    if names:
        out.append(kind.__name__ + "(")
        for name in names:
            _write(getattr(value, name), out)
        out.append(")")
    elif kind in (tuple, list):
        out.append("[")
        for item in value:
            _write(item, out)
        out.append("]")
    elif kind is dict:
        out.append("{")
        for key, item in value.items():
            out.append(repr(key))
            _write(item, out)
        out.append("}")
    elif kind in (set, frozenset):
        out.append(repr(sorted(map(repr, value))))
    else:
        out.append(repr(value))


@cache
def _field_names(kind: type) -> tuple[str, ...]:
    """The fields of dataclass `kind`, in order (none for any other type)."""
    return tuple(getattr(kind, "__dataclass_fields__", ()))


@cache
def _mcl_stamp() -> str:
    """The path, size and modification time of each of mcl's modules."""
    found: list[str] = []
    for root, folders, files in os.walk(_MCL):
        folders[:] = sorted(f for f in folders if f != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                info = os.stat(os.path.join(root, name))
                found.append(f"{root}/{name}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\n".join(found).encode("utf-8", "surrogatepass")).hexdigest()


@cache
def _toolchain() -> str:
    """The NVIDIA distributions on `sys.path` (with their versions) and the variables
    where a toolkit's tools and libraries are looked for."""
    found = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH", "CONDA_PREFIX",
                                             "PATH", "LD_LIBRARY_PATH")]
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as listing:
                found += sorted(item.name for item in listing
                                if item.name.startswith(_DISTRIBUTIONS))
        except OSError:
            continue
    return "\0".join(found)


def _library_text(file: str | None) -> str:
    """The text of every description and mapping beside the level's description."""
    if not file:
        return ""
    folder = Path(file).parent
    texts = []
    for path in sorted(folder.glob("*.hdl")) + sorted(folder.glob("*.toml")):
        try:
            texts.append(f"{path.name}\0{path.read_text(encoding='utf-8')}")
        except OSError:
            continue
    return "\0".join(texts)


def _folder(kind: str = "registers") -> Path | None:
    """The disk cache's folder of one kind of answer (`registers`; mcl.backends.cuda.
    line_instructions keeps its counts per source line beside them)."""
    from mcl.parse_cache import cache_root

    root = cache_root()
    return None if root is None else root / kind


def read_kept(key: str, kind: str = "registers") -> dict[str, int] | None:
    """The counts kept on disk under `key` in the folder of `kind`, or None (also where
    the file is not the current user's alone to write, as mcl's other cache files).
    They are kept in `marshal`'s format: reading JSON imported the `json` package, four
    modules, at every check at hopper."""
    from mcl.parse_cache import read_marshalled

    folder = _folder(kind)
    if folder is None:
        return None
    data = read_marshalled(folder / f"{key}{SUFFIX}")
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, int) for k, v in data.items()):
        return None
    return data


def write_kept(key: str, counts: dict[str, int], kind: str = "registers") -> None:
    """Store `counts` under `key`, written to a temporary file and renamed (a reader never
    sees half of one); past DISK_ENTRIES files the oldest go."""
    import marshal

    folder = _folder(kind)
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(handle, "wb") as out:
            out.write(marshal.dumps(counts))
        os.replace(temporary, folder / f"{key}{SUFFIX}")
        entries = sorted(folder.glob(f"*{SUFFIX}"), key=lambda p: p.stat().st_mtime)
        for old in entries[:max(0, len(entries) - DISK_ENTRIES)]:
            old.unlink(missing_ok=True)
    except OSError:
        return
