"""Performance feedback in the editor: matmul at `mcl.level = gpu` gives the paper's three
messages of section 5.1 (the kernel of Fig. 9) at the accesses they are about -- the two
reuse facts published, the suggestion without a stated gain and the several-elements
fact on hover -- and hover shows their figures."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    errors,
    has_feedback,
    hover_text,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"level": "gpu", "defines": {"n": 2048, "m": 2048, "p": 2048}})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


def _range_of(text: str, needle: str) -> lsp.Range:
    start = position_of(text, needle)
    return lsp.Range(start, lsp.Position(start.line, start.character + len(needle)))


async def test_matmul_at_gpu_has_the_paper_s_messages_to_act_on(client: LanguageClient
                                                              ) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    diagnostics = await wait_for(client, uri, has_feedback)
    feedback = [d for d in diagnostics if d.source == "mcl feedback"]
    by_code: dict[str, list[lsp.Diagnostic]] = {}
    for d in feedback:
        by_code.setdefault(str(d.code), []).append(d)
    # (1) a[i, k]: local memory can be leveraged -- a suggestion that states no gain
    # (the generic gpu has no time model) and that no refinement makes yet, so it is not
    # published (docs/feedback.md, "What a report shows"); hover shows it
    assert "memory-faster-space" not in by_code
    local = next(d for d in by_code["reuse-independent"] if "a[i, k]" in d.message)
    assert local.range == _range_of(text, "a[i, k]")
    value = await hover_text(client, uri, position_of(text, "a[i, k]"))
    assert "memory-faster-space" in value and "local memory" in value
    # (2) b[k, j] is accessed for n blocks bi, at the access b[k, j]
    (b,) = [d for d in by_code["reuse-independent"] if "b[k, j]" in d.message]
    assert "n (= 2,048) blocks bi" in b.message
    assert b.range == _range_of(text, "b[k, j]")
    # (3) more than one element of c per thread: a fact, shown with -v but not published
    # (no model states its gain: docs/feedback.md, "Several elements per unit")
    assert "elements-several-per-unit" not in by_code
    # Feedback is advice: never an error or a warning of the checker.
    assert {d.severity for d in feedback} <= {lsp.DiagnosticSeverity.Information,
                                              lsp.DiagnosticSeverity.Hint}
    assert local.severity == lsp.DiagnosticSeverity.Hint  # a fact
    await close_document(client, uri)


async def test_hover_on_an_access_shows_its_reuse_figures(client: LanguageClient) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, has_feedback)
    value = await hover_text(client, uri, position_of(text, "b[k, j]"))
    assert "**b**: parameter, `float[p, m]`, memory space `main`" in value
    assert "reuse-independent" in value
    # the reuse of b: n, symbolic and numeric
    assert "- reuse: `n` = 2,048" in value
    await close_document(client, uri)


async def test_hover_on_a_variable_shows_its_type_and_memory_space(client: LanguageClient
                                                                    ) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, lambda ds: True)
    value = await hover_text(client, uri, position_of(text, "sum +="))
    assert value.startswith("**sum**: variable, `float`")
    assert "memory space" in value
    await close_document(client, uri)


async def test_hover_on_a_foreach_shows_its_par_group_and_unit_limits(
        client: LanguageClient) -> None:
    path = KERNELS / "matmul" / "gpu_v1.mcpl"
    text = path.read_text()
    uri = open_document(client, path)
    await wait_for(client, uri, lambda ds: True)
    value = await hover_text(client, uri, position_of(text, "threads)"))
    assert "par_group `threads`" in value
    # gpu.hdl: threads has max_nr_units 1024 (hwdescs/gpu.hdl)
    assert "in `gpu`: at most 1,024 units" in value
    await close_document(client, uri)


async def test_a_kernel_below_mcl_level_gets_feedback_at_its_own_level(
        client: LanguageClient) -> None:
    """`mcl.level = gpu` applies to every file; fermi_v1 is already at fermi, below gpu:
    the command line's error (translate-upward) becomes a note, and the feedback is that
    of fermi (the cache analysis runs only on descriptions with caches, gpu has none).
    Published are the messages `mcl check` shows by default; the cache facts of every
    access and loop, with nothing to act on, are on hover over the access."""
    path = KERNELS / "matmul" / "fermi_v1.mcpl"
    text = path.read_text()
    uri = open_document(client, path)
    diagnostics = await wait_for(client, uri, has_feedback)
    (note,) = [d for d in diagnostics if d.code == "translate-upward"]
    assert note.severity == lsp.DiagnosticSeverity.Information
    assert "feedback is at the kernel's own level" in note.message
    assert not [d for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
    codes = {str(d.code) for d in diagnostics if d.source == "mcl feedback"}
    assert "memory-access-optimal" in codes and "reuse-independent" in codes, codes
    assert not {c for c in codes if c.startswith("cache-")}, codes
    value = await hover_text(client, uri, position_of(text, "bkj = b[k, j]", offset=6))
    assert "**cache-no-benefit** (info): b[k, j] in loop bj" in value
    await close_document(client, uri)


def _shown(diagnostics: list[lsp.Diagnostic]) -> list[tuple[str, str, str]]:
    return sorted((str(d.code), d.message, str(d.range)) for d in diagnostics)


async def _only_the_check(client: LanguageClient, uri: str, seconds: float) -> None:
    """The check's diagnostics, with errors, stay what is published for `seconds`
    (longer than the feedback of matmul takes, here at gpu): nothing of the feedback
    job, not even the errors of its own check, follows them."""
    checked = await wait_for(client, uri, lambda ds: bool(errors(ds)))
    assert not has_feedback(checked)
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        assert _shown(list(client.diagnostics[uri])) == _shown(list(checked))
        await asyncio.sleep(0.02)


@pytest.mark.slow  # waits 4 s twice to see that no feedback follows a broken version
async def test_feedback_follows_the_edits_between_clean_and_broken(client: LanguageClient
                                                                   ) -> None:
    """A broken version gets the check's diagnostics and nothing after them, and the
    feedback of a clean version is that of the text, whatever came before (clean,
    broken, clean again: the same messages)."""
    text = MATMUL.read_text()
    broken = text.replace("float sum = 0.0;", "float sum = undeclared;")
    assert broken != text
    uri = open_document(client, MATMUL, broken)
    await _only_the_check(client, uri, 4.0)
    replace_text(client, uri, text)
    first = await wait_for(client, uri, has_feedback)
    assert not errors(first)
    replace_text(client, uri, broken)
    await _only_the_check(client, uri, 4.0)
    replace_text(client, uri, text)
    again = await wait_for(client, uri, has_feedback)
    assert _shown(list(again)) == _shown(list(first))
    await close_document(client, uri)


async def test_a_code_lens_shows_the_time_estimate_at_the_level(client: LanguageClient
                                                                 ) -> None:
    """hopper_v2 is below `mcl.level = gpu`: its feedback, time model included, is at
    hopper, and the lens above the function says so (read from that feedback)."""
    path = KERNELS / "matmul" / "hopper_v2.mcpl"
    text = path.read_text()
    uri = open_document(client, path)
    await wait_for(client, uri, has_feedback)
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(
        lsp.TextDocumentIdentifier(uri)))
    assert lenses is not None
    (lens,) = lenses
    assert lens.range.start == position_of(text, "hopper void matmul")
    assert lens.command is not None
    assert lens.command.title == ("estimated 584 µs at hopper, limited by the SM "
                                  "(compute + on-chip memory)")
    await close_document(client, uri)
