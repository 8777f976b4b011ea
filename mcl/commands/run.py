"""`mcl run FILE (--interp | --target LEAF [--device SPEC] [--verify] [--repeat N])
[-D name=value ...] [--function NAME] [--seed N]
[--reference PATH] [--level LEVEL] [-I DIR] [--hwd-path DIR]`: run a kernel on inputs
from its folder's numpy reference and compare every output with the reference.

The steps are separate functions so other ways of running a kernel (the OpenCL runner's
`--target LEAF`) reuse everything but the execution itself: `prepare` (load, check,
optionally translate, build inputs and expected outputs), an executor (here the reference
interpreter), and `finish` (compare and print the table). Exit status 0 when every output
matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.commands import run_multi
from mcl.commands.kernel_time import kernel_line
from mcl.commands.options import (
    add_backend_argument,
    add_define_argument,
    add_device_argument,
    add_hwd_path_argument,
    add_include_argument,
    add_quiet_argument,
    add_repeat_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, Severity, error
from mcl.output_width import say
from mcl.progress import Timings
from mcl.styled import text_console

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program


@dataclass
class PreparedRun:
    """Everything an executor needs, and what `finish` compares against."""

    path: Path
    checked: CheckedProgram  # the program (translated with --level) and its side tables
    function: str
    level: str  # the function's hardware description after translation
    library: HwdLibrary
    reference: Any  # mcl.verify.Reference
    sizes: dict[str, int]
    args: dict[str, Any]
    expected: dict[str, Any]  # empty when the run is not compared (--target without --verify)
    device: Any = None  # the OpenCL device of --target, chosen before any allocation
    timings: Timings = field(default_factory=Timings)  # inputs, reference, build, transfers

    @property
    def program(self) -> Program:
        return self.checked.program


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "run",
        help="run a kernel and verify it against its numpy reference",
        description=(
            "Run a kernel on inputs made by the reference.py of its folder (sizes from the "
            "reference, changed with -D) and compare every output with the numpy reference "
            "within its tolerance. Exit status 0 when all outputs match, 1 otherwise."
        ),
    )
    p.add_argument("file", metavar="FILE", help="MCPL kernel (.mcpl or .mcl)")
    p.add_argument(
        "--interp",
        action="store_true",
        help="run with the reference interpreter (docs/interpreter.md)",
    )
    p.add_argument(
        "--target",
        metavar="LEAF",
        help="generate OpenCL from the leaf LEAF and run it through pyopencl (docs/codegen.md)",
    )
    add_device_argument(p, when="with --target: ")
    add_backend_argument(p, when="with --target: ")
    p.add_argument(
        "--verify",
        action="store_true",
        help="with --target: compare the outputs with the reference (--interp always does)",
    )
    add_repeat_argument(p, default=1, when="with --target: ")
    p.add_argument(
        "--no-tuned",
        action="store_true",
        help="with --target: ignore the kernel's .tuned.toml (mcl tune) and use the constants "
        "as written",
    )
    add_define_argument(p, "set a size of the reference, e.g. -D n=37")
    p.add_argument("--function", metavar="NAME", help="function to run (default: the reference's)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or one JSON document on stdout (schema "
                   "mcl/schemas/run.schema.json)")
    p.add_argument("--seed", type=int, default=0, help="seed of the input generator (default 0)")
    p.add_argument("--inputs", metavar="NAME", help="an alternative input generator of the "
                   "reference (its INPUTS, e.g. spmv's powerlaw); default: inputs()")
    p.add_argument(
        "--reference", metavar="PATH", help="numpy reference (default: reference.py beside FILE)"
    )
    p.add_argument(
        "--level", metavar="LEVEL", help="translate the kernel to LEVEL first, then run that"
    )
    add_include_argument(p)
    add_hwd_path_argument(p)
    run_multi.add_arguments(p, "with --target: split the kernel's blocks across")
    run_multi.add_run_arguments(p)
    add_quiet_argument(p)
    p.set_defaults(func=run)


def prepare(args: argparse.Namespace) -> PreparedRun:
    """Load and check the kernel (translating it with --level), and build its inputs and
    expected outputs from the reference (only when they are compared), after checking that
    the run's memory fits the host and the --target device."""
    from mcl import pipeline
    from mcl.footprint import check_footprint
    from mcl.verify import (
        expected_outputs,
        load_reference,
        make_inputs,
        parse_defines,
        reference_for,
    )

    path = Path(args.file)
    if args.seed < 0:
        raise MclError(error("run-seed", f"--seed {args.seed}: the seed cannot be negative", None))
    library = library_from_args(args)
    checked = pipeline.checked_at(path, args.include_dirs, library)
    source = checked.program
    if args.level:
        from mcl.translate.levels import require_level

        require_level(library, args.level)
        checked = pipeline.translate(checked, args.level, library)
    program = checked.valid()
    reference = load_reference(args.reference or reference_for(path))
    name = args.function or reference.function
    function = program.main.function(name)
    source_function = source.main.function(name)
    if function is None:
        raise MclError(
            error(
                "run-unknown-function",
                f"{path} defines no function '{name}'",
                None,
                hint="choose one with --function NAME: "
                + ", ".join(f.name for f in program.main.functions),
            )
        )
    overrides = parse_defines(args.defines, reference.sizes)
    if args.target:
        from mcl.codegen.opencl import require_leaf

        require_leaf(args.target, library)  # said as `mcl codegen` says it, before any work
        # OpenCL checks no index: an access past a buffer corrupts the host's memory, so
        # one the sizes make certain is refused before anything is allocated.
        from mcl.mcpl.extents import extent_errors

        _raise_errors(extent_errors(source_function or function,
                                    {**reference.sizes, **overrides}))
    device = None
    if args.target and not run_multi.is_multi(args):  # several devices: each worker's own
        device = _select_device(args, library)
    # Memory first: a run at the paper's sizes that cannot fit is an error with the figures
    # before anything is allocated, not a MemoryError or a driver failure halfway through.
    check_footprint(function, {**reference.sizes, **overrides}, device,
                    verify=bool(args.interp or args.verify),
                    backend=getattr(args, "backend", None))
    timings = Timings("run", quiet=getattr(args, "quiet", False))
    with timings.step("inputs", "making inputs (reference.py inputs())"):
        sizes, inputs = make_inputs(reference, overrides, args.seed, getattr(args, "inputs", None))
    expected: dict[str, Any] = {}
    if args.interp or args.verify:
        with timings.step("reference", "computing the numpy reference and its error bounds"):
            expected = expected_outputs(reference, inputs)
    return PreparedRun(path, checked, name, function.hwd, library, reference, sizes, inputs,
                       expected, device, timings)


