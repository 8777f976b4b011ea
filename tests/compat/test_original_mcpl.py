"""Published MCPL the original MCL accepted (issue 19): `foreach (const int i in ...)` and
the built-in `divide_up(a, b)` (ceiling division), through the checker, the interpreter,
translation, feedback and OpenCL."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from mcl.mcpl import ast

KERNEL = """\
perfect void scale(int n, main float[n] a) {
  int nrBlocks = divide_up(n, 32);
  foreach (const int bi in nrBlocks threads) {
    for (int t = 0; t < 32; t++) {
      int i = bi * 32 + t;
      if (i < n) {
        a[i] = a[i] * 2.0;
      }
    }
  }
}
"""

REFERENCE = '''\
import numpy as np

FUNCTION = "scale"
SIZES = {"n": 100}
OUTPUTS = ("a",)
TOLERANCE = {"rtol": 0.0, "atol": 0.0}


def inputs(sizes, rng):
    n = sizes["n"]
    return {"n": n, "a": rng.uniform(-1.0, 1.0, n).astype(np.float32)}


def reference(args):
    return {"a": (np.asarray(args["a"]) * np.float32(2.0)).astype(np.float32)}
'''


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    (tmp_path / "reference.py").write_text(REFERENCE)
    path = tmp_path / "scale.mcpl"
    path.write_text(KERNEL)
    return path


def test_parses_to_ceiling_division(kernel: Path) -> None:
    from mcl.mcpl.parse import parse_file

    module = parse_file(kernel)
    decl = module.functions[0].body.stmts[0]
    assert isinstance(decl.init, ast.Binary) and decl.init.op == "/"
    assert ast.Binary("+", ast.Name("n"), ast.IntLit(32)) == decl.init.left.left


def test_checks_clean(kernel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(kernel), "--no-feedback"]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out


@pytest.mark.parametrize("n", ["1", "31", "32", "33", "100"])
def test_interpreter_at_perfect_and_after_translation(kernel: Path, n: str) -> None:
    assert main(["run", str(kernel), "--interp", "-D", f"n={n}"]) == 0
    assert main(["run", str(kernel), "--interp", "--level", "gpu", "-D", f"n={n}"]) == 0


def test_opencl_on_pocl(kernel: Path) -> None:
    assert main(["run", str(kernel), "--target", "x86_avx512", "--verify", "-D", "n=77"]) == 0


def test_feedback_counts_exactly(kernel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 3 blocks of 32 for n = 77: the guard runs 77 multiplications, which the feedback
    # can only count if it sees divide_up as the ceiling it is.
    assert main(["check", str(kernel), "-D", "n=77"]) == 0
    out = capsys.readouterr().out
    assert "#computational instructions: n (= 77)" in out


def test_translation_keeps_the_division(kernel: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    assert main(["translate", str(kernel), "--to", "gpu"]) == 0
    assert "int nrBlocks = (n + 32 - 1) / 32;" in capsys.readouterr().out


def test_a_module_may_define_its_own_divide_up(tmp_path: Path) -> None:
    from mcl.mcpl.parse import parse_file

    path = tmp_path / "own.mcpl"
    path.write_text("perfect int divide_up(int a, int b) { return a / b; }\n"
                    "perfect int f(int n) { return divide_up(n, 2); }\n")
    ret = parse_file(path).functions[1].body.stmts[0]
    assert isinstance(ret.value, ast.Call) and ret.value.func == "divide_up"


def test_divide_up_with_one_argument_is_an_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.mcpl"
    path.write_text("perfect int f(int n) { return divide_up(n); }\n")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:1:31: error: divide_up takes 2 arguments" in err
