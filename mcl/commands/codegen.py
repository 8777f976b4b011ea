"""`mcl codegen FILE --target LEAF [-o DIR] [-I DIR] [--hwd-path DIR]`: generate OpenCL
kernels and a C++ host harness from a leaf level (the paper's section 4.4). A kernel
written above the leaf is translated down first."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.commands.options import add_hwd_path_argument, add_include_argument, library_from_args
from mcl.diagnostics import MclError, error
from mcl.output_width import say

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "codegen",
        help="generate OpenCL and a C++ host harness from a leaf level",
        description=(
            "Translate the kernels of FILE down to the leaf description LEAF (if they are "
            "written above it) and generate OpenCL kernels (MODULE.cl), a C++ host "
            "interface (MODULE.h, MODULE.cpp, mcl_opencl.h), an example driver (main.cpp) "
            "and a CMakeLists.txt. The OpenCL mapping of LEAF is LEAF.opencl.toml beside "
            "its .hdl file."
        ),
    )
    p.add_argument("file", metavar="FILE", help="MCPL source file (.mcpl or .mcl)")
    p.add_argument(
        "--target",
        required=True,
        metavar="LEAF",
        help="leaf hardware description (fermi, hopper, xeon_phi, x86_avx512, ...)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="folder for the generated files (default: MODULE_LEAF)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace files in DIR that mcl codegen did not write (or symbolic links); "
        "without it they are left alone and nothing is written",
    )
    from mcl.backends import DEFAULT_BACKEND, backend_names

    names = backend_names()
    p.add_argument(
        "--lang",
        choices=names,
        default=DEFAULT_BACKEND,
        help=f"kernel language: {' or '.join(names)} (default {DEFAULT_BACKEND}), for "
        "leaves with a LEAF.LANG.toml beside their .hdl (docs/codegen.md, \"Backends\")",
    )
    p.add_argument(
        "--no-tuned",
        action="store_true",
        help="ignore the kernel's .tuned.toml (mcl tune) and use the constants as written",
    )
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run)


def load_checked(path: str | Path, include_dirs: list[str], library: HwdLibrary
                 ) -> CheckedProgram:
    """The program of `path`, checked: code is only generated for valid kernels, and code
    generation reads the checker's types (no second check)."""
    from mcl import pipeline

    return pipeline.checked_at(path, include_dirs, library)


def run(args: argparse.Namespace) -> int:
    from mcl import pipeline
    from mcl.backends import emit_harness
    from mcl.output_files import check_output_folder, write_generated_folder

    if args.output:
        check_output_folder(args.output, "-o")
    library = library_from_args(args)
    program = load_checked(args.file, args.include_dirs, library)
    from mcl.tune.tuned_file import best_tuned, describe_tuned

    # No device here: the entry for the leaf, any device (the last written wins).
    config = None if args.no_tuned else best_tuned(args.file, args.target)
    if config is not None:
        say(describe_tuned(config, args.file))
    overrides = config.constants if config is not None else None
    generated = pipeline.generate(program, args.target, library, overrides=overrides,
                                  language=args.lang)
    if not generated.functions:
        raise MclError(
            error(
                "codegen-no-kernels",
                f"{args.file} has no function with foreach "
                "statements, so there is no kernel to generate",
            )
        )
    out = check_output_folder(args.output or f"{generated.name}_{args.target}", "-o")
    files = emit_harness(generated).files()
    write_generated_folder(out, files, force=args.force)
    kernels = sum(len(f.kernels) for f in generated.functions)
    say(f"generated {kernels} kernel(s) of {generated.name} for {args.target} in {out}/:")
    for name in files:
        print(f"  {out / name}")
    build = shlex.quote(str(out / "build"))
    print(f"build: cmake -S {shlex.quote(str(out))} -B {build} && cmake --build {build}")
    return 0
