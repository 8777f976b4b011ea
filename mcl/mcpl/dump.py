"""MCL_DUMP: the program printed as MCPL on stderr after a named pass, as a compiler's
lowering log does (docs/architecture.md, "The pass list").

    MCL_DUMP=after:<pass>[,after:<pass>...]

The mechanism lives here, below the passes that dump: the front end's (mcl.pipeline:
load, check, translate) and code generation's lowering passes (mcl.codegen.passes), which
never import the pipeline. Which names are valid is the pipeline's to say
(`mcl.pipeline.dump_after`, which lists them all in its error); here a name is only read.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from mcl.diagnostics import MclError, error
from mcl.mcpl.loader import Program

DUMP_ENV = "MCL_DUMP"


def asked(valid: Callable[[], Sequence[str]] | None = None, common: Sequence[str] = ()
          ) -> frozenset[str]:
    """The passes MCL_DUMP asks to print after. With `valid` (every name a pass has; asked
    for only where a name is not one of `common`), an MclError that lists the passes for
    a name that is none of them; without it, only a malformed item is an error."""
    value = os.environ.get(DUMP_ENV, "").strip()
    if not value:
        return frozenset()
    wanted = set()
    for item in value.split(","):
        kind, _, name = item.strip().partition(":")
        if kind == "after" and name and (valid is None or name in common or name in valid()):
            wanted.add(name)
            continue
        raise MclError(
            error(
                "pipeline-dump",
                f"{DUMP_ENV}={value}: '{item.strip()}' names no pass",
                None,
                hint="write after:PASS, PASS one of "
                + ", ".join(valid() if valid is not None else common or ("a pass",))
                + " (several separated by commas)",
            )
        )
    return frozenset(wanted)


def dump_program(name: str, program: Program, level: str | None = None) -> None:
    """Print `program`'s main module on stderr when MCL_DUMP asks for pass `name`."""
    if name not in asked():
        return
    from mcl.mcpl.printer import print_module

    where = f" at {level}" if level else ""
    text = print_module(program.main)
    # An MCPL comment: the dump of one pass is itself a module the parser reads.
    sys.stderr.write(f"// {DUMP_ENV} after:{name}{where}: {program.main.file or ''}\n"
                     f"{text if text.endswith(chr(10)) else text + chr(10)}")
