"""mcl/pipeline.py: the one pass list (load -> check -> translate -> check -> feedback |
interpret | generate), MCL_DUMP, and that no other module of mcl spells the order out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.backends import generate_module
from mcl.cli import main
from mcl.diagnostics import MclError, Severity
from mcl.hdl.library import default_library
from mcl.mcpl.parse import parse_source
from mcl.mcpl.printer import print_module
from mcl.resources import kernels_dir

ROOT = Path(__file__).resolve().parents[1]
MATMUL = kernels_dir() / "matmul" / "perfect.mcpl"
LIBRARY = default_library()
# A dumped program starts with this comment line; the pass and level follow it.
DUMP_HEADER = re.compile(r"^// MCL_DUMP after:([\w-]+)(?: at (\w+))?: ", re.M)

BROKEN = """\
perfect void k(int n, float[n] a) {
  foreach (int i in n threads) {
    a[i] = undefined_name;
  }
}
"""


def _dumps(err: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2) or "") for m in DUMP_HEADER.finditer(err)]


def test_the_passes_run_in_the_order_of_the_pass_list(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCL_DUMP", ",".join(f"after:{p}" for p in pipeline.PASSES))
    found = pipeline.check_source(MATMUL, (), LIBRARY, "gpu")
    assert not [d for d in found.diagnostics if d.severity == Severity.ERROR]
    assert _dumps(capsys.readouterr().err) == [
        ("load", ""), ("check", ""), ("translate", "gpu"), ("check", "gpu")]
    assert found.level == "gpu" and found.program is not None
    assert {f.hwd for f in found.program.main.functions} == {"gpu"}


def test_dump_after_translate_prints_what_mcl_translate_prints(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["translate", str(MATMUL), "--to", "gpu"]) == 0
    translated = capsys.readouterr().out
    monkeypatch.setenv("MCL_DUMP", "after:translate")
    assert main(["check", str(MATMUL), "--level", "gpu", "--no-feedback"]) == 0
    err = capsys.readouterr().err
    assert _dumps(err) == [("translate", "gpu")]
    header, dumped = err.split("\n", 1)
    assert header.endswith(str(MATMUL))
    assert dumped == translated
    # The dump is MCPL: it parses back and prints the same.
    assert print_module(parse_source(dumped, "dumped.mcpl", LIBRARY.names())) == dumped


def test_no_dump_without_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MCL_DUMP", raising=False)
    pipeline.check_source(MATMUL, (), LIBRARY, "gpu")
    assert "MCL_DUMP" not in capsys.readouterr().err


def test_a_failed_check_stops_before_translation_with_its_diagnostics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.mcpl"
    path.write_text(BROKEN)
    monkeypatch.setenv("MCL_DUMP", "after:load,after:translate")
    found = pipeline.check_source(path, (), LIBRARY, "gpu")
    errors = [d for d in found.diagnostics if d.severity == Severity.ERROR]
    assert errors and all(d.span is not None and d.span.line == 3 for d in errors)
    assert "undefined_name" in errors[0].message
    assert _dumps(capsys.readouterr().err) == [("load", "")]  # never translated
    assert found.level is None and found.program is not None
    assert {f.hwd for f in found.program.main.functions} == {"perfect"}
    with pytest.raises(MclError) as exc:
        pipeline.checked_at(path, (), LIBRARY, "gpu")
    assert [d.code for d in exc.value.diagnostics] == [d.code for d in errors]


def test_translate_refuses_a_program_with_errors(tmp_path: Path) -> None:
    path = tmp_path / "broken.mcpl"
    path.write_text(BROKEN)
    checked = pipeline.check(pipeline.load(path, (), LIBRARY), LIBRARY)
    assert checked.errors
    with pytest.raises(MclError) as exc:
        pipeline.translate(checked, "gpu", LIBRARY)
    assert list(exc.value.diagnostics) == checked.errors


def test_an_unknown_pass_in_mcl_dump_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MCL_DUMP", "after:parse")
    assert main(["translate", str(MATMUL), "--to", "gpu"]) == 1
    err = capsys.readouterr().err
    assert "MCL_DUMP=after:parse" in err and "after:parse' names no pass" in err
    assert "load, check, translate" in err
    assert "Traceback" not in err


def test_codegen_takes_a_program_at_the_leaf_and_the_pipeline_translates_it_there() -> None:
    checked = pipeline.checked_at(MATMUL, (), LIBRARY)
    with pytest.raises(MclError) as exc:
        generate_module(checked, "fermi", LIBRARY)
    (d,) = exc.value.diagnostics
    assert d.code == "codegen-above-leaf" and "'matmul' is written for perfect" in d.message
    at_leaf = pipeline.lower(checked, "fermi", LIBRARY)
    assert {f.hwd for f in at_leaf.main.functions} == {"fermi"} and not at_leaf.errors
    assert (pipeline.generate(checked, "fermi", LIBRARY).source
            == generate_module(at_leaf, "fermi", LIBRARY).source)


def test_code_generation_takes_only_a_checked_program() -> None:
    program = pipeline.load(MATMUL, (), LIBRARY)
    with pytest.raises(TypeError, match="takes a CheckedProgram"):
        pipeline.generate(program, "fermi", LIBRARY)  # type: ignore[arg-type]
    assert pipeline.generate(pipeline.checked(program, LIBRARY), "fermi", LIBRARY).functions


def test_lower_leaves_a_program_already_at_the_level_alone() -> None:
    checked = pipeline.checked_at(kernels_dir() / "matmul" / "fermi_v1.mcpl", (), LIBRARY)
    assert pipeline.lower(checked, "fermi", LIBRARY) is checked
    # A bare program is checked (code generation reads the side tables), not translated.
    lowered = pipeline.lower(checked.program, "fermi", LIBRARY)
    assert lowered.program is checked.program and lowered.tables.types


# The entry points of the stages the pass list orders, and the modules allowed to call
# them: the pipeline, and the packages that define them (which call their own parts).
STAGE_ENTRY_POINTS = {"load_program", "check_program", "translate_program",
                      "translate_module", "translate_function"}
ALLOWED = ("mcl/pipeline.py", "mcl/translate/", "mcl/mcpl/check.py", "mcl/mcpl/loader.py")


def _stage_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: imports {a.name}" for a in node.names
                      if a.name in STAGE_ENTRY_POINTS]
        elif isinstance(node, ast.Attribute) and node.attr in STAGE_ENTRY_POINTS:
            found.append(f"{node.lineno}: uses .{node.attr}")
    return found


def test_no_module_outside_the_pipeline_spells_the_stage_order() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in sorted((ROOT / "mcl").rglob("*.py"))
        if not str(path.relative_to(ROOT)).startswith(ALLOWED)
        for use in _stage_uses(path)
    ]
    assert offenders == []


def test_the_stage_scan_sees_a_driver_that_calls_the_translator(tmp_path: Path) -> None:
    # The scan above must be able to fail: a driver written the old way is caught.
    driver = tmp_path / "driver.py"
    driver.write_text("from mcl.translate import translate_program\n"
                      "import mcl.mcpl.check as c\n"
                      "def f(p, lib):\n    return c.check_program(p, lib)\n")
    assert _stage_uses(driver) == ["1: imports translate_program", "4: uses .check_program"]


def _imports_pipeline(path: Path) -> list[int]:
    """Lines of `path` that import mcl.pipeline (`from mcl import pipeline` included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if (isinstance(node, ast.ImportFrom) and (
                node.module == "mcl.pipeline"
                or (node.module == "mcl" and any(a.name == "pipeline" for a in node.names))))
            or (isinstance(node, ast.Import)
                and any(a.name == "mcl.pipeline" for a in node.names))]


