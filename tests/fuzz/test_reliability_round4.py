"""Reliability, round 4: generated code the device compiler refused, Unicode digits taken
for numbers, and an output name too long for the file system (docs/reliability.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends.cuda.nvrtc import compile_cuda
from mcl.cli import main
from mcl.commands.codegen import load_checked
from mcl.hdl.library import default_library as library
from tests.fuzz.checking import write_source as _write

HOST_SCALAR_WRITTEN = """\
{level} void k(int n, float[n * 32] a) {{
  int x = n;
  foreach (int i in n {outer}) {{
{inner}
  }}
}}
"""
INNER = {
    "gpu": "    foreach (int w in 1 warps) {\n      foreach (int t in 32 threads) {\n"
           "        x++;\n        a[i * 32 + t] = 1.0;\n      }\n    }",
    "vectors": "    foreach (int v in 16 vectors) {\n      x++;\n      a[i * 16 + v] = 1.0;\n    }",
    "threads": "    x++;\n    a[i] = x;",
}


def _host_scalar_kernel(level: str) -> str:
    """Written in the innermost foreach of each level (the threads of a vector leaf hold
    its lanes, the blocks of a GPU its warps and threads)."""
    kind = {"fermi": "gpu", "hopper": "gpu", "xeon_phi": "vectors",
            "x86_avx512": "vectors"}.get(level, "threads")
    outer = "blocks" if kind == "gpu" else "threads"
    return HOST_SCALAR_WRITTEN.format(level=level, outer=outer, inner=INNER[kind])


@pytest.mark.parametrize("level", ["perfect", "fermi", "hopper", "xeon_phi", "x86_avx512"])
def test_a_host_scalar_written_inside_a_foreach_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str
) -> None:
    """`int x = n;` outside every foreach is one value of the host shared by all units
    (MCL paper, section 4); every unit writing it is a race. It used to check clean and
    generate a write to a `const` variable, which the device compiler refuses."""
    source = _host_scalar_kernel(level)
    path = _write(tmp_path, source)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [x for x in err.splitlines() if "error:" in x]
    row = next(k for k, text in enumerate(source.splitlines(), 1) if "x++" in text)
    col = source.splitlines()[row - 1].index("x++") + 1
    assert len(errors) == 1, err
    assert errors[0].startswith(f"{path}:{row}:{col}: error: 'x' ")
    assert errors[0].endswith("[mcpl-host-scalar-write]")
    target = "fermi" if level == "perfect" else level
    assert main(["codegen", str(path), "--target", target, "-o", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out").exists()


def test_a_host_scalar_written_on_the_host_or_per_unit_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule is about the units: host code may write its own scalars, and a scalar
    declared inside the foreach is each unit's own."""
    source = ("fermi void k(int n, float[n * 32] a) {\n  int x = n;\n  x = x + 1;\n"
              "  foreach (int i in n blocks) {\n    foreach (int w in 1 warps) {\n"
              "      foreach (int t in 32 threads) {\n"
              "        int y = x;\n        y++;\n        a[i * 32 + t] = y;\n"
              "      }\n    }\n  }\n}\n")
    path = _write(tmp_path, source)
    assert main(["check", str(path)]) == 0, capsys.readouterr().err


LANES_STORE_ONE = """\
{level} void k(int n, float[n, 16] a) {{
  foreach (int i in n threads) {{
    foreach (int v in 16 vectors) {{
      a[i, 0] = 2.5;
      a[i, v] = a[i, v] + 1.0;
    }}
  }}
}}
"""


