"""Find references and rename in `mcl lsp`, within a function and across imports."""

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
    open_document,
    position_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"
COMPLEX = ROOT / "tests" / "mcpl" / "paper_style" / "lib" / "math" / "complex.mcl"


def _at(text: str, needle: str, occurrence: int = 0) -> lsp.Position:
    return position_of(text, needle, occurrence)


def _every(text: str, word: str) -> list[lsp.Position]:
    """Every whole-word occurrence of `word` outside comments, as positions."""
    import re

    out = []
    for row, line in enumerate(text.split("\n")):
        code = line.split("//")[0]
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])", code):
            out.append(lsp.Position(row, m.start()))
    return out


async def test_references_of_a_variable(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    answer = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "nrLoads;"),
        context=lsp.ReferenceContext(include_declaration=True)))
    assert answer is not None
    assert {a.uri for a in answer} == {GPU_V1.as_uri()}
    assert [a.range.start for a in answer] == _every(text, "nrLoads")
    await close_document(client, uri)


async def test_references_and_rename_of_a_function_across_an_import(
        client: LanguageClient) -> None:
    text = TWIDDLE.read_text()
    uri = open_document(client, TWIDDLE)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    answer = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "magnitude(product"),
        context=lsp.ReferenceContext(include_declaration=True)))
    assert answer is not None
    library = COMPLEX.read_text()
    found = {(a.uri, a.range.start.line, a.range.start.character) for a in answer}
    expected = {(COMPLEX.as_uri(), p.line, p.character) for p in _every(library, "magnitude")}
    expected |= {(TWIDDLE.as_uri(), p.line, p.character) for p in _every(text, "magnitude")}
    assert found == expected  # the definition, the export line and every call

    edit = await client.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "magnitude(product"),
        new_name="modulus"))
    assert edit is not None and edit.changes is not None
    assert set(edit.changes) == {COMPLEX.as_uri(), TWIDDLE.as_uri()}
    renamed = _apply(library, edit.changes[COMPLEX.as_uri()])
    assert [p for p in _every(renamed, "magnitude")] == []
    assert "export Complex, assign, add, mul, modulus, conjugateNorm;" in renamed
    assert "perfect float modulus(const Complex a)" in renamed
    assert "modulus(product)" in _apply(text, edit.changes[TWIDDLE.as_uri()])
    await close_document(client, uri)


async def test_rename_to_a_keyword_is_refused(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    with pytest.raises(JsonRpcException, match="keyword"):
        await client.text_document_rename_async(lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "nrLoads;"),
            new_name="foreach"))
    await close_document(client, uri)


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        assert e.range.start.line == e.range.end.line
        row = lines[e.range.start.line]
        lines[e.range.start.line] = (row[: e.range.start.character] + e.new_text
                                     + row[e.range.end.character:])
    return "\n".join(lines)

