"""The feedback engine: which analyses run for which description, open registration,
the block classification of section 6.2, and messages as data."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import KERNELS, feedback, load_kernel

from mcl import pipeline
from mcl.feedback import registry
from mcl.feedback.analysis import Analysis, AnalysisContext
from mcl.feedback.facts.blocks import CONTROL_FLOW, INDEXING, OUTPUT, classify
from mcl.feedback.facts.kernel import COND, COUNT, INIT, STEP, STMT, build_facts
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.hdl.library import default_library

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


def names(level: str) -> set[str]:
    from mcl.hdl.library import default_library

    return {a.name for a in registry.applicable(default_library().get(level))}


def test_analyses_follow_what_the_description_exposes() -> None:
    builtin = {"opstats", "transfers", "reuse", "memory", "elements"}
    # perfect: no host (no transfers), unlimited cores (no several-elements advice)
    assert names("perfect") & builtin == {"opstats", "reuse", "memory"}
    # accelerator adds a host and pcie; its cores are still unlimited
    assert names("accelerator") & builtin == {"opstats", "transfers", "reuse", "memory"}
    # gpu: 16 processors x 32 ALUs: finite slots for threads
    assert names("gpu") & builtin == builtin
    assert "elements" in names("mic")


def test_an_analysis_is_a_record_with_a_predicate_on_the_description() -> None:
    calls = []

    def only_on_gpu(ctx: AnalysisContext) -> list[Message]:
        calls.append(ctx.hwd.name)
        assert ctx.facts is ctx.facts  # built once per context
        return [Message(FeedbackSeverity.INFO, "test-only", "test-only-ran", "ran",
                        ctx.function.span)]

    test_only = Analysis("test-only", only_on_gpu, lambda hwd: hwd.name == "gpu")
    among = [*registry.analyses(), test_only]
    library = default_library()
    assert test_only in registry.applicable(library.get("gpu"), among)
    assert test_only not in registry.applicable(library.get("perfect"), among)
    assert test_only not in registry.analyses()  # nothing registers itself
    for level in (None, "gpu"):
        program, _ = load_kernel(MATMUL, level)
        f = program.main.function("matmul")
        checked = pipeline.check(program, library)
        ran = [m for m in registry.analyse(f, checked, library.get(f.hwd), {}, among=among)
               if m.code == "test-only-ran"]
        assert bool(ran) == (level == "gpu")
    assert calls == ["gpu"]


def test_entry_points_must_offer_analysis_records(monkeypatch: pytest.MonkeyPatch) -> None:
    class EntryPoint:
        name, value = "bad", "somewhere:thing"

        def load(self) -> object:
            return lambda function, program, hwd, values: []

    monkeypatch.setattr(registry, "entry_points",
                        lambda group: [EntryPoint()] if group == registry.ENTRY_POINT_GROUP
                        else [])
    with pytest.raises(TypeError, match="not an mcl.feedback.analysis.Analysis"):
        registry.analyses()


def test_only_selects_analyses() -> None:
    program, library = load_kernel(MATMUL, "accelerator")
    f = program.main.function("matmul")
    checked = pipeline.check(program, library)
    messages = registry.analyse(f, checked, library.get("accelerator"), {}, only=["transfers"])
    assert messages and {m.analysis for m in messages} == {"transfers"}


def test_matmul_blocks() -> None:
    program, library = load_kernel(MATMUL, "gpu")
    checked = pipeline.check(program, library)
    facts = build_facts(program.main.function("matmul"), checked, library.get("gpu"))
    kinds = classify(facts)
    by_text = {}
    from mcl.mcpl.printer import print_expr, print_stmt

    for item in facts.items:
        node = item.node
        text = print_expr(node) if item.kind == COND else print_stmt(node).strip()
        by_text[(item.kind, text)] = kinds[item]
    assert by_text[(STMT, "float sum = 0.0;")] == OUTPUT
    assert by_text[(STMT, "sum += a[i, k] * b[k, j];")] == OUTPUT
    assert by_text[(STMT, "c[i, j] = sum;")] == OUTPUT
    assert by_text[(INIT, "int k = 0;")] == CONTROL_FLOW
    assert by_text[(COND, "k < p")] == CONTROL_FLOW
    assert by_text[(STEP, "k++;")] == CONTROL_FLOW
    # j guards the body (`if (j < m)`): a control-flow block; i only indexes: indexing
    assert by_text[(STMT, "int j = bj * nrThreadsM + tj;")] == CONTROL_FLOW
    assert by_text[(STMT, "int i = bi;")] == INDEXING
    assert any(kind == COUNT for kind, _ in by_text)


def test_messages_are_frozen_data_with_spans() -> None:
    (m, *_) = feedback(MATMUL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.text = "changed"  # type: ignore[misc]
    assert all(msg.span is not None and msg.span.file.endswith("perfect.mcpl")
               for msg in feedback(MATMUL, level="gpu"))
    assert all(msg.function == "matmul" for msg in feedback(MATMUL))


def test_analysis_does_not_mutate_the_program() -> None:
    program, library = load_kernel(MATMUL, "gpu")
    f = program.main.function("matmul")
    before = repr(f)
    registry.analyse(f, pipeline.check(program, library), library.get("gpu"), {"n": 4})
    assert repr(f) == before


def test_faster_space_is_shared_by_the_units_of_the_foreach(library) -> None:
    from mcl.feedback.facts.hardware import faster_space

    gpu = library.get("gpu")
    assert faster_space(gpu, "threads", "dev") == "local"  # local lives in the block
    assert faster_space(gpu, "blocks", "dev") is None  # blocks share only dev
    assert faster_space(gpu, "threads", "local") is None
    assert faster_space(library.get("mic"), "threads", "dev") is None  # no faster memory
    assert faster_space(library.get("perfect"), "threads", "main") is None
