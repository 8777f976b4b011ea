"""Generated kernels nested deeper than OpenCL compilers accept are refused by code
generation, at the MCPL line, instead of failing to build on the device with a hint that
blames mcl (mcl.codegen.bracket_depth). The emitter measures the nesting as it prints
(`GeneratedModule.nesting`): the same depth as a scan of the whole text finds."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.cli import main
from mcl.codegen.bracket_depth import deepest_bracket
from mcl.commands.codegen import load_checked

from .support import library, versions_at_leaves


def _naive_depth(text: str) -> int:
    depth = deepest = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        deepest = max(deepest, depth)
    return deepest


def test_the_depth_of_random_bracket_text_matches_a_plain_count() -> None:
    rng = random.Random(5)
    for _ in range(200):
        text = "".join(rng.choice("(){}[]x \n") for _ in range(rng.randint(0, 200)))
        assert deepest_bracket(text)[0] == _naive_depth(text)


def test_comments_and_literals_do_not_count() -> None:
    code = "{ // ((((\n  /* {{{{\n */ s = \"(((\"; c = '{';\n  { x[1]; }\n}\n"
    assert deepest_bracket(code) == (3, 3)


def _nest(depth: int) -> str:
    body = "s += b[i];"
    for level in range(depth):
        body = f"if (i > {level % 7}) {{ {body} }}"
    return ("perfect void k(int n, main float[n] a, main float[n] b) {\n"
            "  foreach (int i in n threads) {\n    float s = 0.0;\n    " + body
            + "\n    a[i] = s;\n  }\n}\n")


REFERENCE = """\
import numpy as np
FUNCTION = "k"
SIZES = {"n": 37}
OUTPUTS = ("a",)
TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}
def inputs(sizes, rng):
    n = sizes["n"]
    return {"n": n, "a": np.zeros(n, np.float32), "b": rng.uniform(-1, 1, n).astype(np.float32)}
def reference(args):
    i = np.arange(args["n"])
    return {"a": np.where(i > 6, args["b"], 0).astype(np.float32)}
"""


def test_a_nest_past_the_compilers_limit_is_refused_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = tmp_path / "k.mcpl"
    kernel.write_text(_nest(255), encoding="utf-8")
    assert main(["codegen", "--target", "fermi", "-o", str(tmp_path / "out"), str(kernel)]) == 1
    err = capsys.readouterr().err
    assert f"{kernel}:4:1: error: " in err and "[codegen-nesting]" in err
    assert "257 deep" in err and "stop at 256" in err


def test_the_deepest_nest_accepted_builds_and_verifies_on_pocl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The limit is PoCL's own: one `if` less than the refused nest builds and computes
    what numpy does (lanes past 6 add their b[i], the others nothing)."""
    kernel = tmp_path / "k.mcpl"
    kernel.write_text(_nest(254), encoding="utf-8")
    (tmp_path / "reference.py").write_text(REFERENCE, encoding="utf-8")
    assert main(["run", "--target", "fermi", "--verify", str(kernel)]) == 0
    assert "[codegen-nesting]" not in capsys.readouterr().err


HOPPER = [p for p, leaf in versions_at_leaves("opencl") if leaf == "hopper"]


@pytest.mark.parametrize("path", HOPPER, ids=[f"{p.parent.name}/{p.stem}" for p in HOPPER])
def test_the_emitters_measure_is_the_depth_of_the_text(path: Path) -> None:
    generated = pipeline.generate(load_checked(path, [], library()), "hopper", library())
    assert generated.nesting.depth == deepest_bracket(generated.source)[0]
    assert generated.nesting.span is not None and generated.nesting.span.file == str(path)


def test_a_deep_nest_in_a_called_function_is_refused_at_its_statement(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = "s = s + 1.0;"
    for level in range(257):  # the innermost `if (...) {` is 258 deep, 257 for clang
        body = f"if (x > {level % 5}) {{ {body} }}"
    kernel = tmp_path / "k.mcpl"
    kernel.write_text(
        "perfect float deep(float x) {\n  float s = x;\n  " + body + "\n  return s;\n}\n"
        "perfect void k(int n, main float[n] a) {\n"
        "  foreach (int i in n threads) {\n    a[i] = deep(a[i]);\n  }\n}\n",
        encoding="utf-8")
    assert main(["codegen", "--target", "fermi", "-o", str(tmp_path / "out"), str(kernel)]) == 1
    err = capsys.readouterr().err
    assert f"{kernel}:3:1: error: " in err and "[codegen-nesting]" in err
    assert "257 deep" in err
