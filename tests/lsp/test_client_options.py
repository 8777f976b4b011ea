"""What the client asks for is what it gets: settings sent as `initializationOptions`
stay when the client answers `workspace/configuration` with null (Neovim 0.8 and later
with docs/editor.md's Neovim 0.7 configuration), and formatting indents as the client's
`tabSize`/`insertSpaces` say, for the whole file or a range."""

from __future__ import annotations

from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from .conftest import (
    KERNELS,
    SERVER,
    capabilities,
    close_document,
    errors,
    open_document,
    opened,
    position_of,
    wait_for,
)
from .test_navigation import _apply

pytestmark = pytest.mark.asyncio(loop_scope="module")

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
VECTORADD = KERNELS / "vectoradd" / "perfect.mcpl"
TRANSPOSE = KERNELS / "transpose" / "perfect.mcpl"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient) -> Any:
    # No configuration set: the client answers `workspace/configuration` with [null].
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=capabilities(),
        initialization_options={"mcl": {"defines": {"n": 2048}, "feedback": False}}))
    yield
    await lsp_client.shutdown_session()


async def _value_of_n(client: LanguageClient) -> str | None:
    uri, text = await opened(client, GPU_V1)
    answer = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri),
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(text.count("\n"), 0))))
    after_n = position_of(text, "n, int m", offset=1)
    await close_document(client, uri)
    return next((str(h.label) for h in answer or [] if h.position == after_n), None)


async def test_initialization_options_survive_a_null_configuration(client: LanguageClient
                                                                   ) -> None:
    assert await _value_of_n(client) == "= 2,048"
    # a change of the client's configuration that has no `mcl` section: asked again, null
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={}))
    assert await _value_of_n(client) == "= 2,048"


async def _format(client: LanguageClient, uri: str, tab_size: int, spaces: bool,
                  lines: tuple[int, int] | None = None) -> list[lsp.TextEdit]:
    options = lsp.FormattingOptions(tab_size, spaces)
    document = lsp.TextDocumentIdentifier(uri)
    if lines is None:
        answer = await client.text_document_formatting_async(
            lsp.DocumentFormattingParams(document, options))
    else:
        answer = await client.text_document_range_formatting_async(
            lsp.DocumentRangeFormattingParams(document, lsp.Range(
                lsp.Position(lines[0], 0), lsp.Position(lines[1], 0)), options))
    return list(answer or [])


@pytest.mark.parametrize(("kernel", "innermost"), [
    (VECTORADD, "c[i] = a[i] + b[i];"), (TRANSPOSE, "b[j, i] = a[i, j];")])
async def test_two_space_kernels_stay_as_they_are(client: LanguageClient, kernel: Any,
                                                  innermost: str) -> None:
    uri, text = await opened(client, kernel)
    depth = text.count("foreach") + 1  # the function's body, then each foreach
    assert f"\n{' ' * 2 * depth}{innermost}\n" in text
    assert await _format(client, uri, 2, True) == []
    four = _apply(text, await _format(client, uri, 4, True))
    assert f"\n{' ' * 4 * depth}{innermost}\n" in four
    tabs = _apply(text, await _format(client, uri, 8, False))
    assert not [line for line in tabs.splitlines() if line.startswith(" ")]
    assert "\n\tforeach (int i in n threads) {" in tabs
    await close_document(client, uri)


TWO_FUNCTIONS = """\
import perfect;

perfect void first(int n, main float[n] a) { foreach (int i in n threads) { a[i] = 1.0; } }

perfect void second(int n, main float[n] a) { foreach (int i in n threads) { a[i] = 2.0; } }
"""


async def test_range_formatting_lays_out_the_definitions_in_the_range(
        client: LanguageClient) -> None:
    uri = open_document(client, VECTORADD, TWO_FUNCTIONS)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    second = position_of(TWO_FUNCTIONS, "perfect void second").line
    edits = await _format(client, uri, 2, True, (second, second))
    assert [e.range.start.line for e in edits] == [second]
    formatted = _apply(TWO_FUNCTIONS, edits)
    assert "perfect void first(int n, main float[n] a) { foreach" in formatted
    assert "\n  foreach (int i in n threads) {\n    a[i] = 2.0;\n  }\n}" in formatted
    assert len(await _format(client, uri, 2, True)) == 2  # the whole file: both
    await close_document(client, uri)
