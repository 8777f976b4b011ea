"""Code generation's lowering passes (mcl.codegen.passes): each named, each dumped with
MCL_DUMP=after:NAME as MCPL the parser reads, a backend's own passes after the shared
ones, and a name MCL_DUMP cannot mean is an error that lists them."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import generate_module
from mcl.cli import main
from mcl.codegen.opencl import codegen_input
from mcl.codegen.passes import (
    LOWERING,
    LoweringContext,
    LoweringPass,
    backend_passes,
    lower,
)
from mcl.diagnostics import MclError
from mcl.mcpl.ast import HwdConst, IntLit, walk
from mcl.mcpl.checked import CheckedProgram
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_module
from tests.codegen.support import library, load

SOURCE = """\
const int TILE = 8;

hopper void scale(int n, float[n] a) {
  int threads = hopper.hierarchy.blocks.block.warps.warp.threads.nr_units;
  a as float[n / threads][threads] rows;
  foreach (int b in n / threads blocks) {
    foreach (int w in 1 warps) {
      foreach (int t in threads threads) {
        rows[b][t] = a[b * threads + t] * TILE;
      }
    }
  }
}
"""
DUMP = re.compile(r"^// MCL_DUMP after:([\w-]+) at (\w+): (.*)$", re.M)


def _dumps(err: str) -> list[tuple[str, str, str]]:
    """(pass, level, MCPL text) of each dump on stderr."""
    found = list(DUMP.finditer(err))
    ends = [m.start() for m in found[1:]] + [len(err)]
    return [(m.group(1), m.group(2), err[m.end() + 1:end])
            for m, end in zip(found, ends, strict=True)]


def test_every_pass_dumps_mcpl_that_parses_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    checked = load(tmp_path, SOURCE)
    monkeypatch.setenv("MCL_DUMP", ",".join(f"after:{p.name}" for p in LOWERING))
    generate_module(checked, "hopper", library(), overrides={"TILE": 4})
    dumps = _dumps(capsys.readouterr().err)
    assert [(name, level) for name, level, _ in dumps] == [
        (p.name, "hopper") for p in LOWERING]
    texts = dict((name, text) for name, _, text in dumps)
    for text in texts.values():
        assert print_module(parse_source(text, "dumped.mcpl", library().names())) == text
    # What each pass did shows in its dump: the description constant is 32 after the
    # first, the named constant 4 after the second.
    assert "hierarchy" not in texts["resolve-constants"]
    assert "threads = 32;" in texts["resolve-constants"]
    assert "const int TILE = 8;" in texts["resolve-constants"]
    assert "const int TILE = 4;" in texts["override-constants"]
    # The view at function level is declared again in the innermost foreach.
    before, after = texts["override-constants"], texts["kernel-views"]
    view = "a as float[n / threads][threads] rows;"
    assert before.index(view) < before.index("foreach (int b")
    assert after.index("foreach (int t") < after.index(view) < after.index("rows[b][t] =")


def test_the_passes_leave_the_callers_program_and_tables_alone(tmp_path: Path) -> None:
    checked = load(tmp_path, SOURCE)
    types_before = dict(checked.tables.types)
    lowered = lower(checked, LoweringContext("hopper", library(), {"TILE": 4}))
    assert any(isinstance(n, HwdConst) for n in walk(checked.main))
    assert not any(isinstance(n, HwdConst) for n in walk(lowered.main))
    assert dict(checked.tables.types) == types_before
    # The literals the passes built are typed in the lowered program's tables.
    literals = [n for n in walk(lowered.main) if isinstance(n, IntLit) and n.value in (4, 32)]
    assert literals and all(lowered.type_of(n) is not None for n in literals)


def test_an_override_of_no_constant_names_the_constants(tmp_path: Path) -> None:
    with pytest.raises(MclError, match="no top-level constant 'TILES'") as exc:
        codegen_input(load(tmp_path, SOURCE), "hopper", library(), {"TILES": 4})
    assert exc.value.diagnostics[0].hint == "named constants: TILE"


def test_a_backends_own_passes_run_after_the_shared_ones_and_dump(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def rename(checked: CheckedProgram, context: LoweringContext) -> CheckedProgram:
        function = replace(checked.main.functions[0], name="scaled")
        main = replace(checked.main, functions=(function,))
        return replace(checked, program=replace(checked.program, main=main,
                                                modules={"kernel": main}))

    class WithPasses:
        lowering_passes = (LoweringPass("rename", rename, "renames the kernel"),)

    passes = (*LOWERING, *backend_passes(WithPasses()))
    assert backend_passes(object()) == ()
    checked = load(tmp_path, SOURCE)
    monkeypatch.setenv("MCL_DUMP", "after:rename")  # a name only the backend's pass has
    lowered = lower(checked, LoweringContext("hopper", library()), passes)
    assert lowered.main.functions[0].name == "scaled"
    ((name, level, text),) = _dumps(capsys.readouterr().err)
    assert (name, level) == ("rename", "hopper") and "void scaled(" in text


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_mcl_dump_names_the_lowering_passes_among_the_valid_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert pipeline.pass_names()[:len(pipeline.PASSES)] == pipeline.PASSES
    assert pipeline.pass_names()[len(pipeline.PASSES):][:len(LOWERING)] == tuple(
        p.name for p in LOWERING)
    checked = load(tmp_path, SOURCE)
    monkeypatch.setenv("MCL_DUMP", "after:resolve-constant")
    out = str(tmp_path / "o")
    assert main(["codegen", str(tmp_path / "kernel.mcpl"), "--target", "hopper", "-o", out]) == 1
    err = capsys.readouterr().err
    assert "'after:resolve-constant' names no pass" in err and "Traceback" not in err
    assert ("load, check, translate, resolve-constants, override-constants, kernel-views"
            in err)
    # pipeline.generate refuses the name before any pass runs, without the loader.
    with pytest.raises(MclError, match="names no pass"):
        pipeline.generate(checked, "hopper", library())