def _select_device(args: argparse.Namespace, library: HwdLibrary) -> Any:
    """The device of --target for --backend (mcl.backends.leaf_device)."""
    from mcl.backends import DEFAULT_BACKEND, leaf_device

    return leaf_device(getattr(args, "backend", DEFAULT_BACKEND), library.get(args.target),
                       args.device)


def execute_interp(prepared: PreparedRun) -> dict[str, Any]:
    """Run the prepared kernel with the reference interpreter (arrays change in place),
    with an estimate and a progress bar once the run shows it will be long."""
    from mcl.interp import run_function
    from mcl.interp.progress import listening

    sizes = " ".join(f"{k}={v}" for k, v in prepared.sizes.items())
    smaller = f"-D {next(iter(prepared.sizes), 'n')}=64"
    with _interp_progress(sizes, smaller, prepared.timings.quiet) as tell, listening(tell):
        return run_function(prepared.checked, prepared.function, prepared.args,
                            prepared.library)


# After this long, the interpreter's rate so far gives the estimate; a run estimated
# to take longer than LONG_RUN_S is announced with a hint to use smaller sizes.
ESTIMATE_AFTER_S = 2.0
LONG_RUN_S = 10.0


@contextmanager
def _interp_progress(sizes: str, smaller: str, quiet: bool = False
                     ) -> Iterator[Callable[[int, int], None]]:
    """`tell(done, total)` for the interpreter's outermost foreach: once the run has taken
    ESTIMATE_AFTER_S, the time it will take from the rate so far; a long run is announced
    on stderr with a hint, and shows a progress bar there on a terminal, plain lines now
    and then elsewhere (mcl.progress), none with --quiet."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from mcl.progress import Progress as Lines

    console = text_console(stderr=True)
    bar = Progress(TextColumn("interpreting"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
                   TimeRemainingColumn(), console=console, transient=True,
                   disable=not console.is_terminal or quiet)
    lines = Lines("run", quiet=quiet, bar=False)
    start = time.perf_counter()
    state: dict[str, Any] = {"announced": False, "task": None}

    def tell(done: int, total: int) -> None:
        elapsed = time.perf_counter() - start
        if state["task"] is not None:
            bar.update(state["task"], completed=done, total=total)
            lines.note(f"interpreting: {done} of {total} units")
            return
        if state["announced"] or elapsed < ESTIMATE_AFTER_S:
            return
        state["announced"] = True
        estimate = elapsed / done * total
        if estimate < LONG_RUN_S:
            return
        console.print(f"mcl run: the interpreter runs one unit at a time; at {sizes} this run "
                      f"will take about {_duration(estimate)} ({done} of {total} units in "
                      f"{elapsed:.1f} s). Smaller sizes check the same code much faster, "
                      f"e.g. {smaller}.")
        bar.start()
        state["task"] = bar.add_task("interpreting", total=total, completed=done)

    try:
        yield tell
    finally:
        bar.stop()


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def finish(prepared: PreparedRun, results: dict[str, Any], how: str, seconds: float) -> int:
    """Compare with the reference, print the table and a summary; the exit status."""

    from mcl.verify import print_report, verify

    checks = verify(prepared.reference, prepared.expected, results, prepared.sizes)
    sizes = " ".join(f"{k}={v}" for k, v in prepared.sizes.items())
    console = text_console()
    title = f"{prepared.function} ({prepared.level}) on {sizes} — {how}, {seconds * 1e3:.1f} ms"
    ok = print_report(checks, title, console)
    failed = sum(not c.ok for c in checks)
    if ok:
        console.print(f"[bold green]all {len(checks)} outputs match the numpy reference[/]")
    else:
        console.print(f"[bold red]{failed} of {len(checks)} outputs differ from the reference[/]")
    return 0 if ok else 1


def execute_opencl(
    prepared: PreparedRun, target: str, device: str | None, repeat: int, tuned: bool = True,
    backend: str | None = None,
) -> Any:
    """Generate code from leaf `target` in the language of `backend` (default: mcl.backends'
    DEFAULT_BACKEND, OpenCL) and run it with the backend's session, with the constants of
    the kernel's `.tuned.toml` for this device and sizes when present."""
    from mcl import pipeline
    from mcl.backends import DEFAULT_BACKEND, get_backend, open_session
    from mcl.tune.tuned_file import best_tuned, describe_tuned

    backend = backend or DEFAULT_BACKEND
    describe = get_backend(backend).describe

    chosen = prepared.device
    if chosen is None:
        chosen = _select_device(
            argparse.Namespace(target=target, device=device, backend=backend), prepared.library
        )
    config = (
        best_tuned(prepared.path, target, describe(chosen), prepared.sizes) if tuned else None
    )
    if config is not None:
        say(describe_tuned(config, prepared.path))
    overrides = config.constants if config is not None else None
    timings = prepared.timings
    with timings.step("build", f"generating {get_backend(backend).title} for {target} and "
                      "building it"):
        generated = pipeline.generate(prepared.checked, target, prepared.library,
                                      overrides=overrides, language=backend)
        session = open_session(generated, chosen)
    with timings.step("run", f"running {prepared.function} ({repeat}x) on {describe(chosen)}; "
                      "the first launch compiles the kernels for the device"):
        result = session.run(prepared.function, prepared.args, repeat)
    timings.pop("run")  # its parts: the device compile and transfers here, kernel time in
    # the report line
    timings["device compile"] = result.first_launch_s
    if result.first_launch_cached:
        timings.notes["device compile"] = "cached"
    timings["to device"], timings["from device"] = result.to_device_s, result.from_device_s
    return result


