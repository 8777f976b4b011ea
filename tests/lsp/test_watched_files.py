"""Saved changes of mcl.toml and descriptions re-run the diagnostics of open kernels."""

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
    open_document,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
REGISTERED: list[lsp.Registration] = []


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER), scope="module")
async def client(lsp_client: LanguageClient):
    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        REGISTERED.extend(params.registrations)

    lsp_client.set_configuration({"mcl": {"feedback": False}})
    caps = capabilities()
    assert caps.workspace is not None
    caps.workspace.did_change_watched_files = lsp.DidChangeWatchedFilesClientCapabilities(
        dynamic_registration=True)
    await lsp_client.initialize_session(lsp.InitializeParams(
        capabilities=caps, root_uri=ROOT.as_uri()))
    yield
    await lsp_client.shutdown_session()


async def test_the_server_asks_to_watch_settings_and_descriptions(
        client: LanguageClient) -> None:
    uri = open_document(client, KERNELS / "matmul" / "perfect.mcpl")
    await wait_for(client, uri, lambda ds: True)  # registration follows `initialized`
    (watch,) = [r for r in REGISTERED if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    options = lsp.DidChangeWatchedFilesRegistrationOptions(**watch.register_options) \
        if isinstance(watch.register_options, dict) else watch.register_options
    globs = {w["globPattern"] if isinstance(w, dict) else w.glob_pattern
             for w in options.watchers}
    assert {"**/mcl.toml", "**/*.hdl"} <= globs
    await close_document(client, uri)


async def test_a_saved_mcl_toml_is_picked_up_without_an_edit(client: LanguageClient,
                                                             tmp_path) -> None:
    kernel = tmp_path / "k.mcpl"
    kernel.write_text((KERNELS / "matmul" / "perfect.mcpl").read_text())
    uri = open_document(client, kernel)
    assert list(await wait_for(client, uri, lambda ds: True)) == []
    (tmp_path / "mcl.toml").write_text("level = [\n")  # not TOML
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent((tmp_path / "mcl.toml").as_uri(), lsp.FileChangeType.Created)]))
    (problem,) = await wait_for(client, uri, lambda ds: bool(ds))
    assert "mcl.toml" in problem.message or "mcl.toml" in str(problem.related_information)
    (tmp_path / "mcl.toml").unlink()
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent((tmp_path / "mcl.toml").as_uri(), lsp.FileChangeType.Deleted)]))
    assert list(await wait_for(client, uri, lambda ds: not ds)) == []
    await close_document(client, uri)
