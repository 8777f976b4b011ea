"""Inlay hints of `mcl lsp`: default memory spaces, description constants, -D values."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    errors,
    hover_text,
    make_client_fixture,
    open_document,
    position_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False, "defines": {"n": 2048}})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"


async def _hints(client: LanguageClient, uri: str, text: str
                 ) -> dict[tuple[int, int], lsp.InlayHint]:
    last = text.count("\n")
    answer = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri),
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(last, 0))))
    return {(h.position.line, h.position.character): h for h in answer or []}


async def test_default_spaces_values_and_constants(client: LanguageClient) -> None:
    text = GPU_V1.read_text().replace(
        "  int nrBlocksM =",
        "  int most = gpu.hierarchy.blocks.block.threads.max_nr_units;\n  int nrBlocksM =")
    uri = open_document(client, GPU_V1, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    hints = await _hints(client, uri, text)
    # `int n`: its value from the settings, after the name
    after_n = position_of(text, "n, int m", offset=1)
    assert hints[(after_n.line, after_n.character)].label == "= 2,048"
    # a parameter with its space written gets no space hint
    assert (position_of(text, "dev float[n, m] c").line,
            position_of(text, "dev float[n, m] c").character) not in hints
    # a scalar without a space: the default one, the same the hover names
    decl = position_of(text, "int nrLoads")
    space = hints[(decl.line, decl.character)]
    assert space.kind == lsp.InlayHintKind.Type
    hover = await hover_text(client, uri, position_of(text, "nrLoads ="))
    assert f"memory space `{space.label}` (the default)" in hover
    # the description constant: its value
    end = position_of(text, "max_nr_units;", offset=len("max_nr_units"))
    assert hints[(end.line, end.character)].label == "= 1024"  # as the hover shows it
    await close_document(client, uri)
