"""Completion of `mcl lsp`: names in scope, the par_groups that may nest at the cursor,
memory spaces, nothing inside comments."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    SERVER_CAPABILITIES,
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
PERFECT = KERNELS / "matmul" / "perfect.mcpl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"


async def _labels(client: LanguageClient, uri: str, position: lsp.Position
                  ) -> dict[str, lsp.CompletionItem]:
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        lsp.TextDocumentIdentifier(uri), position))
    items = answer.items if isinstance(answer, lsp.CompletionList) else answer or []
    return {item.label: item for item in items}


async def test_the_server_asks_for_no_trigger_characters(client: LanguageClient) -> None:
    provider = SERVER_CAPABILITIES[id(client)].completion_provider
    assert provider is not None and not provider.trigger_characters


async def test_par_groups_that_may_nest_at_the_cursor(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    # inside `foreach (... blocks)`: blocks again (same group nests) and threads below
    inside_blocks = await _labels(client, uri, position_of(text, "foreach (int tj", offset=-1))
    assert inside_blocks["threads"].kind == lsp.CompletionItemKind.Class
    assert inside_blocks["blocks"].kind == lsp.CompletionItemKind.Class
    assert inside_blocks["local"].kind == lsp.CompletionItemKind.Variable  # memory space
    # outside all foreach statements: only the outermost group
    at_top = await _labels(client, uri, position_of(text, "foreach (int bi", offset=-1))
    assert "blocks" in at_top and "threads" not in at_top
    # inside threads: threads only
    inside_threads = await _labels(client, uri, position_of(text, "barrier(local);"))
    assert "threads" in inside_threads and "blocks" not in inside_threads
    await close_document(client, uri)


async def test_names_in_scope_and_not_later_ones(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    labels = await _labels(client, uri, position_of(text, "barrier(local);"))
    for name in ("nrLoads", "l_a", "bi", "tj", "i", "j", "n", "c"):
        assert labels[name].kind == lsp.CompletionItemKind.Variable, name
    assert labels["n"].detail == "parameter: int"
    assert labels["NR_THREADS_M"].kind == lsp.CompletionItemKind.Constant
    assert labels["matmul"].kind == lsp.CompletionItemKind.Function
    assert labels["sqrt"].detail == "built-in"
    assert "sum" not in labels  # declared further down, in a block not yet open
    assert "k" not in labels  # the loop variable of a loop that has ended
    await close_document(client, uri)


async def test_imported_exports_are_offered_and_hidden_names_are_not(
        client: LanguageClient) -> None:
    text = TWIDDLE.read_text()
    uri = open_document(client, TWIDDLE)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    labels = await _labels(client, uri, position_of(text, "mul(product"))
    assert labels["magnitude"].kind == lsp.CompletionItemKind.Function
    assert labels["Complex"].kind == lsp.CompletionItemKind.Struct
    assert labels["TWO_PI"].kind == lsp.CompletionItemKind.Constant
    assert labels["w"].kind == lsp.CompletionItemKind.Variable
    await close_document(client, uri)


async def test_nothing_inside_a_comment(client: LanguageClient) -> None:
    text = PERFECT.read_text()
    uri = open_document(client, PERFECT)
    await wait_for(client, uri, lambda ds: True)
    assert await _labels(client, uri, position_of(text, "multiplication")) == {}
    assert await _labels(client, uri, position_of(text, "sum;")) != {}
    await close_document(client, uri)
