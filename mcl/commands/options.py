"""Options several sub-commands share, declared once so they read and behave the same:
`-I`, `--hwd-path`/`--no-bundled`, `-D`, `--device` and `--repeat`. Only this package
(and mcl/cli.py) sees argparse: the stages below get typed values."""

from __future__ import annotations

import argparse
from typing import Any

from mcl.hdl.library import ENV_VAR, HwdLibrary, library_with
from mcl.settings import Settings

# A parser or an argument group of one.
Parser = Any


def add_include_argument(parser: Parser) -> None:
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


def add_hwd_path_argument(parser: Parser) -> None:
    """The `--hwd-path DIR` option (repeatable) every command that reads descriptions has,
    and `--no-bundled`."""
    parser.add_argument(
        "--hwd-path", metavar="DIR", action="append", default=[],
        help=f"also read hardware descriptions from DIR (repeatable; also ${ENV_VAR}); a "
        "folder with its own perfect.hdl replaces the bundled descriptions",
    )
    parser.add_argument(
        "--no-bundled", action="store_true",
        help="do not read the bundled descriptions (only --hwd-path and $" + ENV_VAR + ")",
    )


def library_from_args(args: argparse.Namespace) -> HwdLibrary:
    """The library of a command from its `--hwd-path` and `--no-bundled`."""
    return library_with(getattr(args, "hwd_path", None) or [],
                        bundled=not getattr(args, "no_bundled", False))


def add_define_argument(parser: Parser, help: str) -> None:
    """`-D NAME=VALUE` (repeatable) into `args.defines`; read by mcl.defines (one parser for
    feedback values and reference sizes alike)."""
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME=VALUE", help=help + " (repeatable)")


def add_device_argument(parser: Parser, when: str = "") -> None:
    """`--device SPEC`: the OpenCL device (mcl.codegen.select_device; `mcl devices` lists
    them). `when` prefixes the help, e.g. "with --run: "."""
    parser.add_argument(
        "--device", metavar="SPEC",
        help=f"{when}OpenCL device: P:D, N, a name such as nvidia, or auto (the leaf's "
        "preferred device type); default: the PoCL CPU device (see mcl devices)",
    )


def add_backend_argument(parser: Parser, when: str = "") -> None:
    """`--backend NAME`: which backend generates and runs the kernels, one of the registry's
    (mcl.backends; docs/codegen.md, "Backends")."""
    from mcl.backends import DEFAULT_BACKEND, backend_names, get_backend

    names = backend_names()
    parser.add_argument(
        "--backend", choices=names, default=DEFAULT_BACKEND,
        help=when + " or ".join(get_backend(name).help for name in names),
    )


def add_repeat_argument(parser: Parser, default: int, when: str = "") -> None:
    """`--repeat N`: run N times and report the median kernel time."""
    parser.add_argument(
        "--repeat", type=int, default=default, metavar="N",
        help=f"{when}run N times and report the median kernel time (default {default})",
    )


# Commands whose -D values are feedback values (a run's -D are sizes the kernel must have).
_VALUES_COMMANDS = ("check", "report")


def apply_settings(args: argparse.Namespace, settings: Settings) -> None:
    """Merge `settings` into parsed arguments; what the command line says wins."""
    if hasattr(args, "hwd_path"):
        args.hwd_path = [*settings.hwd_path, *args.hwd_path]
    if hasattr(args, "include_dirs"):
        args.include_dirs = [*args.include_dirs, *settings.include]
    if getattr(args, "command", None) == "check" and getattr(args, "level", None) is None:
        args.level = settings.level
    if getattr(args, "command", None) in _VALUES_COMMANDS and hasattr(args, "defines"):
        args.defines = [f"{k}={v}" for k, v in settings.values.items()] + list(args.defines)


def add_format_argument(parser: Parser, schema: str) -> None:
    """`--format text|json`: the text report, or one JSON document on stdout that follows
    mcl/schemas/SCHEMA.schema.json."""
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or one JSON document on stdout (schema "
                        f"mcl/schemas/{schema}.schema.json)")


def add_quiet_argument(parser: Parser) -> None:
    """`--quiet`: no progress on stderr (mcl.progress: a bar on a terminal, plain lines
    elsewhere); errors and the command's output stay."""
    parser.add_argument("--quiet", action="store_true",
                        help="show no progress on stderr (errors and results stay)")
