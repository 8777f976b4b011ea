"""`mcl demo`: the guided stepwise-refinement demo (the README's main job).

It walks the outer and inner processes of the paper (section 3, Fig. 1) on the bundled
matmul kernel: the hierarchy, the kernel's feedback at `perfect`, the automatic
translation to `gpu` (Fig. 9) and the feedback there (Table II), the refinement series,
and finally OpenCL generated from a leaf and run on the embedded default device (PoCL's
CPU device), verified against numpy.

The demo is meant to be read in an 80-120 column terminal: each step is a short title, one
sentence of why, the command a user would type, and either that command's own (short)
output or the key messages of its (long) output, with the command that shows everything.
The feedback comes from the refinement table's rows (`mcl.report`), analysed once.
"""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from mcl.commands.options import add_device_argument
from mcl.resources import kernels_dir
from mcl.styled import text_console

MAX_WIDTH = 120  # the demo never draws wider than this, whatever the terminal


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
    add_device_argument(p, when="for the OpenCL runs: ")
    p.add_argument("--no-run", action="store_true", help="skip the OpenCL runs")


# A step shows its command and then either runs it (`show` None: its output is short) or
# shows the key messages of its output with `show(demo)`, returning False on failure.
@dataclass(frozen=True)
class DemoStep:
    title: str
    why: str
    argv: list[str]
    show: Callable[[Demo], bool] | None = None


class Demo:
    """What the steps share: the console and the analysed refinement series."""

    def __init__(self, console: Console, sizes: list[str]) -> None:
        self.console = console
        self.sizes = sizes
        self._rows: list[Any] | None = None
        self.problem: str | None = None

    def rows(self) -> list[Any]:
        """The rows of matmul's refinement table (every version analysed at its level),
        built on first use, with a spinner: it takes a few seconds."""
        if self._rows is None:
            from mcl.diagnostics import MclError
            from mcl.feedback.values import collect_values
            from mcl.hdl.library import default_library
            from mcl.report import build_rows, load_series

            with self.console.status("analysing every version of the series ..."):
                try:
                    library = default_library()
                    series = load_series(kernels_dir() / "matmul", library)
                    self._rows = build_rows(series, library, collect_values(self.sizes))
                except MclError as exc:
                    self.problem = "; ".join(d.message for d in exc.diagnostics)
                    self._rows = []
        return self._rows

    def row(self, name: str) -> Any | None:
        return next((r for r in self.rows() if r.name == name and not r.problem), None)

    def item(self, label: str, text: str, style: str = "") -> None:
        """`label text`, the text wrapped to the console with a hanging indent (and no
        padding to the full width, which tables would add)."""
        indent = " " * (len(label) + 1)
        lines = textwrap.wrap(text, self.console.width - len(indent), break_on_hyphens=False)
        for number, line in enumerate(lines or [""]):
            head = Text(label, style=style) if number == 0 else Text(indent[:-1])
            self.console.print(head + Text(" " + line), soft_wrap=True)

    def failed(self, what: str) -> bool:
        self.console.print(Text(f"could not {what}: {self.problem or 'the version failed'}",
                                style="bold red"))
        return False


def _key_facts(demo: Demo) -> bool:
    """The feedback at perfect: the facts the table keeps (operation counts, reuse)."""
    row = demo.row("perfect")
    if row is None:
        return demo.failed("analyse perfect")
    for line in row.shown:
        demo.item("•", line, "dim")
    return True


def _to_act_on(demo: Demo) -> bool:
    """The feedback at gpu: the suggestions, each with its hint, and the paper's second
    item of Table II's gpu row, several elements per thread: a fact since mcl states no
    gain for it (shown with -v, docs/feedback.md), but the step the series takes next."""
    row = demo.row("gpu")
    if row is None:
        return demo.failed("analyse the translation to gpu")
    pressing = _pressing(row.messages)
    pressing += [m for m in row.messages if m.code == "elements-several-per-unit"
                 and m not in pressing]
    for m in pressing:
        demo.item(f"{m.severity.value}:", m.text, "bold yellow")
        if m.hint:
            demo.item("  hint:", m.hint, "cyan")
    return bool(pressing)


def _pressing(messages: list[Any]) -> list[Any]:
    """What to act on, as the table's feedback column picks it (mcl.report.headline):
    suggestions first, then warnings other than the quiet ones."""
    from mcl.feedback.messages import FeedbackSeverity
    from mcl.report.headline import left_out

    return ([m for m in messages if m.severity == FeedbackSeverity.SUGGESTION]
            + [m for m in messages if m.severity == FeedbackSeverity.WARNING and not left_out(m)])


