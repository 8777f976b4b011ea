"""The `mcl` command. Each sub-command lives in `mcl.commands.<name>`, with a
`register(subparsers)` that declares its options; this module lists them, wires them
together and turns failures into diagnostics, never tracebacks.

A command's module, and the libraries it brings (rich, textX, SymPy, ...), is imported
only when that command runs: `mcl check` on every save in an editor should not pay for
`mcl tune` (docs/feedback.md, "Start-up"). Only `mcl --help` and a command line that
names no known command import them all."""

from __future__ import annotations

import argparse
import atexit
import errno
import gc
import importlib
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from mcl import __version__
from mcl.dataclass_code import install as install_dataclass_code
from mcl.deep_stack import run_with_deep_stack
from mcl.module_code import install as install_module_code

# The sub-commands, in help order; each is the module `mcl.commands.<name>`. Plain imports
# when registered: a command module that fails to import makes `mcl` fail loudly instead
# of silently offering one command less.
COMMANDS = ("hwd", "check", "translate", "apply", "refine", "run", "codegen", "tune", "profile",
            "report", "roofline", "demo", "devices", "lsp")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or, with `only`, of that one command alone (the same
    options, usage and errors for it; no other command's module is imported)."""
    parser = argparse.ArgumentParser(
        prog="mcl",
        description=(
            "Many-Core Levels: write a kernel in MCPL for an idealised machine, move it down "
            "a hierarchy of hardware descriptions, get performance feedback at each level, "
            "and generate OpenCL + C++ from a leaf level."
        ),
    )
    parser.add_argument("--version", action="version", version=f"mcl {__version__}")
    # A command that runs other command lines in-process (`mcl demo`) is handed the entry
    # point: the commands sit below the cli and import nothing of it (docs/architecture.md,
    # "Layers").
    parser.set_defaults(main=main)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"mcl.commands.{name}").register(sub)
    return parser


def command_named(argv: Sequence[str]) -> str | None:
    """The command a command line runs when it starts with one (`mcl check ...`); None
    for anything else (`mcl --help`, `mcl --version`, a misspelt command), which the full
    parser answers, with every command's name in its help and its errors."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _register_count(facts: object) -> int | None:
    """A backend compiler's register count (mcl.backends.register_count: NVRTC's, where
    the leaf has a CUDA mapping), imported when the feedback first asks: a command
    without occupancy feedback loads none of it."""
    from mcl.backends import register_count

    # `facts` is feedback's KernelFacts, typed `object` so that the cli names no feedback
    # type at start-up
    return register_count(facts)  # type: ignore[arg-type]


def _line_instructions(facts: object) -> Any:
    """A backend compiler's machine instructions per source line (mcl.backends.
    line_instructions: NVRTC's and nvdisasm's, where the leaf has a CUDA mapping), imported
    when the time model first asks. The editor's worker never asks it: a check there
    must not wait for a compiler (mcl.feedback.compiler_instructions)."""
    from mcl.backends import line_instructions

    # `facts` is typed `object` for the reason `_register_count` gives
    return line_instructions(facts)  # type: ignore[arg-type]


def _wide_copies(facts: object) -> Any:
    """The loops code generation issues as one wide access (mcl.backends.wide_copies),
    imported when the coalescing analysis first asks."""
    from mcl.backends.wide_copies import wide_copies

    # `facts` is typed `object` for the reason `_register_count` gives
    return wide_copies(facts)  # type: ignore[arg-type]


def _answered_changes() -> frozenset[str]:
    """The change types the refinements answer (mcl.refine.answers), imported when the
    feedback's default view first asks."""
    from mcl.refine.answers import answered_changes

    return answered_changes()


