"""`mcl lsp [--tcp PORT]`: the language server for editors (docs/editor.md).

It speaks LSP over stdin/stdout (or TCP) and serves `.mcpl`/`.mcl` and `.hdl` files:
diagnostics, performance feedback, hover, definitions, symbols, completion and code
actions (mcl.lsp). pygls is an optional extra: `pip install mcl[lsp]`.
"""

from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "lsp",
        help="the language server for editors (LSP over stdio or TCP)",
        description="Run the MCL language server: diagnostics, performance feedback, hover, "
        "go to definition, symbols, completion and code actions for MCPL and HDL files in "
        "any editor that speaks the Language Server Protocol (docs/editor.md).",
    )
    p.add_argument("--stdio", action="store_true",
                   help="talk over stdin/stdout (the default; accepted for clients that pass it)")
    p.add_argument("--tcp", type=int, metavar="PORT", help="listen on TCP port PORT instead")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on with --tcp")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        from mcl.lsp.server import start
    except ImportError as exc:
        if exc.name not in ("pygls", "lsprotocol") and not str(exc.name).startswith(
                ("pygls.", "lsprotocol.")):
            raise
        print("mcl lsp: error: the language server needs pygls and lsprotocol; install them "
              "with `pip install 'mcl[lsp]'`", file=sys.stderr)
        return 1
    start(args.tcp, args.host)
    return 0