@pytest.mark.parametrize("level", ["xeon_phi", "x86_avx512"])
def test_every_lane_storing_one_element_is_a_scalar_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], level: str
) -> None:
    """Every lane stores the same value into one element: the race the checker warns about
    at every leaf (mcpl-write-race), generated as one scalar store (all lanes store the
    same value). It used to become `(float16)(a[(i).s0], ...) = k;`, invalid OpenCL."""
    path = _write(tmp_path, LANES_STORE_ONE.format(level=level))
    assert main(["check", str(path)]) == 0
    assert "[mcpl-write-race]" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main(["codegen", str(path), "--target", level, "-o", str(out)]) == 0
    kernel = (out / "k.cl").read_text(encoding="utf-8")
    assert ") = 2.5f;" not in kernel
    assert "a[i * 16 + 0] = 2.5f;" in kernel
    assert "mcl_lane" in kernel  # still vector code


def test_every_lane_storing_one_element_runs_on_pocl(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, LANES_STORE_ONE.format(level="x86_avx512"))
    (tmp_path / "reference.py").write_text(
        "import numpy as np\nFUNCTION = 'k'\nSIZES = {'n': 5}\nOUTPUTS = ('a',)\n"
        "TOLERANCE = {'atol': 0.0}\n"
        "def inputs(sizes, rng):\n"
        "    return {'n': sizes['n'], 'a': np.zeros((sizes['n'], 16), np.float32)}\n"
        "def reference(args):\n"
        "    a = np.ones((args['n'], 16), np.float32)\n    a[:, 0] = 3.5\n"
        "    return {'a': a}\n", encoding="utf-8")
    assert main(["run", "--target", "x86_avx512", "--verify", str(path)]) == 0, (
        capsys.readouterr())


@pytest.mark.parametrize("literal", ["١.0", "１.0", "1.٥", "٣", "1e٣"])
def test_unicode_digits_are_not_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], literal: str
) -> None:
    """Python's `\\d` matches every Unicode digit, and float() reads them; C reads only
    0-9. Such a literal used to check clean and reach the OpenCL text verbatim."""
    source = ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
              f"    a[i] = {literal};\n  }}\n}}\n")
    path = _write(tmp_path, source)
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = next(x for x in err.splitlines() if "error:" in x)
    assert line.startswith(f"{path}:3:") and "[mcpl-syntax]" in line


@pytest.mark.parametrize(("literal", "spelled"), [
    ("1.5", "1.5f"), (".5", "0.5f"), ("5.", "5.0f"), ("1e3", "1e3f"), ("2.50E-1", "2.50E-1f"),
])
def test_float_literals_are_spelled_for_c(
    tmp_path: Path, literal: str, spelled: str
) -> None:
    source = ("perfect void k(int n, main float[n] a) {\n  foreach (int i in n threads) {\n"
              f"    a[i] = {literal};\n  }}\n}}\n")
    program = load_checked(_write(tmp_path, source), [], library())
    generated = pipeline.generate(program, "hopper", library(), language="cuda")
    assert f"= {spelled};" in generated.source
    compile_cuda(generated.source, "k.cu", "sm_90", warnings_as_errors=True)


def test_a_float_literal_without_c_spelling_is_printed_from_its_value() -> None:
    """A literal whose text C could not read (only a tree made by hand has one now) is
    printed from its value."""
    from mcl.codegen.c_expr import c_float_text
    from mcl.mcpl import ast

    assert c_float_text(ast.FloatLit(1.0, "١.0")) == "1.0"
    assert c_float_text(ast.FloatLit(0.25, ".25")) == "0.25"
    assert c_float_text(ast.FloatLit(1e-3, "1e-3")) == "1e-3"
    assert c_float_text(ast.FloatLit(2.0, "")) == "2.0"


def _name_max(folder: Path) -> int:
    return os.pathconf(folder, "PC_NAME_MAX")


