"""Semantic tokens of `mcl lsp`: what each word is, in the client's units."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from mcl.lsp.tokens import MODIFIERS, TYPES

from .conftest import (
    KERNELS,
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


def _decode(data: list[int]) -> dict[tuple[int, int], tuple[int, str, set[str]]]:
    out = {}
    line = start = 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, length, type_, mods = data[i:i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        out[(line, start)] = (length, TYPES[type_],
                              {m for j, m in enumerate(MODIFIERS) if mods & (1 << j)})
    return out


async def test_words_are_classified(client: LanguageClient) -> None:
    # the emoji counts two UTF-16 units (the protocol's default encoding here)
    text = GPU_V1.read_text().replace("      local float[p] l_a;",
                                      "      /* 😀 */ local float[p] l_a;")
    uri = open_document(client, GPU_V1, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    legend = SERVER_CAPABILITIES[id(client)].semantic_tokens_provider
    assert legend is not None
    answer = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri)))
    assert answer is not None
    tokens = _decode(list(answer.data))

    def at(needle: str, occurrence: int = 0, offset: int = 0) -> tuple[int, str, set[str]]:
        p = position_of(text, needle, occurrence, offset)
        line = text.split("\n")[p.line]
        units = len(line[:p.character].encode("utf-16-le")) // 2
        return tokens[(p.line, units)]

    assert at("// change")[1] == "comment"
    assert at("gpu void") == (3, "namespace", set())
    assert at("void matmul") == (4, "type", {"defaultLibrary"})
    assert at("matmul(") == (6, "function", {"declaration"})
    assert at("n, int m") == (1, "parameter", {"declaration"})
    assert at("dev float[n, m] c") == (3, "modifier", set())
    assert at("foreach (int bi") == (7, "keyword", set())
    assert at("256")[1] == "number"
    assert at("threads)") == (7, "namespace", set())
    assert at("local float[p]") == (5, "modifier", set())  # after the emoji
    assert at("l_a;") == (3, "variable", {"declaration"})
    assert at("l_a[k]") == (3, "variable", set())
    assert at("NR_THREADS_M - 1") == (12, "variable", {"readonly"})
    assert at("nrLoads; l++") == (7, "variable", set())
    await close_document(client, uri)
