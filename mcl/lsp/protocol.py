"""JSON-RPC hygiene on top of pygls: what a client sends wrong is answered, never lost.

- A request whose params do not fit its method (a position with a string column) is
  answered with a JSON-RPC *invalid params* error; pygls would only log it, leaving the
  client waiting forever.
- A change or a close of a document the server does not hold (after didClose, or never
  opened) is ignored with one log line (pygls raised a KeyError, shown as a popup).
- A message that is not valid UTF-8 is decoded with U+FFFD for its bad bytes and handled
  all the same (an edit lost there would leave the server's copy of the document out of
  step with the editor's for good), and the client is told once per message.
- pygls logs each bad message with its traceback; the server logs one line instead.
- `exit` ends the process at once (below).
- Before `initialize`, a request is answered with ServerNotInitialized (-32002) and a
  notification other than `exit` dropped, as the base protocol says.
- The framing itself (header names in any case, LF line ends, bounded header lines and
  bodies) is read by mcl.lsp.framing.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Generator
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcServerNotInitialized
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from mcl.lsp import encoding

log = logging.getLogger("mcl.lsp")


class _Answered:
    """Stands for a request already answered with an error (nothing left to handle)."""

    jsonrpc = None


ANSWERED = _Answered()


class MclProtocol(LanguageServerProtocol):
    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams) -> Generator[Any, Any, Any]:
        encoding.prefer_utf32(params.capabilities)  # before pygls picks the encoding
        return (yield from super().lsp_initialize(params))

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            method = data.get("method", "?")
            if "id" in data and "method" in data:
                log.warning("invalid params for %s (request %s): answered with an error",
                            method, data["id"])
                self._send_response(data["id"], None, exc.to_response_error())
                return ANSWERED
            log.warning("invalid params for %s: notification ignored", method)
            return ANSWERED

    _initialize_seen = False

    def handle_message(self, message: Any) -> None:
        if message is ANSWERED:
            return
        method = getattr(message, "method", None)
        if not self._initialize_seen and method is not None:
            # The base protocol: before `initialize` a request is answered with
            # ServerNotInitialized (-32002), a notification dropped (but `exit`).
            if method == lsp.INITIALIZE:
                self._initialize_seen = True
            elif getattr(message, "id", None) is not None:
                log.warning("%s before initialize: answered with ServerNotInitialized", method)
                self._send_response(message.id, None, JsonRpcServerNotInitialized(
                    message="the server is not initialized: send initialize first"
                ).to_response_error())
                return
            elif method != lsp.EXIT:
                log.warning("%s before initialize: ignored", method)
                return
        super().handle_message(message)

    def recover_bad_utf8(self, error: UnicodeDecodeError) -> bool:
        """Handle the message `error` could not decode, its bad bytes as U+FFFD; False
        when that is not a JSON-RPC message either."""
        body = error.object
        if not isinstance(body, bytes):
            return False
        try:
            message = json.loads(body.decode("utf-8", "replace"),
                                 object_hook=self.structure_message)
        except (ValueError, JsonRpcException):
            return False
        log.warning("a message from the client is not valid UTF-8 (byte 0x%02x at offset "
                    "%d); its bad bytes read as U+FFFD", body[error.start], error.start)
        self._server.window_show_message(lsp.ShowMessageParams(
            lsp.MessageType.Warning,
            f"mcl: the editor sent text that is not valid UTF-8 (byte 0x{body[error.start]:02x}); "
            "the bad bytes were read as U+FFFD"))
        self.handle_message(message)
        return True

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """End the process now, with 0 after `shutdown` and 1 without (the protocol's
        rule). Python's own teardown of the server's heap (descriptions, metamodel,
        checked programs) took most of a second, and nothing is left to save: every
        reply was flushed when sent, and the feedback worker is stopped first."""
        stop = getattr(self._server, "stop_worker", None)
        if stop is not None:
            stop()
        logging.shutdown()
        os._exit(0 if self._shutdown else 1)
        yield  # not reached; a generator, as pygls runs its handlers

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams
                                      ) -> Generator[Any, Any, None]:
        uri = params.text_document.uri
        if unquote(uri) not in self.workspace.text_documents:
            log.warning("change of %s, which is not open: ignored", uri)
            return
        yield from super().lsp_text_document__did_change(params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams
                                     ) -> Generator[Any, Any, None]:
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("close of %s, which is not open: ignored", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_close(params)


# pygls' records of a message it could not read; the protocol above logs its own line
_SAID_ABOVE = ("Unable to deserialize message", "Unable to handle message")


class OneLine(logging.Filter):
    """pygls' records as one line, without the traceback (a client that sends garbage
    must not fill the editor's log); mcl's own records keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("pygls"):
            if isinstance(record.msg, str) and record.msg.startswith(_SAID_ABOVE):
                return False
            text = record.getMessage().strip().splitlines()
            record.msg, record.args = (text[0] if text else ""), ()
            record.exc_info = record.exc_text = None
        return True
