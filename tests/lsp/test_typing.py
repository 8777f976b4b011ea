"""Typing faster than the check: diagnostics keep coming while the keys do.

A check slower than the gap between two keys is stood for by the check's test delay
(MCL_LSP_CHECK_DELAY, mcl.lsp.analysis), as a busy machine makes it: each check sleeps
that long first. The running check is never thrown away by a newer keystroke: it
publishes, and one check of the newest text follows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    make_client_fixture,
    opened,
    position_of,
    replace_text,
)

CHECK_DELAY_S = 0.25  # 2.5 times the gap between keys at 10 keys per second
KEY_GAP_S = 0.1
pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False, "debounceMs": 0},
                             env={"MCL_LSP_CHECK_DELAY": str(CHECK_DELAY_S)})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


class Arrivals(dict[str, Sequence[lsp.Diagnostic]]):
    """The client's diagnostics by uri, with the time each publication arrived."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.times: dict[str, list[float]] = {}

    def __setitem__(self, uri: str, value: Sequence[lsp.Diagnostic]) -> None:
        self.times.setdefault(uri, []).append(time.monotonic())
        super().__setitem__(uri, value)


async def test_typing_faster_than_the_check_publishes_every_check(client: LanguageClient
                                                                  ) -> None:
    text = MATMUL.read_text()
    uri, _ = await opened(client, MATMUL, text)
    arrivals = Arrivals(client.diagnostics)
    client.diagnostics = arrivals
    # a new statement typed inside the kernel body, one key at a time
    at = text.index("float sum = 0.0;") + len("float sum = 0.0;")
    typed = " float scale = sum * 2.0 + sum * 0.5;"  # 37 keys: 3.7 s
    start = time.monotonic()
    for n in range(1, len(typed) + 1):
        replace_text(client, uri, text[:at] + typed[:n] + text[at:])
        await asyncio.sleep(KEY_GAP_S)
    end = time.monotonic()
    during = [t for t in arrivals.times.get(uri, []) if start <= t <= end]
    # Every check publishes: one per CHECK_DELAY_S and the check's own time (several
    # times that on a busy machine), never none until the typist pauses.
    gaps = [b - a for a, b in zip([start, *during], [*during, end], strict=True)]
    assert len(during) >= 3 and max(gaps) <= 6 * CHECK_DELAY_S, gaps
    await close_document(client, uri)


async def test_the_last_publication_is_of_the_last_text(client: LanguageClient) -> None:
    text = MATMUL.read_text()
    uri, _ = await opened(client, MATMUL, text)
    at = text.index("float sum = 0.0;")
    for typed in ("x", "x ", "x =", "x = ;"):  # ends broken: an error must be shown
        replace_text(client, uri, text[:at] + typed + text[at:])
        await asyncio.sleep(KEY_GAP_S / 2)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ds = client.diagnostics.get(uri, [])
        if any(d.severity == lsp.DiagnosticSeverity.Error for d in ds):
            break
        await asyncio.sleep(0.05)
    (error,) = [d for d in client.diagnostics[uri] if d.severity == lsp.DiagnosticSeverity.Error]
    assert error.range.start.line == position_of(text, "float sum = 0.0;").line
    await close_document(client, uri)
