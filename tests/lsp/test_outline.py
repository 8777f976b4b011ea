"""Folding ranges, workspace symbols and signature help of `mcl lsp`."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    close_document,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
BLACKSCHOLES = KERNELS / "blackscholes" / "perfect.mcpl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"
COMPLEX = ROOT / "tests" / "mcpl" / "paper_style" / "lib" / "math" / "complex.mcl"


async def test_folding_ranges(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    ranges = await client.text_document_folding_range_async(lsp.FoldingRangeParams(
        lsp.TextDocumentIdentifier(uri)))
    assert ranges is not None
    folds = {(r.start_line, r.end_line, r.kind) for r in ranges}
    lines = text.split("\n")
    header_end = next(i for i, line in enumerate(lines) if not line.startswith("//")) - 1
    assert (0, header_end, lsp.FoldingRangeKind.Comment) in folds
    function = position_of(text, "gpu void matmul").line
    last = max(i for i, line in enumerate(lines) if line.startswith("}"))
    assert (function, last, None) in folds
    foreach = position_of(text, "foreach (int tj").line
    assert any(start == foreach and kind is None for start, _, kind in folds)
    await close_document(client, uri)


async def test_workspace_symbols_include_imported_modules(client: LanguageClient) -> None:
    uri = open_document(client, TWIDDLE)
    await wait_for(client, uri, lambda ds: True)
    symbols = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="MAGN"))
    assert symbols is not None
    (magnitude,) = [s for s in symbols if s.name == "magnitude"]
    assert magnitude.kind == lsp.SymbolKind.Function
    assert isinstance(magnitude.location, lsp.Location)
    assert magnitude.location.uri == COMPLEX.as_uri()
    line = position_of(COMPLEX.read_text(), "magnitude(const").line
    assert magnitude.location.range.start.line == line
    await close_document(client, uri)


async def test_signature_help_while_a_call_is_typed(client: LanguageClient) -> None:
    text = BLACKSCHOLES.read_text()
    uri = open_document(client, BLACKSCHOLES)
    await wait_for(client, uri, lambda ds: True)

    async def help_at(position: lsp.Position) -> lsp.SignatureHelp | None:
        return await client.text_document_signature_help_async(lsp.SignatureHelpParams(
            text_document=lsp.TextDocumentIdentifier(uri), position=position))

    own = await help_at(position_of(text, "cnd(d1)", offset=4))
    assert own is not None and own.signatures[0].label == "perfect float cnd(float d)"
    assert own.active_parameter == 0
    # an unfinished call: the file does not parse, the last good check still knows `max`
    typing = text.replace("float d2 = d1 - v * sqrtT;", "float d2 = max(d1, ")
    replace_text(client, uri, typing)
    await wait_for(client, uri, lambda ds: any(d.code == "mcpl-syntax" for d in ds))
    builtin = await help_at(position_of(typing, "max(d1, ", offset=8))
    assert builtin is not None
    assert builtin.signatures[0].label == "number max(number a, number b)"
    assert builtin.active_parameter == 1
    assert await help_at(position_of(typing, "float d2")) is None  # not in a call
    await close_document(client, uri)
