"""The base protocol's framing as clients write it (mcl.lsp.framing): header names in any
case, no blank after the colon, LF line ends; an over-long header line and an absurd
Content-Length cost one log line each and the session goes on; a request before
`initialize` is answered with ServerNotInitialized (-32002)."""

from __future__ import annotations

import json
import time

from .test_protocol_hygiene import _initialize, _notify, _request, _server


def _responses(out: bytes) -> dict[int, dict]:
    """The responses in the server's output, by id."""
    found = {}
    for part in out.split(b"Content-Length: ")[1:]:
        headers, _, rest = part.partition(b"\r\n\r\n")
        message = json.loads(rest[:int(headers.split(b"\r\n")[0])])
        if "id" in message and "method" not in message:
            found[message["id"]] = message
    return found


def _run(frames: list[bytes], initialize: bool = True) -> tuple[dict[int, dict], str, int]:
    proc = _server({"MCL_DEBUG": ""})
    assert proc.stdin is not None and proc.stdout is not None
    if initialize:
        _initialize(proc)
    for frame in frames:
        proc.stdin.write(frame)
    proc.stdin.flush()
    time.sleep(1.0)
    proc.stdin.write(_request(99, "shutdown"))
    proc.stdin.write(_notify("exit"))
    proc.stdin.flush()
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return _responses(out), err.decode(errors="replace"), proc.returncode


def _symbols_request(id_: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "textDocument/documentSymbol",
                       "params": {"textDocument": {"uri": "file:///none.mcpl"}}}).encode()


def test_header_spellings_clients_use_are_read() -> None:
    body = _symbols_request(7)
    frames = [
        b"content-length: %d\r\n\r\n" % len(body) + body,
        b"Content-Length:%d\r\n\r\n" % len(body) + body.replace(b"7", b"8"),
        b"Content-Length: %d\n\n" % len(body) + body.replace(b"7", b"9"),
        b"Content-Length: %d\r\n"
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(body)
        + body.replace(b"7", b"6"),
    ]
    responses, err, status = _run(frames)
    assert {6, 7, 8, 9} <= set(responses), (responses, err)
    assert status == 0


def test_an_absurd_length_and_a_huge_header_line_do_not_end_the_session() -> None:
    frames = [
        b"Content-Length: 99999999999999\r\n\r\n" + b'{"jsonrpc": "2.0"}',
        b"X-Junk: " + b"x" * 3_000_000 + b"\r\n",
        b"Content-Length: %d\r\n\r\n" % len(_symbols_request(5)) + _symbols_request(5),
    ]
    responses, err, status = _run(frames)
    assert 5 in responses, err
    assert "99999999999999 bytes announced" in err
    assert "header line of" in err
    assert "Traceback" not in err and "MemoryError" not in err
    assert status == 0


def test_a_request_before_initialize_is_answered_with_server_not_initialized() -> None:
    responses, err, _ = _run([_request(3, "textDocument/hover", {
        "textDocument": {"uri": "file:///x.mcpl"}, "position": {"line": 0, "character": 0}})],
        initialize=False)
    assert responses[3]["error"]["code"] == -32002, responses
