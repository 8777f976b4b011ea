"""The server answers while feedback runs, and a newer edit cancels the running feedback.

The analyses of the shipped kernels take well under a second, so a slow one is stood for
by the worker's test delay (MCL_LSP_FEEDBACK_DELAY, mcl.lsp.worker): every job sleeps that
long before it analyses, in the worker process, as a long SymPy sum would."""

from __future__ import annotations

import asyncio
import time

import pytest
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    has_feedback,
    hover_text,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

DELAY_S = 6.0
pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"level": "gpu", "debounceMs": 0},
                             env={"MCL_LSP_FEEDBACK_DELAY": str(DELAY_S)})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


@pytest.mark.slow  # waits out a feedback job held back by DELAY_S: about 7 s
async def test_a_request_during_a_slow_feedback_is_answered_at_once(client: LanguageClient
                                                                    ) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, lambda ds: True)  # the check's diagnostics: none
    started = time.monotonic()
    value = await hover_text(client, uri, position_of(text, "sum +="))
    answered = time.monotonic() - started
    assert "**sum**" in value
    assert not has_feedback(client.diagnostics[uri])  # the feedback is still running
    assert answered < DELAY_S / 3
    await wait_for(client, uri, has_feedback)  # and arrives afterwards
    await close_document(client, uri)


@pytest.mark.slow  # two feedback jobs held back by DELAY_S: about 7 s
async def test_a_newer_edit_cancels_the_running_feedback(client: LanguageClient) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL)
    await wait_for(client, uri, lambda ds: True)
    await asyncio.sleep(1.0)  # the first job is under way
    edited = text.replace("float sum = 0.0;", "float sum = 0.0; // edited")
    client.log_messages.clear()
    edit_time = time.monotonic()
    replace_text(client, uri, edited)
    await wait_for(client, uri, has_feedback)
    waited = time.monotonic() - edit_time
    assert any("feedback cancelled" in m.message for m in client.log_messages)
    # Without the cancellation the old job would finish first (DELAY_S - 1 more seconds)
    # and the new one start only then: 2 * DELAY_S - 1 in all.
    assert waited < 2 * DELAY_S - 2.5, waited
    await close_document(client, uri)
