"""Offers: the refinements that apply to a kernel at a level, each made, checked,
verified and weighed by the time model before it is offered (docs/refinements.md).

    open_kernel(path, level, library, ...)        the kernel and its findings at the level
    list_offers(kernel) -> (offers, not_offered)  every applicable refinement, verified
    proposal_for(kernel, "CODE@LINE" | "NAME[:ARGS]") -> Proposal
    make_offer(kernel, proposal, verifier) -> Offer   (Refused where it cannot be offered)

`mcl apply` calls these; an editor's code actions and a search over refinements can call
them the same way (a function listing the offers with their gains, one applying one)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError, did_you_mean
from mcl.refine.cpu_blocks import CpuBlocks
from mcl.refine.edits import apply_edits, unified_diff
from mcl.refine.hoist_load import HoistLoad
from mcl.refine.interchange import Interchange
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.name_counts import NameCounts
from mcl.refine.pad_shared import PadShared
from mcl.refine.privatise import Privatise
from mcl.refine.refinement import Proposal, Refinement, Refused, parse_args
from mcl.refine.row_per_warp import RowPerWarp
from mcl.refine.set_constant import SetConstant
from mcl.refine.several_elements import SeveralElements
from mcl.refine.stage_tile import StageTile
from mcl.refine.stage_transpose import StageTranspose
from mcl.refine.stencil_tile import StencilTile
from mcl.refine.swap_mapping import SwapMapping
from mcl.refine.tile_2d import Tile2D
from mcl.refine.tile_2d_prefetch import Tile2DPrefetch
from mcl.refine.tile_2d_shared import Tile2DShared
from mcl.refine.unroll import Unroll
from mcl.refine.vector_groups import VectorGroups
from mcl.refine.vector_loads import VectorLoads
from mcl.refine.verification import Verification, Verifier
from mcl.verify import load_reference, reference_for

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary

# Every refinement, in the order `--list` and the documentation give them.
REFINEMENTS: tuple[Refinement, ...] = (SetConstant(), HoistLoad(), PadShared(), Unroll(),
                                       StageTile(), SwapMapping(), StageTranspose(),
                                       RowPerWarp(),
                                       Interchange(),
                                       VectorLoads(), VectorGroups(), SeveralElements(),
                                       Tile2D(),
                                       StencilTile(),
                                       Tile2DShared(), Tile2DPrefetch(),
                                       CpuBlocks(), Privatise(),
                                       NameCounts())


def refinement_named(name: str) -> Refinement:
    found = next((r for r in REFINEMENTS if r.name == name), None)
    if found is None:
        names = [r.name for r in REFINEMENTS]
        raise Refused(f"no refinement '{name}'"
                      + (f"; {did_you_mean(name, names)}" if did_you_mean(name, names)
                         else f" (refinements: {', '.join(names)})"))
    return found


@dataclass(frozen=True)
class NextVersion:
    """A proposal made: the next version's text and the kernel it is at the level."""

    proposal: Proposal
    text: str
    kernel: KernelAtLevel


@dataclass(frozen=True)
class Offer:
    """A refinement that applies: the proposal, the next version (its text and diff),
    the time model's estimate of the original and of the next version (None where the
    level has no model or the sizes leave it symbolic), and how it was verified."""

    proposal: Proposal
    original: str  # the kernel's file name
    text: str
    diff: str
    seconds_before: float | None
    seconds_after: float | None
    verification: Verification
    answered: str | None  # the finding it answered, gone in the next version
    # The next version checked at the level (None: not kept): a search expands it
    # without loading and analysing the same text a second time.
    kernel: KernelAtLevel | None = field(default=None, compare=False, repr=False)
    # The verifier that verified it (the original's cases): the next version's own,
    # by `Verifier.passed_by`, without running it on them again.
    verifier: Verifier | None = field(default=None, compare=False, repr=False)

    @property
    def gain(self) -> float | None:
        if self.seconds_before is None or not self.seconds_after:
            return None
        return self.seconds_before / self.seconds_after


@dataclass(frozen=True)
class NotOffered:
    """A refinement the kernel asks for that is not offered, and why."""

    what: str
    line: int | None
    reason: str


