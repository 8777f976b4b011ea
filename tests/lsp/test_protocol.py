"""Protocol hygiene of `mcl lsp`, with a raw JSON-RPC client (pytest-lsp's client cannot
send malformed messages): every request is answered, unknown documents and invalid UTF-8
do not lose the server's copy of a document, and the log has one line per bad message."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .conftest import ROOT, SERVER, TIMEOUT_S

GOOD = "perfect void f(int n, float[n] a) {\n  foreach (int i in n threads) { a[i] = 0.0; }\n}\n"


class RawClient:
    def __init__(self) -> None:
        self.process = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, cwd=ROOT)
        self.buffer = b""
        self.received: list[dict[str, Any]] = []

    def send_bytes(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, method: str, params: Any = None, id: int | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if id is not None:
            message["id"] = id
        self.send_bytes(json.dumps(message).encode())

    def _read(self) -> None:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 0.05)
        if ready:
            self.buffer += os.read(self.process.stdout.fileno(), 1 << 16)
        while b"\r\n\r\n" in self.buffer:
            header, rest = self.buffer.split(b"\r\n\r\n", 1)
            length = int(header.split(b"\r\n")[0].split(b":")[1])
            if len(rest) < length:
                return
            self.received.append(json.loads(rest[:length]))
            self.buffer = rest[length:]

    def wait_for(self, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        end = time.monotonic() + TIMEOUT_S
        while time.monotonic() < end:
            for message in self.received:
                if ready(message):
                    return message
            self._read()
        raise AssertionError(f"no such message in {TIMEOUT_S} s: {self.received[-5:]}")

    def diagnostics(self, uri: str, ready: Callable[[list[dict[str, Any]]], bool]
                    ) -> list[dict[str, Any]]:
        def is_it(m: dict[str, Any]) -> bool:
            return (m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == uri and ready(m["params"]["diagnostics"]))
        found = self.wait_for(is_it)
        self.received.remove(found)
        return list(found["params"]["diagnostics"])

    def open(self, uri: str, text: str) -> None:
        self.send("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "mcpl", "version": 1, "text": text}})


@pytest.fixture(scope="module")
def server() -> Iterator[RawClient]:
    client = RawClient()
    client.send("initialize", {"capabilities": {}, "rootUri": ROOT.as_uri(),
                               "initializationOptions": {"mcl": {"feedback": False,
                                                                 "debounceMs": 0}}}, id=1)
    client.wait_for(lambda m: m.get("id") == 1)
    client.send("initialized", {})
    yield client
    client.process.kill()
    client.process.wait()


def _uri(tmp_path: Any, name: str) -> str:
    return (tmp_path / name).as_uri()


def test_a_request_with_invalid_params_gets_an_error(server: RawClient, tmp_path) -> None:
    uri = _uri(tmp_path, "a.mcpl")
    server.open(uri, GOOD)
    server.send("textDocument/hover", {"textDocument": {"uri": uri},
                                       "position": {"line": 0, "character": "x"}}, id=10)
    server.send("textDocument/hover", {"textDocument": {"uri": uri}}, id=11)
    for id in (10, 11):
        answer = server.wait_for(lambda m, id=id: m.get("id") == id)  # type: ignore[misc]
        assert answer["error"]["code"] == -32602  # JSON-RPC invalid params


def test_a_change_after_close_is_ignored_without_an_error(server: RawClient,
                                                          tmp_path) -> None:
    uri = _uri(tmp_path, "b.mcpl")
    server.open(uri, GOOD)
    assert server.diagnostics(uri, lambda ds: True) == []
    server.send("textDocument/didClose", {"textDocument": {"uri": uri}})
    server.send("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 0, "character": 0},
                                      "end": {"line": 0, "character": 0}}, "text": "x"}]})
    server.send("textDocument/didClose", {"textDocument": {"uri": uri}})
    server.send("textDocument/hover", {"textDocument": {"uri": uri},
                                       "position": {"line": 0, "character": 0}}, id=20)
    assert server.wait_for(lambda m: m.get("id") == 20).get("error") is None
    popups = [m for m in server.received if m.get("method") == "window/showMessage"
              and m["params"]["type"] == 1]
    assert popups == []


def test_invalid_utf8_is_reported_and_the_document_stays_in_step(server: RawClient,
                                                                 tmp_path) -> None:
    uri = _uri(tmp_path, "c.mcpl")
    text = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "mcpl", "version": 1,
                         "text": "// BAD\n" + GOOD}}}).encode()
    server.send_bytes(text.replace(b"BAD", b"\xff\xfe"))
    warning = server.wait_for(lambda m: m.get("method") == "window/showMessage")
    assert "UTF-8" in warning["params"]["message"]
    assert server.diagnostics(uri, lambda ds: True) == []  # the document was opened
    # an incremental edit after it lands where the editor made it: `a[i]` -> `b[i]`
    line = ("  foreach (int i in n threads) { a[i] = 0.0; }").index("a[i]")
    server.send("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": 2, "character": line},
                                      "end": {"line": 2, "character": line + 1}},
                            "text": "b"}]})
    (error,) = server.diagnostics(uri, lambda ds: bool(ds))
    assert error["code"] == "mcpl-unknown-name"
    assert error["range"]["start"] == {"line": 2, "character": line}


def test_shutdown_and_exit_end_the_process_with_one_line_per_bad_message(
        server: RawClient) -> None:
    server.send("shutdown", None, id=99)
    server.wait_for(lambda m: m.get("id") == 99)
    server.send("exit")
    assert server.process.wait(timeout=TIMEOUT_S) == 0
    assert server.process.stderr is not None
    log = server.process.stderr.read().decode()
    assert "Traceback" not in log
    assert log.count("invalid params") == 2  # the two bad hovers, one line each


def test_exit_without_shutdown_ends_the_process_with_1() -> None:
    client = RawClient()
    try:
        client.send("initialize", {"capabilities": {}}, id=1)
        client.wait_for(lambda m: m.get("id") == 1)
        client.send("exit")
        assert client.process.wait(timeout=TIMEOUT_S) == 1  # the protocol's rule
    finally:
        client.process.kill()
        client.process.wait()
