"""`mcl apply FILE [--level LEVEL] [--list | CODE@LINE | NAME[:ARGS]] [-o NEXT] [--force]
[-D name=value ...] [--function NAME] [--reference PATH] [--format text|json]`: list the
refinements that apply to a kernel at a level, each verified and with the time model's
estimated gain, or apply one and write the next version, printing its unified diff
(docs/refinements.md)."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.commands.options import (
    add_define_argument,
    add_format_argument,
    add_hwd_path_argument,
    add_include_argument,
    add_quiet_argument,
    library_from_args,
)
from mcl.diagnostics import MclError, Span, error
from mcl.output_width import say

if TYPE_CHECKING:
    from mcl.refine.kernel import KernelAtLevel
    from mcl.refine.offers import NotOffered, Offer


class _IntermixedParser(argparse.ArgumentParser):
    """A parser that takes the refinement after the options too (`mcl apply K.mcpl
    --level hopper bank-conflict@53`): argparse's intermixed parsing, which calls
    `parse_known_args` again inside."""

    _inside = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._inside:
            return super().parse_known_args(args, namespace)
        self._inside = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def register(sub: argparse._SubParsersAction) -> None:
    kind, sub._parser_class = sub._parser_class, _IntermixedParser
    try:
        _register(sub)
    finally:
        sub._parser_class = kind


def _register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "apply",
        help="list the refinements that apply to a kernel, or apply one",
        description=(
            "List the refinements (named rewrites) that apply to FILE at LEVEL, each "
            "checked, verified against the "
            "reference (or the original) at three sizes and weighed by the time model, or "
            "apply one, given as CODE@LINE (the refinement that answers that finding) or "
            "NAME[:ARGS], and write the next version. docs/refinements.md describes each."),
    )
    p.add_argument("file", metavar="FILE", help="MCPL kernel (.mcpl)")
    p.add_argument("refinement", metavar="CODE@LINE|NAME[:ARGS]", nargs="?",
                   help="the refinement to apply, e.g. bank-conflict@53 or "
                   "pad-shared:array=tile; without it (or with --list) the list")
    p.add_argument("--list", action="store_true", help="list the refinements that apply "
                   "(the default without a refinement)")
    p.add_argument("--level", metavar="LEVEL",
                   help="the level to refine at (default: the function's own); a level "
                   "below it translates the kernel there for the checks and the feedback")
    p.add_argument("-o", "--output", metavar="NEXT",
                   help="where to write the next version (default: FILE's name with its "
                   "version raised, hopper_v1.mcpl -> hopper_v2.mcpl)")
    p.add_argument("--force", action="store_true", help="overwrite NEXT if it exists")
    p.add_argument("--function", metavar="NAME",
                   help="the function to refine (default: the reference's, or the one kernel)")
    p.add_argument("--reference", metavar="PATH",
                   help="numpy reference (default: reference.py beside FILE)")
    add_define_argument(p, "a size for the time model, e.g. -D n=2048 (default: the "
                        "reference's sizes)")
    add_format_argument(p, "apply")
    add_include_argument(p)
    add_hwd_path_argument(p)
    add_quiet_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcl.defines import parse_defines
    from mcl.output_files import check_output_file
    from mcl.refine.offers import open_kernel

    if args.list and args.refinement:
        raise MclError(error("apply-usage", "give either --list or a refinement, not both",
                             Span.point(args.file, 1, 1)))
    if args.output:
        check_output_file(args.output, "-o")
    library = library_from_args(args)
    kernel = open_kernel(args.file, args.level, library, args.include_dirs,
                         parse_defines(args.defines), args.function, args.reference)
    if args.refinement:
        return _apply(args, kernel)
    return _list(args, kernel)


def _list(args: argparse.Namespace, kernel: KernelAtLevel) -> int:
    from mcl.refine.offers import list_offers

    offers, refused = list_offers(kernel, _progress(args.quiet))
    if args.format == "json":
        print(json.dumps(_document(kernel, offers, refused), indent=2))
        return 0
    say(f"{kernel.path.name}, {kernel.function} at {kernel.level}: "
          f"{_count(len(offers), 'refinement')} apply (time model at {_values(kernel)})")
    for offer in offers:
        say(f"  {offer.proposal.invocation}  (line {offer.proposal.line})  {_gain(offer)}")
        say(f"      {offer.proposal.summary}")
        if offer.answered is not None and offer.proposal.answers is not None:
            say(f"      answers {offer.proposal.answers.code}: {offer.answered}")
        say(f"      {_verified(offer)}")
    if refused:
        say(f"not offered ({len(refused)}):")
        for item in refused:
            where = f" (line {item.line})" if item.line is not None else ""
            say(f"  {item.what}{where}: {item.reason}")
    return 0


def _progress(quiet: bool) -> Callable[[str], None]:
    """Each step of a long list, a line on stderr (every offer is checked, verified at
    three sizes and weighed: seconds each; mcl.progress), none with --quiet."""
    from mcl.progress import Progress

    return Progress("apply", quiet=quiet).say


def _apply(args: argparse.Namespace, kernel: KernelAtLevel) -> int:
    from mcl.output_files import say_written, write_text
    from mcl.refine.offers import make_offer, proposal_for
    from mcl.refine.refinement import Refused

    try:
        proposal = proposal_for(kernel, args.refinement)
        offer = make_offer(kernel, proposal)
    except Refused as why:
        line = _line_of(args.refinement)
        raise MclError(error("apply-refused", f"{args.refinement}: {why.reason}",
                             Span.point(str(kernel.path), line or 1, 1))) from None
    out = Path(args.output) if args.output else next_name(kernel.path)
    if out.exists() and not args.force:
        raise MclError(error("apply-exists", f"{out} exists; the next version is not "
                             "written over it", Span.point(str(out), 1, 1),
                             hint="name another file with -o, or pass --force"))
    write_text(out, offer.text)
    if args.format == "json":
        document = _document(kernel, [offer], [])
        document["written"] = str(out)
        print(json.dumps(document, indent=2))
    else:
        print(offer.diff, end="")
        say(f"{offer.proposal.invocation}: {offer.proposal.summary}; {_gain(offer)}; "
              + _verified(offer))
    say_written(out, stdout_is_data=args.format == "json")
    return 0


def next_name(path: Path) -> Path:
    """The next version's default file: `_vN` raised by one, else `_v1` added."""
    m = re.fullmatch(r"(.*)_v(\d+)", path.stem)
    stem = f"{m.group(1)}_v{int(m.group(2)) + 1}" if m else f"{path.stem}_v1"
    return path.with_name(stem + path.suffix)


