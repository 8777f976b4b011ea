"""`mcl hwd import-codegen DIR`: convert the original MCL's code-generation facts once.

The original keeps, per leaf, a Lisp file `input/codegen/<leaf>.lisp` beside its
`input/hdl/` folder (mcl.codegen.lisp_mapping reads it). `mcl codegen` reads those files
where a leaf has no `.opencl.toml`; this command writes the `.opencl.toml` files instead,
beside each leaf's `.hdl` file (or into `-o DIR`), so they can be read and edited.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mcl.commands.options import add_hwd_path_argument, library_from_args
from mcl.output_width import say


def register(hwd_sub: argparse._SubParsersAction) -> None:
    p = hwd_sub.add_parser(
        "import-codegen", help="convert the original MCL's codegen/*.lisp into .opencl.toml",
        description="Convert the original MCL's code-generation facts (DIR/<leaf>.lisp, "
        "its input/codegen folder) into mcl's OpenCL mappings <leaf>.opencl.toml, written "
        "beside each leaf's .hdl file (found in --hwd-path, by default DIR/../hdl) or into "
        "-o. Exit status 0 when every file converted, 1 otherwise.")
    p.add_argument("folder", metavar="DIR", help="the folder of <leaf>.lisp files")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="write the .opencl.toml files here instead of beside the .hdl files")
    p.add_argument("--force", action="store_true",
                   help="replace .opencl.toml files that exist already")
    add_hwd_path_argument(p)
    p.set_defaults(func=run_import)


def run_import(args: argparse.Namespace) -> int:
    import sys

    from mcl.backends import parse_mapping
    from mcl.codegen.lisp_mapping import load_lisp_mapping, toml_text
    from mcl.diagnostics import MclError
    from mcl.render import render_diagnostics

    folder = Path(args.folder)
    if not folder.is_dir():
        say(f"error: {folder} is not a folder", file=sys.stderr)
        return 1
    files = sorted(folder.glob("*.lisp"))
    if not files:
        say(f"error: {folder} has no <leaf>.lisp files", file=sys.stderr)
        return 1
    if not args.hwd_path and (folder.parent / "hdl").is_dir():
        args.hwd_path = [str(folder.parent / "hdl")]
    library = library_from_args(args)
    failed = 0
    for path in files:
        hwd = library.get(path.stem) if path.stem in library.names() else None
        if hwd is None:
            say(f"error: {path}: no hardware description '{path.stem}' (give its folder "
                  "with --hwd-path)", file=sys.stderr)
            failed += 1
            continue
        out_dir = Path(args.output) if args.output else Path(hwd.file).parent
        target = out_dir / f"{hwd.name}.opencl.toml"
        try:
            data = load_lisp_mapping(path, hwd)
            parse_mapping(data, str(path), hwd)
        except MclError as exc:
            render_diagnostics(exc.diagnostics)
            failed += 1
            continue
        if target.exists() and not args.force:
            say(f"error: {target} exists (--force replaces it)", file=sys.stderr)
            failed += 1
            continue
        out_dir.mkdir(parents=True, exist_ok=True)
        target.write_text(toml_text(data, path.name), encoding="utf-8")
        print(f"{path} -> {target}")
    return 1 if failed else 0
