"""Compile generated C with OpenMP into a shared library, once per source and options.

The library is kept in a cache folder by the hash of what made it (the source, the
compiler command and its version), as PoCL keeps its kernels (mcl/codegen/pocl_cache.py):
a second run of the same kernel loads it without compiling. The folder is
`$MCL_OPENMP_CACHE`, else `$XDG_CACHE_HOME/mcl/openmp`, else `~/.cache/mcl/openmp`. The
compiler is `$CC`, else `cc`.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from mcl.diagnostics import MclError, error

CACHE_ENV = "MCL_OPENMP_CACHE"
# What `mcl codegen --lang openmp` writes into its Makefile as well.
FLAGS = ("-O3", "-march=native", "-fopenmp", "-shared", "-fPIC")


def compiler() -> str:
    return os.environ.get("CC", "").strip() or "cc"


def cache_folder() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcl" / "openmp"


@cache
def compiler_version(command: str) -> str:
    """The first line of `command --version` (part of the cache key: another compiler
    makes another library)."""
    try:
        done = subprocess.run([*shlex.split(command), "--version"], capture_output=True,
                              text=True, check=False)
    except OSError as exc:
        raise MclError(error(
            "run-openmp-compiler", f"the C compiler '{command}' cannot be run: {exc}",
            hint="install gcc or clang, or name the compiler in $CC")) from exc
    return (done.stdout.splitlines() or [""])[0]


@dataclass(frozen=True)
class Built:
    path: Path
    cached: bool  # loaded from the cache, nothing compiled


def build_library(source: str, options: tuple[str, ...] = ()) -> Built:
    """The shared library of `source` built with `options` (`-DNAME=value`)."""
    command = [*shlex.split(compiler()), *FLAGS, *options]
    key = hashlib.sha256("\0".join(
        [source, *command, compiler_version(compiler())]).encode()).hexdigest()[:32]
    folder = cache_folder()
    target = folder / f"{key}.so"
    if target.is_file():
        return Built(target, True)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        c_file = Path(scratch) / "kernels.c"
        c_file.write_text(source, encoding="utf-8")
        library = Path(scratch) / "kernels.so"
        done = subprocess.run([*command, "-o", str(library), str(c_file)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise MclError(error(
                "run-build",
                f"the C compiler ({' '.join(command)}) rejected the generated code:\n"
                f"{done.stderr.strip()}",
                hint="where the compiler or linker misses OpenMP (libgomp, libomp), install "
                "it or name another compiler in $CC; otherwise this is a bug in mcl's code "
                "generation, please report it"))
        os.replace(library, target)  # atomic: a concurrent run sees all of it or nothing
    return Built(target, False)