def _line_of(spec: str) -> int | None:
    m = re.search(r"@(\d+)$|line=(\d+)", spec)
    return int(m.group(1) or m.group(2)) if m else None


def _gain(offer: Offer) -> str:
    from mcl.feedback.emit import seconds_text

    if offer.seconds_before is None or offer.seconds_after is None or offer.gain is None:
        return "no estimate (the level has no time model, or the sizes leave it symbolic)"
    return (f"estimated gain {offer.gain:.2f}x: {seconds_text(offer.seconds_before)} "
            f"({offer.original}) -> {seconds_text(offer.seconds_after)} (next version)")


def _verified(offer: Offer) -> str:
    """`verified against R at SIZES; SIZES; SIZES, by the interpreter and OpenCL on D`."""
    v = offer.verification
    return (f"verified against {v.against} at " + "; ".join(_sizes(c.sizes) for c in v.checks)
            + f", by {v.runs_on}")


def _values(kernel: KernelAtLevel) -> str:
    return _sizes(kernel.values) or "no sizes"


def _sizes(sizes: Any) -> str:
    return " ".join(f"{k}={v}" for k, v in dict(sizes).items())


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _document(kernel: KernelAtLevel, offers: list[Offer], refused: list[NotOffered]
              ) -> dict[str, Any]:
    from mcl.schemas import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION, "file": str(kernel.path), "level": kernel.level,
        "function": kernel.function, "values": dict(kernel.values),
        "offers": [{
            "refinement": o.proposal.refinement, "invocation": o.proposal.invocation,
            "args": dict(o.proposal.args), "line": o.proposal.line,
            "summary": o.proposal.summary,
            "answers": o.proposal.answers.code if o.proposal.answers is not None else None,
            "seconds_before": o.seconds_before, "seconds_after": o.seconds_after,
            "estimated_gain": o.gain, "verified_against": o.verification.against,
            "verified_by": o.verification.runs_on,
            "sizes": [c.sizes for c in o.verification.checks], "diff": o.diff,
        } for o in offers],
        "not_offered": [{"what": r.what, "line": r.line, "reason": r.reason}
                        for r in refused],
    }
