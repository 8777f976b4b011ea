"""Options several sub-commands share, defined once so they read and behave the same."""

from __future__ import annotations

import argparse

from mcl.hdl.library import add_hwd_path_argument, library_from_args

__all__ = ["add_hwd_path_argument", "add_include_argument", "library_from_args"]


def add_include_argument(parser: argparse.ArgumentParser) -> None:
    """`-I DIR` (repeatable): an extra MCPL source root for imports (mcl.mcpl.loader, which
    also reads $MCL_PATH and the bundled standard library)."""
    parser.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="extra MCPL source root for imports (repeatable; also $MCL_PATH)",
    )
