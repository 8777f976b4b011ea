"""What `mcl check` with feedback imports: SymPy, but not numpy through the interpreter
(issue 11, item 4: the check runs on every save in an editor). numpy comes in only for a
figure that is an unevaluated sum (mcl.feedback.facts.sums)."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import io, contextlib, sys
from mcl.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    status = main({args!r})
print(status, *(m in sys.modules for m in {modules!r}))
"""


def imports(*args: str, modules: tuple[str, ...] = ("sympy", "numpy", "mcl.interp")
            ) -> list[str]:
    code = CODE.format(args=["check", *args], modules=modules)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    return out.stdout.split()


def test_feedback_at_a_gpu_level_does_not_import_numpy_or_the_interpreter():
    assert imports("kernels/matmul/perfect.mcpl", "--level", "fermi", "-D", "n=2048",
                   "-D", "m=2048", "-D", "p=2048") == ["0", "True", "False", "False"]


def test_a_figure_that_is_a_sum_brings_numpy_but_not_the_interpreter():
    # histogram at hopper: loads counted as Sum(...) over the counters of a tiled loop.
    assert imports("kernels/histogram/hopper_v1.mcpl", "-D", "h=2048", "-D", "w=2048") == \
        ["0", "True", "True", "False"]


def test_feedback_at_a_leaf_nvrtc_does_not_compile_for_does_not_look_for_nvdisasm():
    # fermi's architecture is older than NVRTC's: no machine code per line can come, and
    # finding nvdisasm (cuda.pathfinder) would only add to the check's start-up.
    assert imports("kernels/matmul/fermi_v1.mcpl", "-D", "n=2048", "-D", "m=2048",
                   "-D", "p=2048", modules=("mcl.backends", "cuda.pathfinder")) == \
        ["0", "True", "False"]
