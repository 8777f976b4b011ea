"""Positions between the client's units and mcl's characters.

mcl counts columns in characters (code points, as Python indexes a `str`); an LSP client
counts them in the units of the negotiated `positionEncoding`: UTF-16 by default, UTF-8
(Neovim 0.10+, Helix offer it first) or UTF-32. The server picks UTF-32 whenever the client
offers it -- then nothing needs converting -- and otherwise converts at its boundary, here
and only here, with pygls' position codec: every position of a request on the way in
(`incoming`), every range of an answer or a notification on the way out (`outgoing`), with
the lines of the file the range is in (another module, a description).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import attrs
from lsprotocol import types as lsp
from pygls.workspace.position_codec import PositionCodec

T = TypeVar("T")
Lines = Callable[[str], Sequence[str]]


def prefer_utf32(capabilities: lsp.ClientCapabilities) -> None:
    """Move UTF-32 to the front of the encodings the client offers (pygls takes the
    client's first supported one): with it the server's columns are the client's."""
    general = capabilities.general
    if general is None or not general.position_encodings:
        return
    offered = list(general.position_encodings)
    if lsp.PositionEncodingKind.Utf32 in offered:
        offered.remove(lsp.PositionEncodingKind.Utf32)
        general.position_encodings = [lsp.PositionEncodingKind.Utf32, *offered]


def incoming(codec: PositionCodec, value: T, uri: str, lines_of: Lines) -> T:
    """A copy of `value` (a request's position, the diagnostics a code action is asked
    about) in mcl's characters."""
    def convert(lines: Sequence[str], position: lsp.Position) -> lsp.Position:
        server = codec.position_from_client_units(
            lines, lsp.Position(position.line, position.character))
        return lsp.Position(server.line, server.character)

    return _walk(codec, value, uri, lines_of, convert)


def outgoing(codec: PositionCodec, value: T, uri: str, lines_of: Lines) -> T:
    """A copy of `value` (an answer, a notification's params) with every position in
    client units."""
    return _walk(codec, value, uri, lines_of, codec.position_to_client_units)


def _walk(codec: PositionCodec, value: T, uri: str, lines_of: Lines,
          convert: Callable[[Sequence[str], lsp.Position], lsp.Position]) -> T:
    """A copy of `value` with `convert` applied to each position (see `map_positions`)."""
    if codec.encoding == lsp.PositionEncodingKind.Utf32:
        return value
    cache: dict[str, Sequence[str]] = {}

    def lines(of: str) -> Sequence[str]:
        if of not in cache:
            cache[of] = lines_of(of)
        return cache[of]

    def position(of: str, at: lsp.Position) -> lsp.Position:
        text = lines(of)
        return convert(text, at) if at.line < len(text) else at

    return map_positions(value, uri, position)


class Unmapped(Exception):
    """Raised by a `map_positions` conversion for a position that has no counterpart: the
    item of the nearest enclosing list is left out (mcl.lsp.shift)."""


def map_positions(value: T, uri: str, position: Callable[[str, lsp.Position], lsp.Position]
                  ) -> T:
    """A copy of `value` with `position(uri of it, position)` applied to each position. A
    position belongs to the nearest enclosing object that names a `uri` (a Location, the
    diagnostics of a document), else to `uri`. An item of a list whose conversion raises
    `Unmapped` is left out of the copy; outside any list `Unmapped` propagates."""
    def walk(value: Any, uri: str) -> Any:
        match value:
            case lsp.Position():
                return position(uri, value)
            case list() | tuple():
                kept = []
                for item in value:
                    try:
                        kept.append(walk(item, uri))
                    except Unmapped:
                        continue
                return type(value)(kept)
            case dict():
                # WorkspaceEdit.changes: {uri: [TextEdit]}
                return {k: walk(v, k if isinstance(k, str) and "://" in k else uri)
                        for k, v in value.items()}
        if attrs.has(type(value)):
            here = uri
            for name in ("uri", "target_uri"):
                own = getattr(value, name, None)
                if isinstance(own, str):
                    here = own
            if isinstance(value, lsp.TextDocumentEdit):
                here = value.text_document.uri
            return attrs.evolve(value, **{
                f.alias or f.name: walk(getattr(value, f.name), here)
                for f in attrs.fields(type(value))})
        return value

    return walk(value, uri)
