"""Saved changes of mcl.toml, descriptions and modules re-run the diagnostics of open
kernels; so do edits of an open module that another open kernel lacks or cycles with."""

from __future__ import annotations

import asyncio

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
    replace_text,
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
    await wait_for(client, uri, lambda ds: True)
    # The registration follows `initialized`, as its own request: on a loaded machine it
    # may come after the first diagnostics.
    for _ in range(1500):
        if any(r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in REGISTERED):
            break
        await asyncio.sleep(0.02)
    (watch,) = [r for r in REGISTERED if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    options = lsp.DidChangeWatchedFilesRegistrationOptions(**watch.register_options) \
        if isinstance(watch.register_options, dict) else watch.register_options
    globs = {w["globPattern"] if isinstance(w, dict) else w.glob_pattern
             for w in options.watchers}
    assert {"**/mcl.toml", "**/*.hdl", "**/*.mcpl"} <= globs
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


MODULE_C = "module c;\nexport fc;\nimport perfect;\n\nperfect float fc(float x) {\n  return x;\n}\n"
USES_C = ("import perfect;\nimport c;\n\nperfect void k(int n, float[n] v) {\n"
          "  foreach (int i in n threads) { v[i] = fc(v[i]); }\n}\n")


async def test_a_module_created_on_disk_clears_the_unknown_import(client: LanguageClient,
                                                                  tmp_path) -> None:
    kernel = tmp_path / "main.mcpl"
    kernel.write_text(USES_C)
    uri = open_document(client, kernel)
    (missing,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert missing.code == "mcpl-unknown-import"
    (tmp_path / "c.mcpl").write_text(MODULE_C)  # made by another program
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent((tmp_path / "c.mcpl").as_uri(), lsp.FileChangeType.Created)]))
    assert list(await wait_for(client, uri, lambda ds: not ds)) == []
    # renamed away on disk: the import is unknown again
    (tmp_path / "c.mcpl").rename(tmp_path / "d.mcpl")
    client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(changes=[
        lsp.FileEvent((tmp_path / "c.mcpl").as_uri(), lsp.FileChangeType.Deleted),
        lsp.FileEvent((tmp_path / "d.mcpl").as_uri(), lsp.FileChangeType.Created)]))
    (missing,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert missing.code == "mcpl-unknown-import"
    await close_document(client, uri)


async def test_a_module_opened_as_a_buffer_clears_the_unknown_import(
        client: LanguageClient, tmp_path) -> None:
    kernel = tmp_path / "main.mcpl"
    kernel.write_text(USES_C)
    uri = open_document(client, kernel)
    assert errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    (tmp_path / "c.mcpl").write_text("")  # an empty file, as an editor makes a new one
    module_uri = open_document(client, tmp_path / "c.mcpl", "")
    await wait_for(client, module_uri, lambda ds: True)
    replace_text(client, module_uri, MODULE_C)  # typed, never saved
    assert list(await wait_for(client, uri, lambda ds: not ds)) == []
    await close_document(client, module_uri)
    await close_document(client, uri)


async def test_breaking_an_import_cycle_clears_the_other_files_error(
        client: LanguageClient, tmp_path) -> None:
    def module(name: str, other: str) -> str:
        return (f"module {name};\nexport f{name};\nimport perfect;\nimport {other};\n\n"
                f"perfect float f{name}(float x) {{\n  return x;\n}}\n")

    (tmp_path / "a.mcpl").write_text(module("a", "b"))
    (tmp_path / "b.mcpl").write_text(module("b", "a"))
    a_uri = open_document(client, tmp_path / "a.mcpl")
    (cycle,) = errors(await wait_for(client, a_uri, lambda ds: bool(errors(ds))))
    assert cycle.code == "mcpl-import-cycle"
    b_uri = open_document(client, tmp_path / "b.mcpl")
    assert errors(await wait_for(client, b_uri, lambda ds: bool(errors(ds))))
    replace_text(client, b_uri, module("b", "a").replace("import a;\n", ""))
    assert list(await wait_for(client, b_uri, lambda ds: not ds)) == []
    assert list(await wait_for(client, a_uri, lambda ds: not ds)) == []
    await close_document(client, b_uri)
    await close_document(client, a_uri)