def report_opencl(prepared: PreparedRun, target: str, result: Any, repeat: int) -> None:
    """Kernel time and the rate the reference defines (GFLOP/s or GB/s, as Table III;
    mcl.verify.rate_of)."""
    seconds = result.kernel_time_s
    say(f"{kernel_line(prepared, target, seconds, repeat)} on {result.device}")

    # rich wraps at the terminal's width: the steps of a run make a long line.
    text_console().print(f"  apart from the kernel: {prepared.timings.text()}")
    reached = run_roofline(prepared, target, seconds)
    if reached is not None:
        text_console().print(f"  reached {reached.text}")


def run_roofline(prepared: PreparedRun, target: str, seconds: float) -> Any:
    """The fraction of the attainable performance the run reached (mcl.report.attained),
    or None where the leaf states no peak."""
    from mcl.report.attained import run_attained

    return run_attained(prepared.program, prepared.function, target, prepared.library,
                        prepared.sizes, seconds)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "format", "text") == "json":
        return run_json(args)
    if args.target or run_multi.is_multi(args):
        if args.interp:
            raise MclError(error("run-executor", "choose one of --interp and --target", None))
        if args.repeat < 1:
            raise MclError(error("run-repeat", "--repeat needs a positive count", None))
        prepared = prepare(args)
        if run_multi.is_multi(args):
            result = run_multi.execute_multi(prepared, args)
            run_multi.report_multi(prepared, args.target, result, args.repeat)
        else:
            result = execute_opencl(
                prepared, args.target, args.device, args.repeat, not args.no_tuned,
                args.backend)
            report_opencl(prepared, args.target, result, args.repeat)
        if not args.verify:
            return 0
        from mcl.backends import get_backend

        how = f"{get_backend(args.backend).title} {args.target}"
        return finish(prepared, result.outputs, how, result.kernel_time_s)
    if not args.interp:
        raise MclError(
            error(
                "run-no-executor",
                "say how to run the kernel",
                None,
                hint="--interp runs it with the reference interpreter; --target LEAF "
                "generates OpenCL and runs it",
            )
        )
    prepared = prepare(args)
    start = time.perf_counter()
    results = execute_interp(prepared)
    return finish(prepared, results, "interpreter", time.perf_counter() - start)


