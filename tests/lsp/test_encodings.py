"""Columns in the client's position encoding: UTF-8, UTF-16 (the default), UTF-32.

Each case starts a server with a client that offers some encodings, and checks what the
server picks, where it puts a diagnostic after é, an emoji and CJK characters on the
line, and that go-to-definition and hover work from a position after them."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    SERVER,
    capabilities,
    close_document,
    errors,
    open_document,
    position_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

MATMUL = KERNELS / "matmul" / "perfect.mcpl"
UTF8, UTF16, UTF32 = (lsp.PositionEncodingKind.Utf8, lsp.PositionEncodingKind.Utf16,
                      lsp.PositionEncodingKind.Utf32)
# (what the client offers, what the server must pick)
CASES = [
    ([UTF8], UTF8),
    ([UTF16], UTF16),
    (None, UTF16),  # a client that says nothing gets the protocol's default
    ([UTF8, UTF16, UTF32], UTF32),  # UTF-32 whenever offered: nothing to convert
]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module",
                    params=CASES, ids=["utf-8", "utf-16", "default", "utf-32"])
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest):
    offered, _ = request.param
    lsp_client.set_configuration({"mcl": {"debounceMs": 0, "feedback": False}})
    caps = capabilities()
    if offered is not None:
        caps.general = lsp.GeneralClientCapabilities(position_encodings=offered)
    result = await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=caps, root_uri=ROOT.as_uri()))
    lsp_client.picked = result.capabilities.position_encoding  # type: ignore[attr-defined]
    lsp_client.expected = request.param[1]  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


def units(text: str, encoding: str) -> int:
    """Length of `text` in the code units of `encoding`, counted independently of pygls."""
    if encoding == UTF8:
        return len(text.encode("utf-8"))
    if encoding == UTF16:
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def client_position(text: str, needle: str, encoding: str, occurrence: int = 0,
                    offset: int = 0) -> lsp.Position:
    at = position_of(text, needle, occurrence, offset)
    line = text.split("\n")[at.line]
    return lsp.Position(at.line, units(line[: at.character], encoding))


WIDE = "/* é 😀 中文 */ "
TEXT = (MATMUL.read_text()
        .replace("      float sum = 0.0;", f"      {WIDE}float sum = 0.0;")
        .replace("      c[i, j] = sum;", "      /* 😀é中 */ c[i, j] = sum;"))


async def test_the_server_picks_utf32_when_offered_else_the_client_s(
        client: LanguageClient) -> None:
    assert client.picked == client.expected  # type: ignore[attr-defined]


async def test_a_diagnostic_after_wide_characters(client: LanguageClient) -> None:
    enc = client.expected  # type: ignore[attr-defined]
    text = TEXT.replace("c[i, j] = sum;", "c[i, j] = summ;")
    uri = open_document(client, MATMUL, text)
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert error.code == "mcpl-unknown-name"
    assert error.range.start == client_position(text, "summ;", enc)
    assert error.range.end == client_position(text, "summ;", enc, offset=4)
    await close_document(client, uri)


async def test_definition_and_hover_after_an_emoji(client: LanguageClient) -> None:
    enc = client.expected  # type: ignore[attr-defined]
    uri = open_document(client, MATMUL, TEXT)
    await wait_for(client, uri, lambda ds: not errors(ds))
    # on the `m` of the `sum` after the emoji, é and 中
    use = client_position(TEXT, "sum;", enc, offset=1)
    answer = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), use))
    assert isinstance(answer, lsp.Location), answer
    declared = client_position(TEXT, "sum = 0.0", enc)
    assert answer.range.start == declared
    assert answer.range.end == lsp.Position(declared.line, declared.character + 3)
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), use))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "float" in hover.contents.value
    await close_document(client, uri)
