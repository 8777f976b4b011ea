"""Deeply nested input through the `mcl` command: it works, or fails with a message.

Python's default recursion limit stopped `mcl translate` at about 60 nested parentheses
and `mcl check` at a 500-term sum ("nested too deeply", or an internal error from the
printer); commands now run on a thread with a large stack (`mcl.deep_stack`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.deep_stack import run_with_deep_stack
from mcl.mcpl.parse import parse_source


def kernel(tmp_path: Path, expr: str) -> Path:
    path = tmp_path / "deep.mcpl"
    path.write_text(
        "perfect void f(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
        f"    a[i] = {expr};\n  }}\n}}\n"
    )
    return path


@pytest.mark.parametrize(
    "expr",
    [
        "(" * 300 + "a[i]" + ")" * 300,
        " + ".join(["a[i]"] * 800),
        "a[i] - (" * 150 + "1.0" + ")" * 150,
    ],
    ids=["300 parentheses", "800-term sum", "150 nested subtractions"],
)
def test_deeply_nested_kernels_translate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], expr: str
) -> None:
    limit = sys.getrecursionlimit()
    path = kernel(tmp_path, expr)
    assert main(["translate", str(path), "--to", "gpu"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert sys.getrecursionlimit() == limit  # restored for the calling thread
    original = run_with_deep_stack(lambda: parse_source(path.read_text()).functions[0])
    translated = run_with_deep_stack(lambda: parse_source(out).functions[0])
    assert translated.hwd == "gpu" and len(translated.params) == len(original.params)


def test_a_deep_kernel_runs_in_the_interpreter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = kernel(tmp_path, " + ".join(["a[i]"] * 600))
    reference = tmp_path / "reference.py"
    reference.write_text(
        "import numpy as np\nFUNCTION = 'f'\nSIZES = {'n': 3}\nOUTPUTS = ('a',)\n"
        "TOLERANCE = {'rtol': 1e-6}\n"
        "def inputs(sizes, rng):\n"
        "    return {'n': sizes['n'], 'a': np.arange(sizes['n'], dtype=np.float32)}\n"
        "def reference(args):\n    return {'a': args['a'] * 600}\n"
    )
    assert main(["run", str(path), "--interp"]) == 0
    assert "all 1 outputs match" in capsys.readouterr().out


def test_recursion_beyond_the_limit_is_a_message_not_a_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import mcl.commands.translate as command

    def overflow(_args: object) -> int:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(command, "run", overflow)
    assert main(["translate", "x.mcpl", "--to", "gpu"]) == 1
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "Traceback" not in err and "internal error" not in err


def test_run_with_deep_stack_returns_and_raises() -> None:
    limit = sys.getrecursionlimit()
    assert run_with_deep_stack(lambda: 42) == 42
    with pytest.raises(ValueError, match="boom"):
        run_with_deep_stack(lambda: (_ for _ in ()).throw(ValueError("boom")))

    def deep(k: int) -> int:
        return 0 if k == 0 else 1 + deep(k - 1)

    assert run_with_deep_stack(lambda: deep(20_000)) == 20_000
    assert sys.getrecursionlimit() == limit
