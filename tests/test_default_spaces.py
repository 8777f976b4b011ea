"""One meaning for a declaration without a memory space (issue 11, item 3; mcpl.md §3
"Default memory spaces"): parameters live in the outermost default space, an array
declared in the executing unit in its registers. A test per component: checker,
translation, feedback, code generator, interpreter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mcl import pipeline
from mcl.backends import load_mapping
from mcl.codegen.statements import SpaceResolver
from mcl.diagnostics import Severity
from mcl.feedback.facts.kernel import build_facts
from mcl.feedback.registry import analyse
from mcl.hdl.library import default_library
from mcl.interp import run_function
from mcl.mcpl.check import check_program
from mcl.mcpl.loader import load_program
from mcl.mcpl.nesting import ARRAY, PARAMETER, SCALAR, default_space, effective_spaces
from mcl.mcpl.parse import parse_source
from mcl.resources import kernels_dir
from mcl.translate import translate_module, translate_program

LIB = default_library()

# Each thread keeps its own `t` across a barrier: shared, the threads would all read the
# last value written.
PRIVATE = """
gpu void own(int n, dev float[n] out) {
  foreach (int b in 1 blocks) {
    foreach (int i in n threads) {
      float[2] t;
      t[0] = i;
      t[1] = 2 * i;
      barrier(local);
      out[i] = t[0] + t[1];
    }
  }
}
"""


def _space(hwd: str, kind: str, group: str | None) -> str | None:
    h = LIB.get(hwd)
    space = default_space(h, kind, h.par_group(group) if group else None)
    return space.name if space is not None else None


def test_checker_rule_parameters_outermost_arrays_in_the_unit_registers() -> None:
    assert _space("gpu", PARAMETER, None) == "dev"
    assert _space("gpu", ARRAY, "threads") == "reg"
    assert _space("perfect", ARRAY, "threads") == "reg"
    assert _space("fermi", ARRAY, "threads") == "reg"
    assert _space("gpu", ARRAY, "blocks") == "dev"  # no default space of the block's own
    assert _space("gpu", ARRAY, None) == "dev"  # host side
    assert _space("mic", ARRAY, "threads") == "dev"  # reg belongs to the vectors below
    assert _space("mic", ARRAY, "vectors") == "reg"
    assert _space("gpu", SCALAR, "threads") == "reg"
    h = LIB.get("gpu")
    assert [s.name for s in effective_spaces(h, (), True, h.par_group("threads"))] == ["reg"]


def test_checker_accepts_a_register_array_in_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "own.mcpl"
    path.write_text(PRIVATE)
    found = check_program(load_program(path, library=LIB), LIB)
    assert not [d for d in found if d.severity == Severity.ERROR]


def test_translation_keeps_the_register_array_without_a_modifier() -> None:
    source = PRIVATE.replace("gpu void", "perfect void").replace("dev float", "main float")
    source = source.replace("foreach (int b in 1 blocks) {", "").replace("barrier(local);", "")
    source = source[:source.rindex("}")]  # the removed foreach's brace
    module = translate_module(parse_source(source), "gpu", LIB).module
    (decl,) = [d for d in _decls(module) if getattr(d, "name", None) == "t"]
    assert decl.spaces == ()  # reg at perfect is reg at gpu: still the default


def test_feedback_counts_gpu_v3_sums_as_registers() -> None:
    program = load_program(kernels_dir() / "matmul" / "gpu_v3.mcpl", library=LIB)
    function = program.main.function("matmul")
    facts = build_facts(function, pipeline.check(program, LIB), LIB.get("gpu"))
    spaces = {b.name: b.space for b in facts.bindings if b.kind in ("param", "local")}
    assert (spaces["sums"], spaces["l_a"], spaces["c"]) == ("reg", "local", "dev")
    checked = pipeline.check(program, LIB)
    messages = analyse(function, checked, LIB.get("gpu"), {"n": 64, "m": 64, "p": 64},
                       only=("cache", "reuse", "memory"))
    assert not [m for m in messages if "sums" in m.text]


def test_code_generator_resolves_a_register_array_to_a_private_one(tmp_path: Path) -> None:
    hwd = LIB.get("fermi")
    resolver = SpaceResolver(load_mapping(hwd), hwd)
    assert resolver.resolve((), ARRAY, None) == ("reg", "private")
    assert resolver.resolve((), PARAMETER, None)[1] == "global"
    program = load_program(kernels_dir() / "matmul" / "gpu_v3.mcpl", library=LIB)
    fermi = translate_program(program, "fermi", LIB).program
    opencl = pipeline.generate(pipeline.checked(fermi, LIB), "fermi", LIB).source
    assert "float sums[" in opencl and "__global float sums" not in opencl


def test_interpreter_gives_every_unit_its_own_array() -> None:
    out = np.zeros(8, dtype=np.float32)
    run_function(pipeline.check(parse_source(PRIVATE), LIB), "own", {"n": 8, "out": out}, LIB)
    assert np.array_equal(out, 3 * np.arange(8, dtype=np.float32))


def _decls(node: Any) -> list[Any]:
    from mcl.mcpl import ast

    return [n for n in ast.walk(node) if isinstance(n, ast.Decl)]