def test_the_stages_below_the_pipeline_do_not_import_it(tmp_path: Path) -> None:
    """Feedback and the interpreter take a `CheckedProgram` (mcl.mcpl.checked) and never
    import the pass list that calls them: the layers import downwards only."""
    offenders = [f"{path.relative_to(ROOT)}:{line}"
                 for package in ("feedback", "interp", "mcpl", "translate", "codegen")
                 for path in sorted((ROOT / "mcl" / package).rglob("*.py"))
                 for line in _imports_pipeline(path)]
    assert offenders == []
    driver = tmp_path / "stage.py"  # the scan can fail
    driver.write_text("from mcl import pipeline\nif True:\n    from mcl.pipeline import x\n")
    assert _imports_pipeline(driver) == [1, 3]


UNCERTAIN = ROOT / "tests/mcpl/barrier_kernels/uncertain_barriers.mcpl"


@pytest.mark.parametrize("level", [None, "gpu", "nvidia", "fermi", "hopper"])
def test_a_finding_of_the_source_and_its_translation_is_reported_once(
        level: str | None) -> None:
    """The source's check and the translated program's both read the two barriers under
    `if (ti < n)` (at nvidia as barrier(shared), at fermi with a recomputed `ti`): each
    is one warning, in the source's words."""
    found = pipeline.check_source(UNCERTAIN, (), LIBRARY, level).diagnostics
    lines = UNCERTAIN.read_text(encoding="utf-8").splitlines()
    barriers = [i + 1 for i, line in enumerate(lines) if "barrier(local)" in line]
    assert [(d.code, d.span.line if d.span else None) for d in found] == [
        ("mcpl-barrier-divergence", line) for line in barriers]
    assert all("barrier(local)" in d.message and "n >= nrThreads" in d.message for d in found)


def test_a_finding_only_the_translation_makes_stays() -> None:
    """What the source's check did not find at that place and for that rule (another
    position, rule or severity) is the translation's own and is kept."""
    from mcl.diagnostics import Span, error, warning

    here, there = Span.point("k.mcpl", 3, 5), Span.point("k.mcpl", 4, 5)
    source = [warning("mcpl-barrier-divergence", "source", here)]
    translated = [warning("mcpl-barrier-divergence", "again", here),
                  warning("mcpl-barrier-divergence", "elsewhere", there),
                  warning("mcpl-missing-barrier", "other rule", here),
                  error("mcpl-barrier-divergence", "certain now", here),
                  warning("translate-note", "no place")]
    kept = pipeline._new_findings(source, translated)
    assert [d.message for d in kept] == ["elsewhere", "other rule", "certain now", "no place"]
