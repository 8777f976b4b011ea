"""Formatting in `mcl lsp`: only layout changes, comments are never lost."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    errors,
    make_client_fixture,
    open_document,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

PERFECT = KERNELS / "matmul" / "perfect.mcpl"
GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"


async def _format(client: LanguageClient, uri: str) -> list[lsp.TextEdit]:
    answer = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(2, True)))
    return list(answer or [])


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


async def test_a_squeezed_function_is_laid_out_and_comments_stay(
        client: LanguageClient) -> None:
    original = PERFECT.read_text()
    body = original[original.index("perfect void"):]
    squeezed = original.replace(body, re.sub(r"\s+", " ", body).strip() + "\n")
    uri = open_document(client, PERFECT, squeezed)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    edits = await _format(client, uri)
    assert len(edits) == 1
    formatted = _apply(squeezed, edits)
    assert formatted.splitlines()[:2] == original.splitlines()[:2]  # the comment header
    assert re.sub(r"\s+", "", formatted) == re.sub(r"\s+", "", squeezed)  # only layout
    assert len(formatted.splitlines()) > len(squeezed.splitlines())
    client.diagnostics.pop(uri, None)
    replace_text(client, uri, formatted)
    await wait_for(client, uri, lambda ds: True)  # published after the new check
    assert await _format(client, uri) == []  # formatted text stays as it is
    await close_document(client, uri)


async def test_a_function_with_comments_inside_is_left_alone(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    squeezed = text.replace("  int nrBlocksM =", "int    nrBlocksM =")
    uri = open_document(client, GPU_V1, squeezed)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    assert await _format(client, uri) == []
    await close_document(client, uri)


async def test_a_file_with_errors_is_not_formatted(client: LanguageClient) -> None:
    broken = PERFECT.read_text().replace("float sum = 0.0;", "float sum = ;")
    uri = open_document(client, PERFECT, broken)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    assert await _format(client, uri) == []
    await close_document(client, uri)
