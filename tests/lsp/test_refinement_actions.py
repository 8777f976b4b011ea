"""Refinements as code actions: transpose gpu_v1 at hopper has a bank conflict on its tile;
the server offers pad-shared for it, with the estimated gain in the title, once the
worker has verified it; applying the edit pads the tile; a text edited since the offers
were listed gets none of them."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    TIMEOUT_S,
    close_document,
    has_feedback,
    make_client_fixture,
    open_document,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"level": "hopper", "defines": {"n": 8192, "m": 8192}})

TRANSPOSE = KERNELS / "transpose" / "gpu_v1.mcpl"


def _bank_conflict(diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in diagnostics if d.code == "bank-conflict"]


async def _actions(client: LanguageClient, uri: str, where: lsp.Range,
                   diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    found = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), where,
        lsp.CodeActionContext(diagnostics=list(diagnostics))))
    return [a for a in found or [] if isinstance(a, lsp.CodeAction)
            and a.title.startswith("Apply ")]


async def _offered(client: LanguageClient, uri: str, where: lsp.Range,
                   diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """The refinement actions at `where`, once the worker has listed them."""
    loop = asyncio.get_running_loop()
    end = loop.time() + TIMEOUT_S
    while loop.time() < end:
        found = await _actions(client, uri, where, diagnostics)
        if found:
            return found
        await asyncio.sleep(0.2)
    raise AssertionError(f"no refinement offered at {where} in {TIMEOUT_S} s")


def _applied(text: str, edits: Sequence[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    out = text
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                       reverse=True):
        start = offsets[edit.range.start.line] + edit.range.start.character
        end = offsets[edit.range.end.line] + edit.range.end.character
        out = out[:start] + edit.new_text + out[end:]
    return out


async def test_the_bank_conflict_is_answered_by_padding_the_tile(client: LanguageClient
                                                                  ) -> None:
    text = TRANSPOSE.read_text()
    uri = open_document(client, TRANSPOSE)
    diagnostics = await wait_for(client, uri, lambda ds: bool(_bank_conflict(ds)))
    (conflict,) = _bank_conflict(diagnostics)
    (action,) = await _offered(client, uri, conflict.range, [conflict])
    # The gain and both times of the model at n = m = 8192, as `mcl apply --list` says.
    assert action.title == ("Apply pad-shared:array=tile,pad=1,banks=32: 1.80x, "
                            "369 µs -> 205 µs (verified)")
    assert action.kind == lsp.CodeActionKind.QuickFix
    assert list(action.diagnostics or ()) == [conflict]
    assert action.edit is not None and action.edit.document_changes is not None
    (change,) = action.edit.document_changes
    assert isinstance(change, lsp.TextDocumentEdit)
    assert change.text_document.uri == uri and change.text_document.version == 1
    padded = _applied(text, change.edits)
    assert "local float[TILE][TILE + 1] tile;" in padded
    assert padded.replace("[TILE][TILE + 1] tile", "[TILE][TILE] tile") == text
    # Applied in place, the next version's feedback has no bank conflict left (the
    # document's diagnostics change to such a list; else wait_for fails).
    replace_text(client, uri, padded)
    await wait_for(client, uri, lambda ds: has_feedback(ds) and not _bank_conflict(ds))
    await close_document(client, uri)


async def test_nothing_is_offered_on_a_stale_version(client: LanguageClient) -> None:
    text = TRANSPOSE.read_text()
    uri = open_document(client, TRANSPOSE)
    diagnostics = await wait_for(client, uri, lambda ds: bool(_bank_conflict(ds)))
    (conflict,) = _bank_conflict(diagnostics)
    assert await _offered(client, uri, conflict.range, [conflict])
    # One more line on top: the offers' edits would land a line too high.
    replace_text(client, uri, "// edited\n" + text)
    assert await _actions(client, uri, conflict.range, [conflict]) == []
    start, end = conflict.range.start, conflict.range.end
    moved = lsp.Range(lsp.Position(start.line + 1, start.character),
                      lsp.Position(end.line + 1, end.character))
    assert await _actions(client, uri, moved, [conflict]) == []
    # The new version gets its own offers, at the lines where they now act.
    diagnostics = await wait_for(client, uri, lambda ds: any(
        d.range.start.line == moved.start.line for d in _bank_conflict(ds)))
    (action,) = await _offered(client, uri, moved, _bank_conflict(diagnostics))
    assert action.edit is not None and action.edit.document_changes is not None
    (change,) = action.edit.document_changes
    assert isinstance(change, lsp.TextDocumentEdit) and change.text_document.version == 2
    assert [e.range.start.line for e in change.edits] == [29]  # line 30, was 29
    await close_document(client, uri)


async def test_a_line_with_no_finding_or_change_gets_no_refinement(client: LanguageClient
                                                                   ) -> None:
    uri = open_document(client, TRANSPOSE)
    diagnostics = await wait_for(client, uri, lambda ds: bool(_bank_conflict(ds)))
    (conflict,) = _bank_conflict(diagnostics)
    await _offered(client, uri, conflict.range, [conflict])
    first_line = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    assert await _actions(client, uri, first_line, []) == []
    await close_document(client, uri)