def open_kernel(path: str | Path, level: str | None, library: HwdLibrary,
                include_dirs: Sequence[str] = (), values: Mapping[str, Any] | None = None,
                function: str | None = None, reference: str | Path | None = None
                ) -> KernelAtLevel:
    """The kernel file at `level` with its findings at `values` (default: its
    reference's sizes, where it has one). `reference`: the numpy reference the user
    named (MclError where it does not load), default reference.py beside the file; the
    kernel keeps it, and every next version is verified against it."""
    path = Path(path)
    ref_path = Path(reference) if reference is not None else reference_for(path)
    ref = load_reference(ref_path) if reference is not None or ref_path.is_file() else None
    sizes = values if values else (ref.sizes if ref is not None else {})
    return load_kernel(path, level, library, include_dirs, sizes, function,
                       ref.function if ref is not None else None, reference=ref_path)


def next_version(kernel: KernelAtLevel, proposal: Proposal) -> NextVersion:
    """The proposal made and the result checked at the kernel's level, its findings
    read: `Refused` where it does not check or the finding it answers is still there."""
    text = apply_edits(kernel.text, proposal.edits)
    try:
        after = load_kernel(kernel.path, kernel.level, kernel.library, kernel.include_dirs,
                            kernel.values, kernel.function, text=text,
                            reference=kernel.reference)
    except MclError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        raise Refused(f"the next version does not check at {kernel.level}"
                      + (f": line {first.span.line}: {first.message}" if first and first.span
                         else f": {first.message}" if first else "")) from None
    if proposal.answers is not None:
        left = refinement_named(proposal.refinement).still_there(proposal, after.findings)
        if left is not None:
            raise Refused(f"the {proposal.answers.code} finding it answers is still there "
                          f"in the next version: {left.message.text}")
    return NextVersion(proposal, text, after)


def make_offer(kernel: KernelAtLevel, proposal: Proposal, verifier: Verifier | None = None,
               made: NextVersion | None = None) -> Offer:
    """The proposal made, checked, verified and weighed; `Refused` where any step
    fails (`verifier`: the kernel's, made once for several offers)."""
    made = made or next_version(kernel, proposal)
    verifier = verifier or Verifier.of(kernel)
    verification = verifier.check(made.kernel)
    if not verification.ok:
        bad = next((c for c in verification.checks if not c.ok), None)
        where = " ".join(f"{k}={v}" for k, v in bad.sizes.items()) if bad else ""
        raise Refused(f"the next version does not verify against {verification.against}"
                      + (f" at {where}: {bad.note}" if bad else ""))
    name = kernel.path.name
    answered = proposal.answers.message.text if proposal.answers is not None else None
    return Offer(proposal, name, made.text,
                 unified_diff(kernel.text, made.text, name, f"{name} (next version)"),
                 kernel.model_seconds, made.kernel.model_seconds, verification, answered,
                 made.kernel, verifier)


def proposal_for(kernel: KernelAtLevel, spec: str) -> Proposal:
    """The proposal `spec` names: `CODE@LINE` (the refinement that answers the finding
    of that code at that line) or `NAME[:ARGS]`."""
    if m := re.fullmatch(r"([a-z][a-z0-9-]*)@(\d+)", spec):
        code, line = m.group(1), int(m.group(2))
        found = [f for f in kernel.findings if f.code == code and f.span is not None
                 and f.span.line == line and f.function == kernel.function]
        if not found:
            raise Refused(f"no {code} finding at line {line} of {kernel.function} at "
                          f"{kernel.level}")
        # Several refinements may answer one change (swap-mapping and row-per-warp an
        # uncoalesced access): the first that makes a proposal, else the first refusal.
        refusals: list[Refused] = []
        for finding in found:
            for refinement in REFINEMENTS:
                if finding.change is not None and type(finding.change) in refinement.answers:
                    try:
                        return refinement.answer(kernel, finding)
                    except Refused as why:
                        refusals.append(why)
        if refusals:
            raise refusals[0]
        raise Refused(f"no refinement answers {code} findings yet")
    name, _, args = spec.partition(":")
    refinement = refinement_named(name)
    return refinement.propose(kernel, parse_args(refinement, args))


