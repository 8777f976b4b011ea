"""Rename and references that keep the program's meaning (mcl.lsp.rename): a new name
that a variable in scope would capture, or that is declared already, is refused with an
error; prepareRename says what would be renamed, or why nothing can be; references and
rename reach the open and on-disk files that import the declaring module."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    close_document,
    errors,
    make_client_fixture,
    opened,
    position_of,
    replace_text,
    wait_for,
)
from .test_navigation import _apply, _every

pytestmark = pytest.mark.asyncio(loop_scope="module")

client = make_client_fixture({"feedback": False})

HOPPER_V2 = KERNELS / "matmul" / "hopper_v2.mcpl"
PERFECT = KERNELS / "matmul" / "perfect.mcpl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"
COMPLEX = ROOT / "tests" / "mcpl" / "paper_style" / "lib" / "math" / "complex.mcl"


async def _rename(client: LanguageClient, uri: str, position: lsp.Position, new_name: str
                  ) -> lsp.WorkspaceEdit:
    edit = await client.text_document_rename_async(lsp.RenameParams(
        lsp.TextDocumentIdentifier(uri), position, new_name))
    assert edit is not None and edit.changes is not None
    return edit


async def _refused(client: LanguageClient, uri: str, position: lsp.Position, new_name: str,
                   why: str) -> None:
    with pytest.raises(JsonRpcException, match=why):
        await client.text_document_rename_async(lsp.RenameParams(
            lsp.TextDocumentIdentifier(uri), position, new_name))


async def test_a_constant_renamed_to_a_parameter_name_is_refused(client: LanguageClient
                                                                 ) -> None:
    uri, text = await opened(client, HOPPER_V2)
    tile_k = position_of(text, "TILE_K = 8")
    # the uses inside matmul() would stand for its parameter `n`
    await _refused(client, uri, tile_k, "n", r"parameter declared at line 53")
    # a duplicate of another constant
    await _refused(client, uri, tile_k, "TILE_I", "already defined")
    await _refused(client, uri, tile_k, "for", "keyword")
    await _refused(client, uri, tile_k, "2k", "not a name")
    edit = await _rename(client, uri, tile_k, "TILE_DEPTH")
    renamed = _apply(text, edit.changes[uri])
    assert _every(renamed, "TILE_K") == []
    assert len(_every(renamed, "TILE_DEPTH")) == len(_every(text, "TILE_K"))
    await close_document(client, uri)


# A kernel whose variables shadow one another (mcpl.md §5 rule 1).
SHADOWS = """\
import perfect;

const int SIZE = 4;

