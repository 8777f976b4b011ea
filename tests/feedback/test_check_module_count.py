"""How many of mcl's modules `mcl check` imports (docs/feedback.md, "Start-up"): the check
runs on every save in an editor, and each module is start-up it pays for. The ceilings
are the counts when they were set (2026-12-07, a warm check of matmul's perfect.mcpl:
159 at fermi and at hopper, against 116 at both before typed findings and backends as
plugins, and 164 and 194 before the time model's description stopped importing the
description parser and the compiler's answers were kept by the inputs of code
generation; 161 since the same round's iteration points of the lock-step walk,
mcl.feedback.loop_points, and the read/write inference kept per function,
mcl.mcpl.kept_answers, both used by the check). A module
that joins the check's path must be needed there: import it where it is used, or raise
the ceiling here and say why in docs/feedback.md. No timing is asserted: the count is
what stays the same from one machine to the next. A check after an edit at hopper generates
the code again for the compiler's answers, and loads neither numpy nor NVIDIA's bindings
(round 16: main before it imported both)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CODE = """
import io, contextlib, sys
from mcl.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    status = main({args!r})
mine = sorted(m for m in sys.modules if m == "mcl" or m.startswith("mcl."))
print(status, len(mine), *(m in sys.modules for m in {modules!r}))
"""
SIZES = ("-D", "n=2048", "-D", "m=2048", "-D", "p=2048")
FERMI_CEILING = 161
HOPPER_CEILING = 161
# What a check of a program seen before leaves out at hopper: the code generators, numpy
# and NVIDIA's bindings (mcl.backends.by_program).
NOT_WARM = ("mcl.codegen.opencl", "numpy", "cuda.bindings")


def check(cache: Path, *args: str) -> list[str]:
    code = CODE.format(args=["check", "kernels/matmul/perfect.mcpl", *args, *SIZES],
                       modules=NOT_WARM)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "MCL_CACHE_DIR": str(cache)})
    return out.stdout.split()


@pytest.mark.parametrize(("level", "ceiling"), [("fermi", FERMI_CEILING),
                                                ("hopper", HOPPER_CEILING)])
def test_a_warm_check_imports_no_more_of_mcl_than_its_ceiling(
        tmp_path: Path, level: str, ceiling: int) -> None:
    check(tmp_path, "--level", level)  # the cold check fills the cache folder
    status, count, *loaded = check(tmp_path, "--level", level)
    assert status == "0"
    assert int(count) <= ceiling, f"{count} of mcl's modules at {level} (see the module)"
    assert loaded == ["False"] * len(NOT_WARM)


def test_a_check_after_an_edit_at_hopper_loads_no_numpy_nor_nvidia_s_bindings(
        tmp_path: Path) -> None:
    """After an edit (a new file: a copy of the kernel with a comment added after its
    code), the check generates the code again for the compiler's answers, which it finds
    kept by the generated source: code generation imports no numpy, and NVRTC's version
    and architectures and nvdisasm's path are kept by the toolchain (docs/feedback.md,
    "Speed")."""
    kernel = Path("kernels/matmul/perfect.mcpl").resolve()
    check(tmp_path, "--level", "hopper")  # the cold check keeps the compiler's answers
    edited = tmp_path / "edited" / kernel.name
    edited.parent.mkdir()
    edited.write_text(kernel.read_text() + "\n// an edit\n")
    code = CODE.format(args=["check", str(edited), "-I", str(kernel.parent), "--level",
                             "hopper", *SIZES], modules=("numpy", "cuda.bindings"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "MCL_CACHE_DIR": str(tmp_path)})
    status, _, *loaded = out.stdout.split()
    assert status == "0"
    assert loaded == ["False", "False"]
