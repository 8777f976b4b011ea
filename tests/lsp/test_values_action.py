"""The code action for feedback that needs values: add them to the project's mcl.toml
(what `-D name=value` says on the command line), creating it or merging into it."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from mcl.settings import find_settings

from .conftest import (
    KERNELS,
    close_document,
    has_feedback,
    make_client_fixture,
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


async def _values_action(client: LanguageClient, uri: str) -> lsp.CodeAction:
    diagnostics = await wait_for(client, uri, has_feedback)
    needing = [d for d in diagnostics if isinstance(d.data, dict) and d.data.get("needs")]
    assert needing
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), needing[0].range,
        lsp.CodeActionContext(diagnostics=needing)))
    (action,) = [a for a in actions or [] if isinstance(a, lsp.CodeAction)
                 and "mcl.toml" in a.title]
    return action


async def test_values_go_to_a_new_mcl_toml(client: LanguageClient, tmp_path) -> None:
    kernel = tmp_path / "matmul.mcpl"
    kernel.write_text(MATMUL.read_text())
    uri = open_document(client, kernel)
    action = await _values_action(client, uri)
    assert action.title == "Add -D m=1024 -D n=1024 -D p=1024 to mcl.toml"
    assert action.edit is not None and action.edit.document_changes is not None
    create, write = action.edit.document_changes
    assert isinstance(create, lsp.CreateFile)
    assert create.uri == (tmp_path / "mcl.toml").as_uri()
    assert isinstance(write, lsp.TextDocumentEdit)
    (edit,) = write.edits
    # What the client does with the edit: the file the settings reader accepts.
    (tmp_path / "mcl.toml").write_text(edit.new_text)
    assert find_settings(tmp_path).values == {"m": 1024, "n": 1024, "p": 1024}
    await close_document(client, uri)


async def test_values_merge_into_an_existing_mcl_toml(client: LanguageClient, tmp_path
                                                      ) -> None:
    kernel = tmp_path / "matmul.mcpl"
    kernel.write_text(MATMUL.read_text())
    settings = tmp_path / "mcl.toml"
    settings.write_text('level = "perfect"\nvalues = { n = 2048 }\n')
    uri = open_document(client, kernel)
    action = await _values_action(client, uri)
    assert action.title == "Add -D m=1024 -D p=1024 to mcl.toml"  # n has its value
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[settings.as_uri()]
    lines = settings.read_text().split("\n")
    assert edit.range.start.line == edit.range.end.line == 1
    lines[1] = edit.new_text
    settings.write_text("\n".join(lines))
    merged = find_settings(tmp_path)
    assert merged.values == {"n": 2048, "m": 1024, "p": 1024} and merged.level == "perfect"
    await close_document(client, uri)
