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
what stays the same from one machine to the next."""

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
