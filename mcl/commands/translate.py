"""`mcl translate FILE --to LEVEL [-o OUT] [-I DIR] [--hwd-path DIR]`: move a kernel down
the hierarchy of hardware descriptions (the paper's section 6.1) and print the result as
MCPL for the target level."""

from __future__ import annotations

import argparse
import sys

from mcl import pipeline
from mcl.commands.options import add_hwd_path_argument, add_include_argument, library_from_args
from mcl.diagnostics import Diagnostic, MclError, Severity, error
from mcl.mcpl.printer import print_module
from mcl.output_files import check_output_file, say_written, write_text
from mcl.render import render_diagnostics
from mcl.translate.levels import require_level


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "translate",
        help="translate a kernel to a lower level of abstraction",
        description=(
            "Translate every function of FILE whose level lies on the path from perfect to "
            "LEVEL down to LEVEL, one step of the hierarchy at a time (the paper's "
            "Appendix A), and print the result as MCPL."
        ),
    )
    p.add_argument("file", metavar="FILE", help="MCPL source file (.mcpl or .mcl)")
    p.add_argument("--to", required=True, metavar="LEVEL", help="target hardware description")
    p.add_argument("-o", "--output", metavar="OUT", help="write the result here (default stdout)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text: the MCPL (default); json: one document on stdout with the "
                   "MCPL and the notes (schema mcl/schemas/translate.schema.json)")
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.output:
        check_output_file(args.output, "-o")
    library = library_from_args(args)
    require_level(library, args.to)
    checked = pipeline.check_file(args.file, args.include_dirs, library)
    if not checked.main.functions:
        # Printing the input back unchanged (or nothing, for an empty file) and exiting 0
        # would hide a wrong file name or an empty file.
        raise MclError(
            error(
                "translate-no-function",
                f"{args.file} defines no function, so there is nothing to translate",
                None,
                hint="translation works on functions written for a level, e.g. "
                "`perfect void f(...) { ... }`",
            )
        )
    # Translation assumes a valid kernel: report its problems at their own lines first.
    checked.valid()
    result = pipeline.translate(checked, args.to, library)
    invalid = result.errors
    if invalid:
        raise MclError(
            Diagnostic(
                Severity.ERROR,
                "translate-invalid-result",
                f"the translation to {args.to} does not pass the checker; this is a bug in "
                "mcl's translation",
                notes=tuple(str(d) for d in invalid),
            )
        )
    text = print_module(result.main)
    if args.format == "json":
        import json

        from mcl.render import diagnostic_to_json
        from mcl.schemas import SCHEMA_VERSION

        print(json.dumps({"schema_version": SCHEMA_VERSION, "file": args.file,
                          "level": args.to, "mcpl": text,
                          "notes": [diagnostic_to_json(d) for d in result.notes]}, indent=2))
    elif result.notes:
        render_diagnostics(list(result.notes))
    if args.output:
        write_text(args.output, text)
        say_written(args.output, stdout_is_data=args.format == "json")
    elif args.format == "text":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