def run_json(args: argparse.Namespace) -> int:
    """`--format json`: the same runs, one document on stdout (mcl/schemas/run.schema.json)
    instead of the text report; anything the runs print goes to stderr."""
    import contextlib
    import json
    import math

    from mcl.schemas import SCHEMA_VERSION
    from mcl.verify import verify

    if args.target and args.interp:
        raise MclError(error("run-executor", "choose one of --interp and --target", None))
    if not (args.target or args.interp):
        raise MclError(error("run-no-executor", "say how to run the kernel: --interp or "
                             "--target LEAF", None))
    if args.repeat < 1:
        raise MclError(error("run-repeat", "--repeat needs a positive count", None))
    prepared = prepare(args)
    multi = None
    with contextlib.redirect_stdout(sys.stderr):
        if args.target and run_multi.is_multi(args):
            multi = run_multi.execute_multi(prepared, args)
            outputs, seconds, device = multi.outputs, multi.kernel_time_s, multi.device
        elif args.target:
            result = execute_opencl(prepared, args.target, args.device, args.repeat,
                                    not args.no_tuned, args.backend)
            outputs, seconds, device = result.outputs, result.kernel_time_s, result.device
        else:
            start = time.perf_counter()
            outputs, device = execute_interp(prepared), None
            seconds = time.perf_counter() - start
    checked = args.interp or args.verify
    checks = verify(prepared.reference, prepared.expected, outputs, prepared.sizes) \
        if checked else []

    def finite(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    from dataclasses import asdict

    reached = run_roofline(prepared, args.target, seconds) if args.target else None

    document = {
        "schema_version": SCHEMA_VERSION, "file": args.file, "function": prepared.function,
        "level": prepared.level, "executor": args.backend if args.target else "interpreter",
        "target": args.target, "device": device, "sizes": dict(prepared.sizes),
        "repeat": args.repeat if args.target else 1, "seconds": seconds,
        "verified": all(c.ok for c in checks) if checked else None,
        "timings": dict(prepared.timings),
        "outputs": [{"name": c.name, "shape": list(c.shape), "max_abs": finite(c.max_abs),
                     "max_rel": finite(c.max_rel), "mismatches": c.mismatches, "ok": c.ok,
                     "bound": finite(c.bound), "ratio": finite(c.ratio), "rule": c.rule}
                    for c in checks],
        "roofline": asdict(reached) if reached is not None else None,
    }
    if multi is not None:
        document["multi"] = run_multi.devices_document(multi)
    print(json.dumps(document, indent=2))
    return 1 if checked and not document["verified"] else 0


def _raise_errors(diagnostics: list) -> None:
    errors = [d for d in diagnostics if d.severity == Severity.ERROR]
    if errors:
        raise MclError(errors)