perfect void shadows(int n, main float[n] a) {
  int total = SIZE;
  int count = n;
  foreach (int i in n threads) {
    int inner = i;
    a[i] = toFloat(inner + total);
  }
  foreach (int j in 1 threads) {
    a[j] = toFloat(count + SIZE);
  }
}
"""


async def test_variables_keep_what_they_stand_for(client: LanguageClient) -> None:
    uri, _ = await opened(client, PERFECT, SHADOWS)
    assert not errors(client.diagnostics[uri])
    total = position_of(SHADOWS, "total = SIZE")
    # `inner` is declared in the foreach where `total` is used: it would capture it
    await _refused(client, uri, total, "inner", "line 9")
    # `count` is declared in the same block
    await _refused(client, uri, total, "count", "already declared")
    # `inner` renamed `total` would capture the use of the outer `total` after it
    await _refused(client, uri, position_of(SHADOWS, "inner = i"), "total",
                   "would stand for the renamed 'inner'")
    # a local renamed like a constant used in its scope captures that use
    await _refused(client, uri, position_of(SHADOWS, "count = n"), "SIZE", "SIZE")
    # shadowing a name nobody uses there is fine: `inner` may become `count`
    edit = await _rename(client, uri, position_of(SHADOWS, "inner = i"), "count")
    assert "int count = i;" in _apply(SHADOWS, edit.changes[uri])
    await close_document(client, uri)


async def test_prepare_rename_names_the_symbol_or_says_why_not(client: LanguageClient
                                                               ) -> None:
    uri, text = await opened(client, HOPPER_V2)
    use = position_of(text, "TILE_K - 1", offset=3)
    answer = await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
        lsp.TextDocumentIdentifier(uri), use))
    assert isinstance(answer, lsp.PrepareRenamePlaceholder), answer
    assert answer.placeholder == "TILE_K"
    start = position_of(text, "TILE_K - 1")
    assert answer.range == lsp.Range(start, lsp.Position(start.line, start.character + 6))
    for needle, why in (("foreach", "keyword"), ("blocks)", "not a variable")):
        with pytest.raises(JsonRpcException, match=why):
            await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
                lsp.TextDocumentIdentifier(uri), position_of(text, needle)))
        with pytest.raises(JsonRpcException, match=why):  # not a silent null
            await client.text_document_rename_async(lsp.RenameParams(
                lsp.TextDocumentIdentifier(uri), position_of(text, needle), "x"))
    await close_document(client, uri)


async def test_references_and_rename_reach_the_importers_on_disk(client: LanguageClient
                                                                 ) -> None:
    uri, text = await opened(client, COMPLEX)  # twiddle.mcpl, which uses it, is not open
    where = position_of(text, "magnitude(const")
    answer = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=where,
        context=lsp.ReferenceContext(include_declaration=True)))
    assert answer is not None
    twiddle = TWIDDLE.read_text()
    found = {(a.uri, a.range.start.line, a.range.start.character) for a in answer}
    assert {(TWIDDLE.as_uri(), p.line, p.character) for p in _every(twiddle, "magnitude")} \
        <= found
    edit = await _rename(client, uri, where, "modulus")
    assert "modulus(product)" in _apply(twiddle, edit.changes[TWIDDLE.as_uri()])
    # twiddle.mcpl defines a function `rotate`: there the new name would be a duplicate
    await _refused(client, uri, where, "rotate", "already defined")
    await close_document(client, uri)


async def test_references_and_rename_reach_an_open_importer(client: LanguageClient
                                                            ) -> None:
    edited = TWIDDLE.read_text().replace(
        "    norms[i] = magnitude(product)",
        "    float again = magnitude(w);\n    norms[i] = magnitude(product)")
    importer, _ = await opened(client, TWIDDLE, edited)
    assert not errors(client.diagnostics[importer])
    uri, text = await opened(client, COMPLEX)
    where = position_of(text, "magnitude(const")
    edit = await _rename(client, uri, where, "modulus")
    renamed = _apply(edited, edit.changes[importer])
    assert "float again = modulus(w);" in renamed  # the unsaved buffer's use
    assert _every(renamed, "magnitude") == []
    await close_document(client, uri)
    await close_document(client, importer)


async def test_document_highlight_marks_the_declaration_and_the_uses(
        client: LanguageClient) -> None:
    uri, text = await opened(client, HOPPER_V2)
    answer = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(lsp.TextDocumentIdentifier(uri),
                                    position_of(text, "TILE_K - 1")))
    assert answer is not None
    assert [h.range.start for h in answer] == _every(text, "TILE_K")
    assert answer[0].kind == lsp.DocumentHighlightKind.Write
    assert {h.kind for h in answer[1:]} == {lsp.DocumentHighlightKind.Read}
    # the parameter `n` of matmul: its own uses, not the words of another `n`
    n = await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(lsp.TextDocumentIdentifier(uri),
                                    position_of(text, "(n + TILE_I", offset=1)))
    assert n is not None and [h.range.start for h in n] == _every(text, "n")
    assert await client.text_document_document_highlight_async(
        lsp.DocumentHighlightParams(lsp.TextDocumentIdentifier(uri),
                                    position_of(text, "foreach"))) is None
    await close_document(client, uri)


async def test_nothing_is_renamed_from_a_tree_older_than_the_text(client: LanguageClient
                                                                  ) -> None:
    """While the text does not parse, the last tree's places are not where the names
    are: rename and prepareRename say so instead of editing the wrong places."""
    uri, text = await opened(client, HOPPER_V2)
    typing = text.replace("  int nrPhases =", "  int half = (n + ;\n  int nrPhases =")
    replace_text(client, uri, typing)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    where = position_of(typing, "TILE_K - 1")
    with pytest.raises(JsonRpcException, match="changed since it last parsed"):
        await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(
            lsp.TextDocumentIdentifier(uri), where))
    await _refused(client, uri, where, "TILE_DEPTH", "changed since it last parsed")
    replace_text(client, uri, text)
    await wait_for(client, uri, lambda ds: not errors(ds))
    edit = await _rename(client, uri, position_of(text, "TILE_K - 1"), "TILE_DEPTH")
    assert _every(_apply(text, edit.changes[uri]), "TILE_K") == []
    await close_document(client, uri)
