"""A real LSP client (pytest-lsp) talking to `mcl lsp` over stdio.

One server per test module (it starts a feedback worker that imports SymPy: seconds).
Tests open documents with their text, so the files on disk are never changed."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from mcl.lsp import worker
from mcl.lsp.analysis import Libraries
from mcl.mcpl import parse

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
SERVER = [sys.executable, "-m", "mcl", "lsp"]
TIMEOUT_S = 60.0  # generous: the machine running the suite may be busy


def capabilities() -> lsp.ClientCapabilities:
    return lsp.ClientCapabilities(
        workspace=lsp.WorkspaceClientCapabilities(configuration=True),
        text_document=lsp.TextDocumentClientCapabilities(
            hover=lsp.HoverClientCapabilities(content_format=[lsp.MarkupKind.Markdown]),
            document_symbol=lsp.DocumentSymbolClientCapabilities(
                hierarchical_document_symbol_support=True)),
    )


def make_client_fixture(settings: dict[str, Any], env: dict[str, str] | None = None) -> Any:
    """A module-scoped client whose `mcl` settings are `settings`."""
    import os

    server_env = {**os.environ, **(env or {})} if env else None

    @pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=server_env),
                        scope="module")
    async def client(lsp_client: LanguageClient):
        lsp_client.set_configuration({"mcl": {"debounceMs": 50, **settings}})
        result = await lsp_client.initialize_session(lsp.InitializeParams(
            capabilities=capabilities(), root_uri=ROOT.as_uri()))
        SERVER_CAPABILITIES[id(lsp_client)] = result.capabilities
        yield
        await lsp_client.shutdown_session()

    return client


_versions: dict[str, int] = {}
# What the server announced to each client (by the client's id()).
SERVER_CAPABILITIES: dict[int, lsp.ServerCapabilities] = {}


def open_document(client: LanguageClient, path: Path, text: str | None = None) -> str:
    uri = path.resolve().as_uri()
    client.diagnostics.pop(uri, None)
    _versions[uri] = 1
    language = "hdl" if path.suffix == ".hdl" else "mcpl"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
        uri, language, 1, path.read_text() if text is None else text)))
    return uri


async def opened(client: LanguageClient, path: Path, text: str | None = None
                 ) -> tuple[str, str]:
    """Open `path` (with `text`, else the file's), wait for its first diagnostics, and
    give its uri and text."""
    text = path.read_text() if text is None else text
    uri = open_document(client, path, text)
    await wait_for(client, uri, lambda ds: True)
    return uri, text


def replace_text(client: LanguageClient, uri: str, text: str) -> None:
    """A whole-document change, as a client sends after a keystroke."""
    _versions[uri] += 1
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=_versions[uri]),
        [lsp.TextDocumentContentChangeWholeDocument(text)]))


async def close_document(client: LanguageClient, uri: str) -> None:
    """Close, and wait for the server to clear the document's diagnostics (so that those
    of a later open are not mistaken for that)."""
    client.diagnostics[uri] = [lsp.Diagnostic(lsp.Range(lsp.Position(0, 0),
                                                        lsp.Position(0, 0)), "open")]
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(
        lsp.TextDocumentIdentifier(uri)))
    await wait_for(client, uri, lambda ds: not ds)


async def wait_for(client: LanguageClient, uri: str,
                   ready: Callable[[Sequence[lsp.Diagnostic]], bool],
                   timeout: float = TIMEOUT_S) -> Sequence[lsp.Diagnostic]:
    """The document's diagnostics once `ready` holds for the last published ones."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if uri in client.diagnostics and ready(client.diagnostics[uri]):
            return client.diagnostics[uri]
        await asyncio.sleep(0.02)
    raise AssertionError(f"no such diagnostics for {uri} in {timeout} s; last: "
                         f"{client.diagnostics.get(uri)}")


async def hover_text(client: LanguageClient, uri: str, position: lsp.Position) -> str:
    """The Markdown of the hover at `position` (which must have one)."""
    hover = await client.text_document_hover_async(lsp.HoverParams(
        lsp.TextDocumentIdentifier(uri), position))
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    return hover.contents.value


def has_feedback(diagnostics: Sequence[lsp.Diagnostic]) -> bool:
    return any(d.source == "mcl feedback" for d in diagnostics)


def errors(diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Error]


def position_of(text: str, needle: str, occurrence: int = 0, offset: int = 0) -> lsp.Position:
    """The 0-based position of the `occurrence`-th `needle` in `text`, plus `offset`."""
    start = -1
    for _ in range(occurrence + 1):
        start = text.index(needle, start + 1)
    line = text.count("\n", 0, start)
    column = start - (text.rfind("\n", 0, start) + 1)
    return lsp.Position(line, column + offset)


@pytest.fixture
def libraries() -> Iterator[Libraries]:
    """The worker's libraries for a test that runs its jobs in this process: definitions
    reused as in the worker's process, and no last job's feedback (nor kernel's findings)
    before or after."""
    parse.reuse_definitions()
    worker._last = worker._kept = None
    yield Libraries()
    parse.reuse_definitions(False)
    worker._last = worker._kept = None
