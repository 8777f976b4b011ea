"""`mcl codegen FILE --target LEAF [-o DIR] [-I DIR] [--hwd-path DIR]`: generate OpenCL
kernels and a C++ host harness from a leaf level (the paper's section 4.4). A kernel
written above the leaf is translated down first."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mcl.commands.options import add_hwd_path_argument, add_include_argument, library_from_args
from mcl.diagnostics import MclError, Severity, error

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import Program


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
        "--lang",
        choices=("opencl", "cuda"),
        default="opencl",
        help="kernel language: opencl (default; LEAF.opencl.toml) or cuda (MODULE.cu, for "
        "leaves with a LEAF.cuda.toml such as hopper and fermi; docs/codegen.md)",
    )
    p.add_argument(
        "--no-tuned",
        action="store_true",
        help="ignore the kernel's .tuned.toml (mcl tune) and use the constants as written",
    )
    add_include_argument(p)
    add_hwd_path_argument(p)
    p.set_defaults(func=run)


def load_checked(path: str | Path, include_dirs: list[str], library: HwdLibrary) -> Program:
    """The program of `path`, checked: code is only generated for valid kernels."""
    from mcl.mcpl.check import check_program
    from mcl.mcpl.loader import load_program

    program = load_program(path, include_dirs, library)
    errors = [d for d in check_program(program, library) if d.severity == Severity.ERROR]
    if errors:
        raise MclError(errors)
    return program


def run(args: argparse.Namespace) -> int:
    from mcl.codegen import emit_harness, generate_module
    library = library_from_args(args)
    program = load_checked(args.file, args.include_dirs, library)
    from mcl.tune.tuned_file import best_tuned, describe_tuned

    # No device here: the entry for the leaf, any device (the last written wins).
    config = None if args.no_tuned else best_tuned(args.file, args.target)
    if config is not None:
        print(describe_tuned(config, args.file))
    overrides = config.constants if config is not None else None
    generated = generate_module(program, args.target, library, overrides=overrides,
                                language=args.lang)
    if not generated.functions:
        raise MclError(
            error(
                "codegen-no-kernels",
                f"{args.file} has no function with foreach "
                "statements, so there is no kernel to generate",
            )
        )
    out = Path(args.output or f"{generated.name}_{args.target}")
    try:
        out.mkdir(parents=True, exist_ok=True)
        files = emit_harness(generated).files()
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise MclError(
            error("codegen-io", f"cannot write to {out}: {exc.strerror or exc}")
        ) from None
    kernels = sum(len(f.kernels) for f in generated.functions)
    print(f"generated {kernels} kernel(s) of {generated.name} for {args.target} in {out}/:")
    for name in files:
        print(f"  {out / name}")
    print(f"build: cmake -S {out} -B {out}/build && cmake --build {out}/build")
    return 0