def _compact_table(demo: Demo) -> bool:
    """One line per version (its name carries its level): what changed (the first clause),
    how many messages there are to act on and the first of them; the full table, with every
    headline message, is `mcl report`."""
    from mcl.feedback.codes import title

    rows = demo.rows()
    if not rows:
        return demo.failed("build the refinement table")
    # expand: rich gives fixed columns no width at all when the others have a ratio
    table = Table(show_edge=False, pad_edge=False, box=None, header_style="bold", expand=True)
    table.add_column("version", style="bold", no_wrap=True)
    table.add_column("change", ratio=1, no_wrap=True, overflow="ellipsis")
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("to act on next", ratio=1, no_wrap=True, overflow="ellipsis")
    for row in rows:
        pressing = _pressing(row.messages)
        if row.problem:
            count, feedback = Text("!", style="red"), Text(f"failed: {row.problem}", style="red")
        elif pressing:
            count = Text(str(len(pressing)), style="yellow")
            feedback = Text(title(pressing[0].code, pressing[0].text))
        else:
            count, feedback = Text("0", style="dim"), Text("nothing", style="dim")
        table.add_row(Text(row.name), Text(row.spec.change.split(" — ")[0]), count, feedback)
    demo.console.print(table)
    return not any(r.problem for r in rows)


def _steps(args: argparse.Namespace, sizes: list[str]) -> list[DemoStep]:
    matmul = kernels_dir() / "matmul"
    perfect = str(matmul / "perfect.mcpl")
    big = [a for s in sizes for a in ("-D", s)]
    run_sizes = [a for name in ("n", "m", "p") for a in ("-D", f"{name}={args.size}")]
    device = ["--device", args.device] if args.device else []
    steps = [
        DemoStep("The hierarchy of hardware descriptions",
             "Each level adds hardware detail; a kernel moves down the tree (paper Fig. 4).",
             ["hwd", "list"]),
        DemoStep("Feedback at perfect: the algorithm",
             "The paper's Fig. 2 on the idealised machine: operation counts and data reuse.",
             ["check", perfect, "--feedback", *big], _key_facts),
        DemoStep("Outer process: translate to gpu",
             "Threads are split into blocks (paper Fig. 9); the guard keeps every size right.",
             ["translate", perfect, "--to", "gpu"]),
        DemoStep("Inner process at gpu: what to act on",
             "The first row of the paper's Table II for gpu: use local memory (a suggestion), "
             "do more per thread (a fact: -v shows it).",
             ["check", perfect, "--level", "gpu", "-v", *big],
             _to_act_on),
        DemoStep("The refinement series (Table II)",
             "Each version acts on the feedback of the one before it, down to a leaf.",
             ["report", str(matmul), *big], _compact_table),
    ]
    if not args.no_run:
        best_cpu = str(matmul / "x86_avx512_v3.mcpl")
        steps += [
            DemoStep(f"OpenCL from a leaf, run and verified ({args.size}³)",
                 "perfect translated to x86_avx512, compiled to OpenCL, checked against numpy.",
                 ["run", perfect, "--target", "x86_avx512", *run_sizes, "--verify", *device]),
            DemoStep("The refined CPU version on the same device",
                 "x86_avx512_v3 (register blocking, cache panels): compare its rate.",
                 ["run", best_cpu, "--target", "x86_avx512", *run_sizes, "--verify", *device]),
        ]
    return steps


def run(args: argparse.Namespace, main: Callable[[list[str]], int] | None = None,
        console: Console | None = None) -> int:
    if main is None:
        main = args.main  # mcl.cli's entry point, which the cli's parser sets
    if console is None:
        console = text_console()
        console.width = min(console.width, MAX_WIDTH)
    sizes = [f"{name}=2048" for name in ("n", "m", "p")]
    demo = Demo(console, sizes)
    steps = _steps(args, sizes)
    console.print(Text(_length_note(len(steps), args.no_run), style="dim"))
    failed: list[str] = []
    for number, step in enumerate(steps, start=1):
        console.print()
        console.print(Rule(Text(f"{number}. {step.title}", style="bold"), align="left"))
        console.print(Text(step.why, style="italic"))
        command = "$ mcl " + " ".join(_shorten(a) for a in step.argv)
        console.print(Text(command, style="bold green"), soft_wrap=True)
        if step.show is None:
            ok = main(step.argv) == 0
        else:
            ok = step.show(demo)
            console.print(Text("(key messages; run the command above for the full output)",
                               style="dim"))
        if not ok:
            failed.append(f"step {number} ({step.title}) failed")
    console.print()
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


def _length_note(steps: int, no_run: bool) -> str:
    """What the demo will take, said before it starts, in one line: most of it is
    analysing the series and, with the runs, PoCL compiling each kernel at its first
    launch (cached for later runs, docs/codegen.md)."""
    if no_run:
        return f"{steps} steps, under 30 s (longer on a busy machine); no OpenCL runs."
    return f"{steps} steps, about 30 s (2 min on a busy machine); --no-run skips the runs."


def _shorten(arg: str) -> str:
    """Show bundled kernel paths relative to the kernel library, as a user would type them."""
    path = Path(arg)
    try:
        return str(Path("kernels") / path.relative_to(kernels_dir()))
    except ValueError:
        return arg