def main(argv: list[str] | None = None) -> int:
    # Here, not at the top: `run_program` sets up the caches of compiled code first.
    from mcl.diagnostics import MclError

    parser = build_parser(command_named(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        # As argparse tools do for a missing argument: usage on stderr, exit status 2.
        parser.print_usage(sys.stderr)
        print("mcl: error: a command is required (see `mcl --help`)", file=sys.stderr)
        return 2
    try:
        from mcl.commands.options import apply_settings
        from mcl.feedback.compiler_instructions import use_counter as use_instruction_counter
        from mcl.feedback.compiler_registers import use_counter
        from mcl.feedback.compiler_vectors import use_finder
        from mcl.feedback.refinable import use_answered
        from mcl.settings import find_settings

        use_counter(_register_count)  # occupancy from NVRTC's count where it can give one
        use_instruction_counter(_line_instructions)  # the time model's issue term
        use_finder(_wide_copies)  # coalescing: the copy loops issued as one wide access
        use_answered(_answered_changes)  # the default view's suggestions: refinements
        apply_settings(args, find_settings())
        status = int(run_with_deep_stack(lambda: args.func(args)) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe is reported here, not at exit
        return status
    except MclError as exc:
        from mcl.render import render_diagnostics  # rich: only when there is an error

        render_diagnostics(exc.diagnostics)
        return 1
    except RecursionError:
        print(
            "mcl: error: the input is nested too deeply for mcl to process; split deeply "
            "nested expressions or statements into smaller pieces",
            file=sys.stderr,
        )
        return 1
    except MemoryError:
        print("mcl: error: out of memory; try smaller sizes", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _drop_stdout()
        return 0
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            if os.environ.get("MCL_DEBUG"):
                raise
            print(internal_error_text(exc, sys.argv[1:] if argv is None else argv),
                  file=sys.stderr)
            return 2
        # The machine's condition, not a bug: a full disk, a quota, a failing device.
        _drop_stdout()
        print(f"mcl: error: could not write the output: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - last line of defence: no tracebacks for users
        if os.environ.get("MCL_DEBUG"):
            raise
        print(internal_error_text(exc, sys.argv[1:] if argv is None else argv), file=sys.stderr)
        return 2


# Commands whose process runs with the cyclic garbage collector off and ends without the
# interpreter's teardown (`run_program`): short, they leave almost no cyclic garbage
# (`mcl check` collects between files), start no threads that outlive them and leave no
# file to be closed by a finaliser.
QUICK_EXIT = frozenset({"check"})
# Commands whose process ends without the interpreter's teardown but keeps the collector
# on: `mcl tune` closes its files, its pool and its cluster before it returns, and the
# teardown then spent about a second freeing the OpenCL (PoCL) context and the objects of
# the run (docs/tuning.md, "The cost of a run").
NO_TEARDOWN = QUICK_EXIT | {"tune"}


def run_program() -> NoReturn:
    """The `mcl` program (the console script and `python -m mcl`): `main()`'s status as
    the process's exit status. `mcl check` runs with the cyclic garbage collector off (its
    full collections went through every object of SymPy's, again and again, for about
    1,000 objects of cyclic garbage at perfect.mcpl, 10,000 at the largest kernels), and
    its process ends at once (`os._exit`) once the exit handlers have run and the output
    is flushed: the interpreter's teardown (freeing every object one by one, a last
    collection) took about a fifth of a check's time (docs/feedback.md, "Start-up").
    Where the output cannot be flushed, the ordinary exit reports it as before.

    Before the command's modules are imported and the first of mcl's dataclasses is made,
    the program has the modules' bytecode (where Python keeps none) and the dataclasses'
    methods kept in the cache folder (mcl.module_code, mcl.dataclass_code): effects on
    the whole process, which a caller of `main` does not get. `mcl tune` ends the same
    way, with the collector on (NO_TEARDOWN)."""
    command = command_named(sys.argv[1:])
    if command in QUICK_EXIT:  # before the tables of code are read: a megabyte of objects
        gc.disable()
    install_module_code()
    install_dataclass_code()
    status = main()
    if command in NO_TEARDOWN:
        atexit._run_exitfuncs()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        else:
            os._exit(status)
    sys.exit(status)


# Write errors that say the output cannot be written (full disk, quota, file too large, a
# device error), as opposed to a bug in mcl.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def _drop_stdout() -> None:
    """Send what is still buffered for standard output nowhere, so that Python's flush at
    exit does not fail a second time with a message of its own."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until the process ends
    except OSError:
        pass


def internal_error_text(exc: BaseException, argv: list[str]) -> str:
    """What a user sees for an exception no pass turned into a diagnostic: a bug in mcl
    (docs/reliability.md). Short, with the command that shows the traceback and where to
    send it; never the traceback itself."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    if len(message) > 200:
        message = message[:200] + "..."
    command = shlex.join(["mcl", *argv])
    return (
        f"mcl: internal error: {type(exc).__name__}{': ' + message if message else ''}\n"
        "This is a bug in mcl, not in your input. To reproduce it with a traceback:\n"
        f"  MCL_DEBUG=1 {command}\n"
        "Please report it to the mcl maintainers (the project's issue tracker) with that "
        "command, its output and the input files (docs/reliability.md)."
    )


if __name__ == "__main__":
    run_program()
