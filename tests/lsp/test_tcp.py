"""`mcl lsp --tcp PORT`: the same server on a TCP socket; and `mcl lsp` without pygls
says what to install instead of failing with a traceback."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

from .conftest import SERVER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(stream: socket.socket) -> dict:
    data = b""
    while b"\r\n\r\n" not in data:
        data += stream.recv(1)
    length = int(data.split(b"Content-Length:")[1].split(b"\r\n")[0])
    body = b""
    while len(body) < length:
        body += stream.recv(length - len(body))
    return json.loads(body)


def test_the_server_answers_initialize_over_tcp() -> None:
    port = _free_port()
    server = subprocess.Popen([*SERVER, "--tcp", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "mcl lsp --tcp did not listen"
                assert server.poll() is None, server.stderr.read() if server.stderr else ""
                time.sleep(0.2)
        with connection:
            connection.settimeout(60)
            connection.sendall(_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                         "params": {"processId": None, "rootUri": None,
                                                    "capabilities": {}}}))
            answer = _read(connection)
            capabilities = answer["result"]["capabilities"]
            assert answer["result"]["serverInfo"]["name"] == "mcl"
            assert capabilities["hoverProvider"] and capabilities["definitionProvider"]
            assert capabilities["documentSymbolProvider"] and capabilities["codeActionProvider"]
            connection.sendall(_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            assert _read(connection)["id"] == 2
            connection.sendall(_message({"jsonrpc": "2.0", "method": "exit"}))
    finally:
        server.kill()
        server.wait(10)


def test_without_pygls_the_command_says_what_to_install() -> None:
    # A module finder that refuses pygls, as in an environment without the extra.
    code = ("import sys\n"
            "class Refuse:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('pygls', 'lsprotocol'):\n"
            "            raise ModuleNotFoundError(name=name)\n"
            "sys.meta_path.insert(0, Refuse())\n"
            "from mcl.cli import main\n"
            "sys.exit(main(['lsp']))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1
    assert "pip install 'mcl[lsp]'" in result.stderr
    assert "Traceback" not in result.stderr
