"""Answers while the buffer does not parse come from the last good tree, at the lines
where its text is now (mcl.lsp.shift): never at the old lines, never on an edited line."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    errors,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False, "defines": {"n": 2048}})

PERFECT = KERNELS / "matmul" / "perfect.mcpl"
BROKEN_LINE = "      float broken = ;\n"  # half typed: the file does not parse


async def _broken(client: LanguageClient) -> tuple[str, str]:
    """matmul perfect.mcpl checked once, then a line that does not parse inserted above
    its loop; its uri and the broken text, once the syntax error is published."""
    text = PERFECT.read_text()
    uri = open_document(client, PERFECT, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    at = text.index("      float sum = 0.0;")
    broken = text[:at] + BROKEN_LINE + text[at:]
    replace_text(client, uri, broken)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    return uri, broken


async def _hover(client: LanguageClient, uri: str, at: lsp.Position) -> str | None:
    answer = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), at))
    if answer is None:
        return None
    assert isinstance(answer.contents, lsp.MarkupContent)
    return answer.contents.value


async def test_hover_below_a_syntax_error_names_what_is_there_now(client: LanguageClient
                                                                  ) -> None:
    uri, broken = await _broken(client)
    value = await _hover(client, uri, position_of(broken, "sum +="))
    assert value is not None and "**sum**" in value
    value = await _hover(client, uri, position_of(broken, "b[k, j]"))
    assert value is not None and "**b**" in value
    # the edited line is in no tree: nothing, rather than what was there before
    assert await _hover(client, uri, position_of(broken, "broken")) is None
    await close_document(client, uri)


async def test_definition_below_a_syntax_error_points_at_the_shifted_declaration(
        client: LanguageClient) -> None:
    uri, broken = await _broken(client)
    found = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position_of(broken, "= sum;", offset=2)))
    assert isinstance(found, lsp.Location)
    assert found.range.start == position_of(broken, "float sum = 0.0")
    await close_document(client, uri)


async def test_inlay_hints_below_a_syntax_error_move_with_their_lines(
        client: LanguageClient) -> None:
    text = PERFECT.read_text()
    uri = open_document(client, PERFECT, text)
    await wait_for(client, uri, lambda ds: True)
    request = lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), lsp.Range(
        lsp.Position(0, 0), lsp.Position(text.count("\n") + 2, 0)))
    before = await client.text_document_inlay_hint_async(request)
    assert before
    await close_document(client, uri)
    uri, broken = await _broken(client)
    after = await client.text_document_inlay_hint_async(request)
    assert after is not None
    moved = position_of(text, "float sum").line

    def shifted(p: lsp.Position) -> tuple[int, int]:
        return (p.line + 1 if p.line >= moved else p.line, p.character)

    assert sorted(shifted(h.position) for h in before) == \
        sorted((h.position.line, h.position.character) for h in after)
    lines = broken.split("\n")
    for hint in before:  # each names the same text as before the edit
        old, new = hint.position, lsp.Position(*shifted(hint.position))
        assert text.split("\n")[old.line][:old.character] == \
            lines[new.line][:new.character]
    await close_document(client, uri)
