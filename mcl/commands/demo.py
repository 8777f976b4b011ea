"""`mcl demo`: the guided stepwise-refinement demo (the README's main job).

It walks the outer and inner processes of the paper (section 3, Fig. 1) on the bundled
matmul kernel: the hierarchy, the kernel and its feedback at `perfect`, the automatic
translation to `gpu` (Fig. 9) and the feedback there (Table II), the refinement series,
and finally OpenCL generated from a leaf and run on the embedded default device (PoCL's
CPU device), verified against numpy. Every step is the real sub-command, run in-process,
so the demo shows exactly what a user would type and see.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.rule import Rule
from rich.text import Text

from mcl.resources import kernels_dir


def build_args(argv: list[str]) -> argparse.Namespace:
    """Parse demo options alone (for tests and embedding)."""
    parser = argparse.ArgumentParser(prog="mcl demo")
    _add_options(parser)
    return parser.parse_args(argv)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo",
        help="guided stepwise-refinement demo on the bundled matmul kernel",
        description=(
            "Walk through stepwise refinement for performance on the bundled matmul kernel: "
            "the hierarchy of hardware descriptions, feedback at perfect, automatic "
            "translation to gpu and its feedback, the refinement series, and OpenCL "
            "generated from a leaf level, run on the PoCL CPU device (or --device) and "
            "verified against numpy. Exit status 0 when every step succeeded."
        ),
    )
    _add_options(p)
    p.set_defaults(func=run)


def _add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--size",
        type=int,
        default=512,
        metavar="N",
        help="matrix size n = m = p for the OpenCL runs (default 512)",
    )
    p.add_argument(
        "--device",
        metavar="SPEC",
        help="OpenCL device for the run (default: the PoCL CPU device)",
    )
    p.add_argument("--no-run", action="store_true", help="skip the OpenCL runs")


def _steps(args: argparse.Namespace) -> list[tuple[str, str, list[str]]]:
    """(title, why, mcl arguments) for each step of the demo."""
    matmul = kernels_dir() / "matmul"
    perfect = str(matmul / "perfect.mcpl")
    big = ["-D", "n=2048", "-D", "m=2048", "-D", "p=2048"]
    size = [f"{name}={args.size}" for name in ("n", "m", "p")]
    run_sizes = [a for s in size for a in ("-D", s)]
    device = ["--device", args.device] if args.device else []
    steps = [
        (
            "The hierarchy of hardware descriptions",
            "Each level adds hardware detail; kernels move down the tree (paper Fig. 4).",
            ["hwd", "list"],
        ),
        (
            "perfect: check the kernel and ask for feedback",
            "The paper's Fig. 2 for the idealised machine: unlimited threads, one memory. "
            "Feedback here is about the algorithm: operation counts and data reuse.",
            ["check", perfect, "--feedback", *big],
        ),
        (
            "Outer process: translate to gpu automatically",
            "The threads are split into blocks and threads (paper Fig. 9); the guard keeps "
            "every size correct, not only multiples of the block size.",
            ["translate", perfect, "--to", "gpu"],
        ),
        (
            "Inner process at gpu: what limits performance?",
            "Table II of the paper: a[i,k] is loaded by every thread of a block (local memory "
            "can be leveraged), b[k,j] by every block, and each thread computes one element.",
            ["check", perfect, "--level", "gpu", *big],
        ),
        (
            "The refinement series: feedback appearing and disappearing (Table II)",
            "Each version acts on the feedback of the one before it; the table shows the "
            "change and the feedback that remains, on both branches of the hierarchy.",
            ["report", str(matmul), *big],
        ),
    ]
    if not args.no_run:
        best_cpu = str(matmul / "x86_avx512_v3.mcpl")
        steps += [
            (
                f"Generate OpenCL from a leaf and run it ({args.size}³)",
                "The perfect kernel translated to x86_avx512, compiled to OpenCL, run on the "
                "device and verified against numpy.",
                ["run", perfect, "--target", "x86_avx512", *run_sizes, "--verify", *device],
            ),
            (
                "The refined CPU version on the same device",
                "x86_avx512_v3: register blocking and cache panels, written at level "
                "x86_avx512 after the feedback of the series; compare its rate with perfect's.",
                ["run", best_cpu, "--target", "x86_avx512", *run_sizes, "--verify", *device],
            ),
        ]
    return steps


def run(args: argparse.Namespace, main: Callable[[list[str]], int] | None = None) -> int:
    if main is None:
        from mcl.cli import main as cli_main

        main = cli_main
    console = Console(highlight=False)
    failed: list[str] = []
    for number, (title, why, argv) in enumerate(_steps(args), start=1):
        console.print(Rule(Text(f"{number}. {title}", style="bold")))
        console.print(Text(why, style="italic"))
        console.print(Text("$ mcl " + " ".join(_shorten(a) for a in argv), style="bold green"))
        rc = main(argv)
        if rc != 0:
            failed.append(f"step {number} ({title}) exited with {rc}")
    console.print(Rule())
    if failed:
        for line in failed:
            console.print(Text(line, style="bold red"))
        return 1
    console.print(
        "Next: read docs/tutorial.md, then refine the kernel yourself "
        "(copy kernels/matmul/perfect.mcpl, edit, and run `mcl check FILE --level gpu`)."
    )
    return 0


def _shorten(arg: str) -> str:
    """Show bundled kernel paths relative to the kernel library, as a user would type them."""
    path = Path(arg)
    try:
        return str(Path("kernels") / path.relative_to(kernels_dir()))
    except ValueError:
        return arg
