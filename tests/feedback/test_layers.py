"""The layers of mcl/feedback (docs/architecture.md, "Feedback in layers"): facts import no
analysis and no rendering, an analysis imports facts and never another analysis, and a
derived fact is derived once per function and shared by every analysis that asks."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import KERNELS, load_kernel

from mcl import pipeline
from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.facts.kernel import Derived, KernelFacts
from mcl.feedback.facts.reuse import ReuseFacts
from mcl.hdl.library import default_library

FEEDBACK = Path(__file__).resolve().parents[2] / "mcl" / "feedback"


def _imported(path: Path) -> set[str]:
    """Every module `path` imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def _modules(package: str) -> list[Path]:
    return sorted(p for p in (FEEDBACK / package).glob("*.py") if p.name != "__init__.py")


def test_an_analysis_imports_no_other_analysis() -> None:
    analyses = {f"mcl.feedback.analyses.{p.stem}" for p in _modules("analyses")}
    assert len(analyses) >= 10
    for path in _modules("analyses"):
        others = _imported(path) & (analyses - {f"mcl.feedback.analyses.{path.stem}"})
        assert not others, f"{path.name} imports {sorted(others)}: share a fact instead"


def test_facts_import_no_analysis_and_no_rendering() -> None:
    upper = ("mcl.feedback.analyses", "mcl.feedback.render", "mcl.feedback.registry",
             "mcl.feedback.stage")
    assert _modules("facts")
    for path in _modules("facts"):
        wrong = [m for m in _imported(path) if m.startswith(upper)]
        assert not wrong, f"facts/{path.name} imports {wrong}"


def test_rendering_imports_no_analysis_and_no_fact() -> None:
    for path in _modules("render"):
        wrong = [m for m in _imported(path)
                 if m.startswith(("mcl.feedback.analyses", "mcl.feedback.facts"))]
        assert not wrong, f"render/{path.name} imports {wrong}"


class _Counted(Derived):
    derived = 0

    def __init__(self, facts: KernelFacts) -> None:
        self.loops = len(facts.loops)

    @classmethod
    def derive(cls, facts: KernelFacts) -> _Counted:
        cls.derived += 1
        return cls(facts)


def _context() -> AnalysisContext:
    program, _ = load_kernel(KERNELS / "matmul" / "perfect.mcpl", None)
    f = program.main.function("matmul")
    checked = pipeline.check(program, default_library())
    return AnalysisContext(f, checked, default_library().get(f.hwd), {})


def test_a_derived_fact_is_derived_once_per_function_and_shared() -> None:
    _Counted.derived = 0
    ctx = _context()
    first = ctx.get(_Counted)
    assert ctx.get(_Counted) is first and ctx.facts.get(_Counted) is first
    assert _Counted.derived == 1
    assert first.loops == len(ctx.facts.loops) == 3  # matmul at perfect: i, j, k
    other = _context()  # another function's facts derive their own
    assert other.get(_Counted) is not first and _Counted.derived == 2


def test_the_reuse_findings_are_shared_by_the_analyses_that_ask() -> None:
    ctx = _context()
    findings = ctx.get(ReuseFacts).findings
    # perfect matmul: a[i, k] does not depend on j, b[k, j] not on i (paper 6.3)
    assert sorted(f.access.binding.name for f in findings) == ["a", "b"]
    assert ctx.get(ReuseFacts).findings is findings