@pytest.mark.parametrize("command", ["codegen", "translate"])
@pytest.mark.usefixtures("whole_lines")  # reads the error from one line
def test_an_output_name_too_long_for_the_file_system_is_one_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """`-o ./<300 characters>` used to end in 'OSError: File name too long' (exit 2)."""
    from mcl.resources import kernels_dir

    kernel = str(kernels_dir() / "matmul" / "x86_avx512_v3.mcpl")
    monkeypatch.chdir(tmp_path)
    long_name = "x" * (_name_max(tmp_path) + 45)
    for out in (f"./{long_name}", f"./{long_name}/k.mcpl", f"ok/{long_name}.mcpl"):
        args = (["codegen", kernel, "--target", "x86_avx512", "-o", out] if command == "codegen"
                else ["translate", kernel, "--to", "x86_avx512", "-o", out])
        assert main(args) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and "internal error" not in err, err
        lines = [x for x in err.splitlines() if "error:" in x]
        assert len(lines) == 1 and "[output-path]" in lines[0], err
        assert "longer than the file system allows" in lines[0]
        assert "hint: choose a shorter name" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_an_update_by_every_lane_of_one_element_keeps_work_items(tmp_path: Path) -> None:
    """`a[i, 0] += 1.0` in every lane is sixteen updates, not one: no vector code."""
    source = LANES_STORE_ONE.format(level="x86_avx512").replace("a[i, 0] = 2.5;",
                                                                "a[i, 0] += 2.5;")
    path = _write(tmp_path, source)
    out = tmp_path / "out"
    assert main(["codegen", str(path), "--target", "x86_avx512", "-o", str(out)]) == 0
    kernel = (out / "k.cl").read_text(encoding="utf-8")
    assert "mcl_lane" not in kernel and "a[i * 16 + 0] += 2.5f;" in kernel


VECTOR_ADD = """\
perfect void add(int n, float[n] c, float[n] a) {
  foreach (int i in n threads) {
    c[i] = a[i] + 1.0;
  }
}
"""


@pytest.mark.parametrize(("inputs", "reference", "said"), [
    ("    return (sizes['n'], np.zeros(sizes['n'], np.float32), a)\n",
     "    return {'c': args['a'] + 1}\n", "inputs() gave a tuple"),
    ("    return {'n': sizes['n'], 'c': np.zeros(sizes['n'], np.float32), 'a': a}\n",
     "    return args['a'] + 1\n", "reference() gave a ndarray"),
])
def test_a_reference_that_breaks_its_contract_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], inputs: str, reference: str,
    said: str
) -> None:
    """inputs() and reference() give dicts by parameter name (kernels/README.md); a tuple or
    a bare array used to end in a TypeError or an AttributeError (internal errors)."""
    path = _write(tmp_path, VECTOR_ADD)
    (tmp_path / "reference.py").write_text(
        "import numpy as np\nFUNCTION = 'add'\nSIZES = {'n': 7}\nOUTPUTS = ('c',)\n"
        "TOLERANCE = {'atol': 1e-6}\n"
        "def inputs(sizes, rng):\n    a = rng.random(sizes['n'], dtype=np.float32)\n"
        f"{inputs}def reference(args):\n{reference}", encoding="utf-8")
    assert main(["run", "--interp", str(path)]) == 1
    err = capsys.readouterr().err
    assert "internal error" not in err and "Traceback" not in err
    assert said in err and "[verify-reference-contract]" in err


@pytest.mark.parametrize("blank", ["\f", "\v"])
def test_a_form_feed_or_vertical_tab_is_a_blank_and_lines_stay_right(
        tmp_path: Path, blank: str, capsys: pytest.CaptureFixture[str]) -> None:
    # C's white space (C11 6.4): a form feed between statements (old sources page with
    # it) is a blank, and only '\n' starts a line, so the error is on line 3.
    source = (f"perfect void k(int n, float[n] a) {{{blank}\n"
              f"  foreach (int i in n threads) {{{blank}\n"
              "    a[i] = b;\n  }\n}\n")
    assert main(["check", str(_write(tmp_path, source))]) == 1
    err = capsys.readouterr().err
    assert "k.mcpl:3:12: error: unknown variable 'b' [mcpl-unknown-name]" in err, err
