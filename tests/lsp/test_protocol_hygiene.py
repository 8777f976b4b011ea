"""The language server over raw stdio: a malformed message costs one log line (no
traceback unless MCL_DEBUG=1), and `shutdown` + `exit` end the process within a second
of `exit`, even with a large document open and its analysis still running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _frame(payload: object | bytes) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _request(id_: int, method: str, params: object = None) -> bytes:
    return _frame({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})


def _notify(method: str, params: object = None) -> bytes:
    return _frame({"jsonrpc": "2.0", "method": method, "params": params})


def _server(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "mcl", "lsp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})}, cwd=REPO)


def _initialize(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(_request(1, "initialize", {"processId": None, "rootUri": None,
                                                "capabilities": {}}))
    proc.stdin.write(_notify("initialized", {}))
    proc.stdin.flush()


def _finish(proc: subprocess.Popen[bytes]) -> tuple[float, bytes]:
    """shutdown, exit; the seconds from `exit` to the end of the process, and stderr."""
    assert proc.stdin is not None
    proc.stdin.write(_request(99, "shutdown"))
    proc.stdin.flush()
    time.sleep(0.5)
    proc.stdin.write(_notify("exit"))
    proc.stdin.flush()
    start = time.monotonic()
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return time.monotonic() - start, err


def test_malformed_messages_are_one_line_each() -> None:
    proc = _server({"MCL_DEBUG": ""})
    _initialize(proc)
    assert proc.stdin is not None
    for bad in (b"{not json", b'{"jsonrpc": "2.0", "id": 5, "method": 7}',
                b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": 3}'):
        proc.stdin.write(_frame(bad))
    proc.stdin.flush()
    time.sleep(1.0)
    _, err = _finish(proc)
    text = err.decode(errors="replace")
    assert "Traceback" not in text, text
    assert len(text.splitlines()) <= 6, text


def test_exit_ends_the_server_within_a_second_with_a_large_document_open(
        tmp_path: Path) -> None:
    kernel = (REPO / "kernels/matmul/perfect.mcpl").read_text(encoding="utf-8")
    big = tmp_path / "big.mcpl"
    text = "\n".join(kernel.replace("void matmul(", f"void matmul{i}(") for i in range(400))
    big.write_text(text, encoding="utf-8")
    proc = _server()
    _initialize(proc)
    assert proc.stdin is not None
    proc.stdin.write(_notify("textDocument/didOpen", {"textDocument": {
        "uri": big.as_uri(), "languageId": "mcpl", "version": 1, "text": text}}))
    proc.stdin.flush()
    time.sleep(0.5)  # the analysis of the document has started
    seconds, _ = _finish(proc)
    assert proc.returncode == 0
    assert seconds < 3.0  # a second of grace, and room for a loaded machine
