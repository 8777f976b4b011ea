"""The base protocol's framing, read leniently and within bounds.

pygls reads a message as header lines (`Content-Length: N\\r\\n`, exactly so) up to an
empty line, then N bytes. A client that writes `content-length: N`, `Content-Length:N`
or ends its lines with LF alone desynchronised the stream until `shutdown` and `exit`
were lost; a header line was buffered without bound (hundreds of MB for a 200 MB line)
and `Content-Length: 99999999999999` made pygls ask for that many bytes (out of memory,
the session ended). `FramedReader` sits between the byte stream and pygls's loop and
hands it what it expects:

- header names case-insensitively, blanks around the value allowed, LF or CRLF line
  ends: a `Content-Length` header is handed on as `Content-Length: N\\r\\n`;
- a header line longer than MAX_HEADER_LINE is read to its end in pieces, dropped and
  logged;
- a body longer than MAX_BODY is not read: its header is dropped and logged, and the
  stream is read on to the next `Content-Length` header (the bytes of the oversized body
  are read as header lines and dropped, a header glued to the end of a body found);
- anything else keeps its bytes (the JSON decoding and its errors stay pygls's and
  mcl.lsp.protocol's).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

log = logging.getLogger("mcl.lsp")

MAX_HEADER_LINE = 8 * 1024  # a header line is `Content-Length: N` or a Content-Type
MAX_BODY = 512 * 1024 * 1024  # far above any document an editor sends (bytes)
_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*([0-9]+)[ \t]*$", re.IGNORECASE)
_DROPPED = b"X-Mcl-Dropped: 1\r\n"  # a header line pygls ignores


class FramedReader:
    """What pygls's `run_async` reads from: `readline` and `readexactly`, over
    `read_line(limit)` (a line of at most `limit` bytes, shorter at its end or the end of
    the stream) and `read(n)` (n bytes, fewer only at the end of the stream)."""

    def __init__(self, read_line: Callable[[int], Awaitable[bytes]],
                 read: Callable[[int], Awaitable[bytes]]) -> None:
        self._read_line = read_line
        self._read = read

    async def readline(self) -> bytes:
        line = await self._read_line(MAX_HEADER_LINE + 1)
        if len(line) > MAX_HEADER_LINE and not line.endswith(b"\n"):
            dropped = len(line)
            while line and not line.endswith(b"\n"):
                line = await self._read_line(MAX_HEADER_LINE + 1)
                dropped += len(line)
            log.warning("a header line of %d bytes from the client: dropped", dropped)
            return _DROPPED
        if not line:
            return b""  # the end of the stream
        text = line.rstrip(b"\r\n")
        if not text.strip():
            return b"\r\n"  # the empty line that ends the headers
        match = _LENGTH.search(text)
        if match is None:
            return text + b"\r\n"
        if match.start() > 0:
            # `...}Content-Length: 52`: a header glued to the end of bytes dropped before
            # (an oversized body read as header lines); the message starts here.
            log.warning("%d bytes before a Content-Length header: dropped", match.start())
        length = int(match.group(1))
        if length > MAX_BODY:
            log.warning("a message of %d bytes announced by the client (at most %d): "
                        "dropped, read on to the next message", length, MAX_BODY)
            return _DROPPED
        return b"Content-Length: %d\r\n" % length

    async def readexactly(self, n: int) -> bytes:
        return await self._read(n)


def stdin_reader(stream: BinaryIO, executor: object | None = None) -> FramedReader:
    """A FramedReader of a blocking binary stream (the server's stdin), read in threads."""

    def in_thread(call: Callable[[int], bytes]) -> Callable[[int], Awaitable[bytes]]:
        def run(n: int) -> Awaitable[bytes]:
            # `executor` is the server's thread pool, an Executor, typed `object` in this signature
            return asyncio.get_running_loop().run_in_executor(executor, call, n)  # type: ignore[arg-type]
        return run

    return FramedReader(in_thread(stream.readline), in_thread(stream.read))


def stream_reader(stream: asyncio.StreamReader) -> FramedReader:
    """A FramedReader of an asyncio stream (a TCP connection)."""

    async def read_line(limit: int) -> bytes:
        try:
            return await stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # the end of the stream
        except asyncio.LimitOverrunError:
            return await stream.read(limit)  # a part of a line too long for a header

    async def read(n: int) -> bytes:
        try:
            return await stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial

    return FramedReader(read_line, read)


class FramedTransport:
    """pygls's stdio and TCP servers (pygls.server.JsonRPCServer) with the reader above
    between the stream and the message loop; the rest as pygls does it."""

    def _start_io_async(self, stdin: BinaryIO | None = None,
                        stdout: BinaryIO | None = None) -> None:
        import sys
        import threading

        from pygls.io_ import StdoutWriter, run_async

        server: Any = self
        server._stop_event = threading.Event()
        reader = stdin_reader(stdin or sys.stdin.buffer, server.thread_pool)
        server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(run_async(stop_event=server._stop_event, reader=reader,
                                  protocol=server.protocol, logger=log,
                                  error_handler=server.report_server_error))
        except BrokenPipeError:
            log.error("the connection to the client is lost: shutting down")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            server.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        import threading

        from pygls.io_ import run_async

        server: Any = self
        server._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                             ) -> None:
            server.protocol.set_writer(writer)
            await run_async(stop_event=stop, reader=stream_reader(reader),
                            protocol=server.protocol, logger=log,
                            error_handler=server.report_server_error)
            server.shutdown()

        async def serve() -> None:
            server._server = await asyncio.start_server(connection, host, port)
            async with server._server:
                await server._server.serve_forever()

        try:
            asyncio.run(serve())
        except asyncio.CancelledError:
            pass
