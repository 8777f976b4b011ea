"""Bad input never kills the server: hypothesis-generated sequences of edits (deletions,
insertions of MCPL fragments, stray bytes, deep nesting) of matmul, each followed by
requests at random places, and the server still answers, and checks the repaired text
clean at the end."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
client = make_client_fixture({"level": "gpu", "debounceMs": 10})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"
FRAGMENTS = ["{", "}", ";", "(", ")", "[", "]", "\n", "foreach (int q in n threads) {",
             "barrier(local);", "a[i, k]", "local float[n] t;", "int", "gpu", "perfect",
             "((((((((((((((((((((", "}}}}", "/*", "//", "\x00", "é", "\U0001f600", "\t",
             "import gpu;", "c[i, j] = c[i, j] + 1;", "for (int z = 0; z < p; z++) {"]
EXAMPLES = 12  # the machine running the suite has two cores; each example is a session


@dataclass(frozen=True)
class Edit:
    start: float  # fractions of the text's length, so edits apply to any text
    length: float
    insert: str


edits = st.builds(Edit, st.floats(0, 1), st.floats(0, 0.2),
                  st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)))
scripts = st.lists(st.tuples(edits, st.floats(0, 1)), min_size=1, max_size=6)


def _generated() -> list[list[tuple[Edit, float]]]:
    """Hypothesis draws the edit scripts; the async test replays them against one server
    (a session per example would take minutes)."""
    drawn: list[list[tuple[Edit, float]]] = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(scripts)
    def collect(script: list[tuple[Edit, float]]) -> None:
        drawn.append(script)

    collect()
    return drawn


def _apply(text: str, edit: Edit) -> str:
    start = int(edit.start * len(text))
    end = min(len(text), start + int(edit.length * len(text)))
    return text[:start] + edit.insert + text[end:]


def _position(text: str, where: float) -> lsp.Position:
    lines = text.split("\n")
    line = min(int(where * len(lines)), len(lines) - 1)
    return lsp.Position(line, int(where * 997) % (len(lines[line]) + 1))


async def test_fuzzed_edits_keep_the_server_answering(client: LanguageClient) -> None:
    good = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, lambda ds: True)
    document = lsp.TextDocumentIdentifier(uri)
    for script in _generated():
        text = good
        for edit, where in script:
            text = _apply(text, edit)
            replace_text(client, uri, text)
            position = _position(text, where)
            await client.text_document_hover_async(lsp.HoverParams(document, position))
            await client.text_document_definition_async(lsp.DefinitionParams(document,
                                                                              position))
            await client.text_document_completion_async(lsp.CompletionParams(document,
                                                                             position))
            await client.text_document_document_symbol_async(
                lsp.DocumentSymbolParams(document))
        replace_text(client, uri, good)
        await wait_for(client, uri, lambda ds: not errors(ds))
    errors_logged = [m for m in client.log_messages if m.type == lsp.MessageType.Error]
    assert not errors_logged, errors_logged
    await close_document(client, uri)
