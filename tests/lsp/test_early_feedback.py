"""An edit of a document whose last check was clean starts its feedback beside the check
(mcl.lsp.server) where a core is free, not after it; a check that finds errors drops that
feedback.

The check and the analyses of the shipped kernels take milliseconds, so both are stood
for by the test delays (MCL_LSP_CHECK_DELAY, mcl.lsp.analysis; MCL_LSP_FEEDBACK_DELAY,
mcl.lsp.worker): each check and each feedback job sleeps DELAY_S first. After the check
the feedback comes DELAY_S later at the least; beside it, about at the same time."""

from __future__ import annotations

import asyncio
import time

import pytest
from pytest_lsp import LanguageClient

from mcl.lsp.server import BESIDE_ENV, core_free

from .conftest import (
    KERNELS,
    close_document,
    errors,
    has_feedback,
    make_client_fixture,
    open_document,
    replace_text,
    wait_for,
)

DELAY_S = 1.0
IN_THE_SERVER = pytest.mark.asyncio(loop_scope="module")
# (beside the check whatever the load: the test's machine may have no core free)
client = make_client_fixture({"debounceMs": 0},
                             env={"MCL_LSP_FEEDBACK_DELAY": str(DELAY_S),
                                  "MCL_LSP_CHECK_DELAY": str(DELAY_S),
                                  BESIDE_ENV: "1"})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


async def _feedback_after(client: LanguageClient, uri: str, text: str) -> float:
    """Seconds from replacing the document's text to the publication of its feedback."""
    client.diagnostics.pop(uri, None)
    started = time.monotonic()
    replace_text(client, uri, text)
    await wait_for(client, uri, has_feedback)
    return time.monotonic() - started


@IN_THE_SERVER
async def test_feedback_of_an_edit_of_a_clean_text_runs_beside_the_check(
        client: LanguageClient) -> None:
    text = MATMUL.read_text()
    edited = text.replace("float sum = 0.0;", "float sum = 1.0;")
    assert edited != text
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, has_feedback)
    # check and job at once: about DELAY_S; one after the other, 2 * DELAY_S at the least
    assert await _feedback_after(client, uri, edited) < 1.7 * DELAY_S
    await close_document(client, uri)


@IN_THE_SERVER
async def test_a_check_with_errors_drops_the_feedback_started_beside_it(
        client: LanguageClient) -> None:
    text = MATMUL.read_text()
    broken = text.replace("sum += ", "summ += ", 1)  # a name that is not declared
    assert broken != text
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, has_feedback)
    client.diagnostics.pop(uri, None)
    replace_text(client, uri, broken)  # the last check was clean: its job starts at once
    found = await wait_for(client, uri, lambda ds: bool(errors(ds)))
    await asyncio.sleep(2 * DELAY_S)  # the job would have finished by now
    assert client.diagnostics[uri] == found and not has_feedback(found)
    # After a check with errors the next job waits for its check: the two delays in turn.
    assert await _feedback_after(client, uri, text) >= 1.9 * DELAY_S
    await close_document(client, uri)


def test_the_feedback_goes_beside_the_check_only_where_a_core_is_free(monkeypatch) -> None:
    monkeypatch.delenv(BESIDE_ENV, raising=False)
    assert core_free(0.4, 2) and core_free(1.0, 2) and core_free(2.9, 4)
    assert not core_free(1.2, 2) and not core_free(6.0, 2) and not core_free(0.5, 1)
    monkeypatch.setenv(BESIDE_ENV, "1")
    assert core_free(6.0, 2)