def list_offers(kernel: KernelAtLevel, progress: Callable[[str], None] | None = None,
                unweighed: bool = False, neutral: bool = False,
                verifier: Verifier | None = None, measuring: bool = False
                ) -> tuple[list[Offer], list[NotOffered]]:
    """Every refinement that applies to the kernel, made, checked, verified and
    weighed, best estimated gain first; and those it asks for that are not offered,
    with the reason. A proposal that answers no finding is offered only where the time
    model estimates it faster by MIN_GAIN; of proposals of one group (values of one
    constant) only the fastest is verified and offered. With `unweighed` (a search that
    measures, at a level whose model states no time) every proposal is verified and
    offered, each alternative of a group. With `neutral` (a search that looks a step
    ahead) a proposal the model estimates neither faster by MIN_GAIN nor slower by more
    than NEUTRAL_SLACK is offered too, and so are the refinements that only enable
    others (`Refinement.enables`): a step that gains nothing may open one that does.
    With `measuring` (a search that times its candidates) the proposals of a refinement
    the model cannot weigh (`Refinement.measured_only`) are verified and offered too;
    without it they are not, for that reason. `verifier`: the kernel's, where the
    caller has it (else made when first needed)."""
    tell = progress or (lambda _: None)
    offers: list[Offer] = []
    refused: list[NotOffered] = []
    chosen: list[NextVersion] = []
    groups: dict[str, list[NextVersion]] = {}
    for refinement in (r for r in REFINEMENTS if r.listed or (neutral and r.enables)):
        for item in refinement.proposals(kernel):
            if isinstance(item, Refused):
                refused.append(NotOffered(refinement.name, item.line, item.reason))
                continue
            if refinement.measured_only is not None and not (measuring or unweighed):
                refused.append(NotOffered(item.invocation, item.line,
                                          refinement.measured_only))
                continue
            tell(f"checking {item.invocation}")
            try:
                made = next_version(kernel, item)
            except Refused as why:
                refused.append(NotOffered(item.invocation, item.line, why.reason))
                continue
            # A change no finding asks for (a constant's value, an unrolled loop) is
            # offered only where the model estimates it faster: alternatives of one
            # group compete, the fastest is verified (one the model cannot weigh is
            # offered to the search that measures it).
            group = item.group or (item.invocation if item.answers is None else None)
            if group is None or unweighed or refinement.measured_only is not None:
                chosen.append(made)
            else:
                groups.setdefault(group, []).append(made)
    for group, versions in groups.items():
        best = _fastest(kernel, versions, neutral)
        if isinstance(best, str):
            refused.append(NotOffered(group, versions[0].proposal.line, best))
        else:
            chosen.append(best)
    for made in chosen:
        tell(f"verifying {made.proposal.invocation}")
        try:
            verifier = verifier or Verifier.of(kernel)
            offers.append(make_offer(kernel, made.proposal, verifier, made))
        except Refused as why:
            refused.append(NotOffered(made.proposal.invocation, made.proposal.line,
                                      why.reason))
    offers.sort(key=lambda o: -(o.gain or 0.0))
    return offers, refused


# A neutral step (list_offers' `neutral`) may be estimated this much slower than the
# kernel at most: the model's rounding, not a loss to buy a later gain with.
NEUTRAL_SLACK = 1.01


def _fastest(kernel: KernelAtLevel, versions: list[NextVersion], neutral: bool = False
             ) -> NextVersion | str:
    """The version the model estimates fastest, when it is faster than the kernel (with
    `neutral`, when it is not slower than it by more than NEUTRAL_SLACK); else why none
    is offered."""
    from mcl.feedback.analyses.timemodel import MIN_GAIN

    before = kernel.model_seconds
    timed = [(v.kernel.model_seconds, v) for v in versions
             if v.kernel.model_seconds is not None]
    if before is None or not timed:
        return (f"the time model states no time at {kernel.level} for these sizes: no "
                "estimate to offer it on")
    seconds, best = min(timed, key=lambda t: t[0] or 0.0)
    if neutral and seconds is not None and 0 < seconds <= before * NEUTRAL_SLACK:
        return best
    if seconds is None or seconds <= 0 or before / seconds < MIN_GAIN:
        return (f"the model estimates it no faster than the kernel by "
                f"{(MIN_GAIN - 1) * 100:.0f}% or more")
    return best
