"""`mcl refine`'s search: a beam search over sequences of refinements, each step every
offer `list_offers` makes of the versions kept (so every refinement in REFINEMENTS, the
values of named constants among them), ranked by the time model's estimate, each
candidate checked and verified as an offer is (docs/refinements.md, "mcl refine").

This closes the loop of the MCL paper's section 3 (feedback at a level, change the
kernel, check again) without a programmer: the feedback's findings name what to change,
the refinements change it, the model weighs it and the interpreter verifies it. With a
`timer` (the device, `mcl.commands.refine_timing`) the best candidates of each step are
run and ranked by their measured times instead, as the paper's Table II reports them.

A version already reached (the same text) is not expanded twice; the search stops after
`steps` steps, when its time budget is spent, or when no candidate is faster than the
best version so far by MIN_GAIN and none is one step later either: with a lookahead of
2 (the default), a step that the model calls neutral (a named count, a constant's value
that changes nothing yet) is taken when a refinement of it, one step later, is faster
than the best by MIN_GAIN. A translated kernel's block size, say, is a local the
refinements cannot change; named (name-counts, neutral), set-constant can choose a
smaller one. The look ahead expands at most LOOKAHEAD_WIDTH neutral versions, the
model's fastest first, within the time budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from mcl.diagnostics import MclError
from mcl.feedback.analyses.timemodel import MIN_GAIN
from mcl.feedback.emit import seconds_text
from mcl.refine.kernel import KernelAtLevel, load_kernel
from mcl.refine.offers import NEUTRAL_SLACK, NotOffered, Offer, list_offers, refinement_named
from mcl.refine.verification import Verification, Verifier

# Neutral versions of a step that the look ahead expands at most (each is a list of
# offers: every proposal of it checked and verified, seconds each).
LOOKAHEAD_WIDTH = 3


@dataclass(frozen=True)
class Measured:
    """A version timed on the device: `seconds` (median kernel time), or `problem`, why
    it has no time (it did not build, run, or its outputs differ from the reference)."""

    seconds: float | None
    device: str = ""
    problem: str | None = None


Timer = Callable[[KernelAtLevel], Measured]


@dataclass
class Version:
    """A version the search reached: its text, the version it refines (`parent`, None
    for the start), the refinement that made it (`offer`, None for the start), its
    estimated time and, where it was run, its measured time."""

    number: int
    text: str
    step: int
    parent: Version | None
    offer: Offer | None
    seconds: float | None
    kernel: KernelAtLevel | None = None
    measured: Measured | None = None

    @property
    def invocation(self) -> str:
        return self.offer.proposal.invocation if self.offer is not None else ""

    @property
    def summary(self) -> str:
        return self.offer.proposal.summary if self.offer is not None else ""

    @property
    def verification(self) -> Verification | None:
        return self.offer.verification if self.offer is not None else None

    @property
    def measured_seconds(self) -> float | None:
        return self.measured.seconds if self.measured is not None else None

    @property
    def estimated_gain(self) -> float | None:
        """The model's time of the version it refines over its own."""
        before = self.parent.seconds if self.parent is not None else None
        return before / self.seconds if before and self.seconds else None

    @property
    def measured_gain(self) -> float | None:
        before = self.parent.measured_seconds if self.parent is not None else None
        after = self.measured_seconds
        return before / after if before and after else None

    def chain(self) -> list[Version]:
        """The versions from the start to this one, in refinement order."""
        out: list[Version] = []
        at: Version | None = self
        while at is not None:
            out.append(at)
            at = at.parent
        return out[::-1]


@dataclass
class SearchResult:
    """The search's outcome: `best` (its chain is the series), every version reached,
    the number of candidates weighed, why it stopped and how long it took."""

    start: Version
    best: Version
    reached: list[Version]
    candidates: int
    stopped: str
    wall_s: float
    refused: int = 0
    steps_run: int = 0
    step_seconds: list[float] = field(default_factory=list)

    @property
    def series(self) -> list[Version]:
        return self.best.chain()


@dataclass(frozen=True)
class SearchLimits:
    """`steps` refinements at most in a sequence, `beam` versions kept per step, a
    time budget in seconds (None: none), checked before each version is expanded, and
    `lookahead`: 2 to take a neutral step where the next one gains, 1 not to."""

    steps: int = 4
    beam: int = 2
    budget_s: float | None = None
    lookahead: int = 2


def search(start: KernelAtLevel, limits: SearchLimits, timer: Timer | None = None,
           progress: Callable[[str], None] | None = None) -> SearchResult:
    """Refine `start` step by step: at each step every offer of every version kept is a
    candidate; the `beam` the model estimates fastest are kept (with `timer`, timed and
    ranked by the measured times), until no candidate beats the best so far by MIN_GAIN,
    now or (with `limits.lookahead` 2) one step past a neutral candidate."""
    tell = progress or (lambda _: None)
    began = time.perf_counter()
    root = Version(0, start.text, 0, None, None, start.model_seconds, start)
    if timer is not None:
        tell("timing the start on the device")
        root.measured = timer(start)
    reached, seen = [root], {start.text}
    frontier, best = [root], root
    candidates = refused = 0
    stopped = f"{limits.steps} step{'' if limits.steps == 1 else 's'} done"
    step_seconds: list[float] = []
    # Neutral steps are weighed by the model: where it states no time, none is taken.
    looks = limits.lookahead >= 2 and start.model_seconds is not None
    step = 0
    while step < limits.steps:
        step += 1
        step_began = time.perf_counter()
        found: list[Version] = []
        out_of_time = False
        for version in frontier:
            if _spent(began, limits):
                out_of_time = True
                break
            kernel = _kernel_of(version, start)
            # Where the model states no time, the device ranks: every proposal is a
            # candidate, not only those the model estimates faster.
            unweighed = timer is not None and kernel.model_seconds is None
            offers, not_offered = list_offers(
                kernel, _telling(tell, f"step {step}: {_name(version)}: "),
                unweighed=unweighed, neutral=(looks and step < limits.steps) or unweighed,
                verifier=_verifier_of(version, kernel), measuring=timer is not None)
            refused += len(not_offered)
            enabling = [o for o in offers
                        if unweighed and refinement_named(o.proposal.refinement).enables]
            new = _new_versions([o for o in offers if o not in enabling], version, step,
                                len(reached) + len(found), seen)
            new += _enabled(enabling, version, not_offered, step, start,
                            len(reached) + len(found) + len(new), seen, tell)
            found += new
        candidates += len(found)
        kept = _rank(found, limits.beam, start, timer, tell)
        reached.extend(found)
        leader = kept[0] if kept else None
        if leader is not None:
            tell(f"step {step}: {len(found)} new versions; the best, {_name(leader)} "
                 f"({leader.invocation}), {_speed_text(leader, best)}")
        if (leader is None or not _faster(leader, best)) and looks \
                and step < limits.steps and not out_of_time:
            ahead = _look_ahead(found, best, step, start, limits, began, reached, seen,
                                timer, tell)
            if ahead is not None:
                later, kept, more_refused = ahead
                candidates += len(later)
                refused += more_refused
                reached.extend(later)
                step_seconds.append(time.perf_counter() - step_began)
                step_began = time.perf_counter()
                step += 1
                leader = kept[0]
        step_seconds.append(time.perf_counter() - step_began)
        if leader is None:
            stopped = ("the time budget is spent" if out_of_time
                       else "no refinement applies to the versions kept")
            step -= 1
            break
        if not _faster(leader, best):
            stopped = f"no candidate is faster than the best version by {_percent()}"
            break
        best, frontier = leader, kept
        if out_of_time or _spent(began, limits):
            stopped = "the time budget is spent"
            break
    return SearchResult(root, best, reached, candidates, stopped,
                        time.perf_counter() - began, refused, step, step_seconds)


def _new_versions(offers: list[Offer], parent: Version, step: int, number: int,
                  seen: set[str]) -> list[Version]:
    """The offers' versions not reached before (their texts added to `seen`), numbered
    from `number`."""
    out: list[Version] = []
    for offer in offers:
        if offer.text in seen:
            continue
        seen.add(offer.text)
        out.append(Version(number + len(out), offer.text, step, parent, offer,
                           offer.seconds_after, offer.kernel))
    return out


def _enabled(offers: list[Offer], parent: Version, not_offered: list[NotOffered],
             step: int, start: KernelAtLevel, number: int, seen: set[str],
             tell: Callable[[str], None]) -> list[Version]:
    """Where the device ranks (the model states no time, so no look ahead weighs a
    neutral step): each offer of a refinement that only enables others (name-counts)
    is taken where it enables one that was not offered before it (`not_offered`); its
    version and the versions one step past it of those refinements are candidates of
    the same step, the enabling version among them so that it is timed and each step of
    a series has its measured gain. An enabling step that enables nothing is not a
    candidate (nothing to time it for)."""
    wanted = {n.what.partition(":")[0] for n in not_offered}
    out: list[Version] = []
    for offer in offers:
        if not wanted or offer.text in seen:
            continue
        version = Version(number + len(out), offer.text, step, parent, offer,
                          offer.seconds_after, offer.kernel)
        try:
            kernel = _kernel_of(version, start)
        except MclError:  # verified offers check; a failure here is a version to skip
            continue
        later, _ = list_offers(kernel, _telling(tell, f"step {step}: {_name(version)}: "),
                               unweighed=True, verifier=_verifier_of(version, kernel),
                               measuring=True)
        tried = seen | {offer.text}
        children = _new_versions([o for o in later if o.proposal.refinement in wanted],
                                 version, step, number + len(out) + 1, tried)
        if children:
            seen.update(tried)
            out += [version, *children]
    return out


def _look_ahead(found: list[Version], best: Version, step: int, start: KernelAtLevel,
                limits: SearchLimits, began: float, reached: list[Version], seen: set[str],
                timer: Timer | None, tell: Callable[[str], None]
                ) -> tuple[list[Version], list[Version], int] | None:
    """One step past the neutral candidates of `step` (estimated no slower than the best
    by NEUTRAL_SLACK, the model's fastest first, LOOKAHEAD_WIDTH at most): the versions
    reached there, the kept of them, and the proposals refused, where the kept's best is
    faster than `best` by MIN_GAIN; else None (nothing of it is kept)."""
    if best.seconds is None:
        return None
    neutral = sorted((v for v in found if v.seconds is not None
                      and v.seconds <= best.seconds * NEUTRAL_SLACK),
                     key=lambda v: v.seconds or 0.0)[:LOOKAHEAD_WIDTH]
    if not neutral:
        return None
    tell(f"step {step}: no candidate is faster by {_percent()}; looking one step past "
         f"{len(neutral)} neutral version{'' if len(neutral) == 1 else 's'}: "
         + ", ".join(f"{_name(v)} ({v.invocation})" for v in neutral))
    later: list[Version] = []
    refused = 0
    tried = set(seen)
    for version in neutral:
        if _spent(began, limits):
            break
        try:
            kernel = _kernel_of(version, start)
        except MclError:  # verified offers check; a failure here is a version to skip
            continue
        offers, not_offered = list_offers(
            kernel, _telling(tell, f"step {step + 1} (ahead): {_name(version)}: "),
            verifier=_verifier_of(version, kernel), measuring=timer is not None)
        refused += len(not_offered)
        later += _new_versions(offers, version, step + 1,
                               len(reached) + len(later), tried)
    kept = _rank(later, limits.beam, start, timer, tell)
    if not kept or not _faster(kept[0], best):
        tell(f"step {step + 1} (ahead): nothing faster than the best version by "
             f"{_percent()} one step past the neutral versions")
        return None
    seen |= tried
    tell(f"step {step + 1}: {len(later)} new versions one step past the neutral ones; "
         f"the best, {_name(kept[0])} ({kept[0].invocation}), "
         f"{_speed_text(kept[0], best)}")
    return later, kept, refused


def _telling(tell: Callable[[str], None], prefix: str) -> Callable[[str], None]:
    return lambda what: tell(prefix + what)


def _spent(began: float, limits: SearchLimits) -> bool:
    return limits.budget_s is not None and time.perf_counter() - began >= limits.budget_s


def _kernel_of(version: Version, start: KernelAtLevel) -> KernelAtLevel:
    """The version checked at the level: the offer's (made from the same text, path,
    level, sizes and reference as this load would be), else loaded once, when it is
    kept or expanded."""
    if version.kernel is None:
        version.kernel = load_kernel(start.path, start.level, start.library,
                                     start.include_dirs, start.values, start.function,
                                     text=version.text, reference=start.reference)
    return version.kernel


def _verifier_of(version: Version, kernel: KernelAtLevel) -> Verifier | None:
    """The verifier of the version's offers: its parent's cases, which it passed
    (`Verifier.passed_by`), else None (list_offers makes one)."""
    offer = version.offer
    if offer is None or offer.verifier is None:
        return None
    return offer.verifier.passed_by(kernel, offer.verification)


def _rank(found: list[Version], beam: int, start: KernelAtLevel, timer: Timer | None,
          tell: Callable[[str], None]) -> list[Version]:
    """The `beam` candidates to keep: the fastest by the model; with `timer` each is
    run and the kept are ordered by their measured times (one that does not run or
    gives wrong outputs is dropped). With `timer`, every candidate the model gives no
    time (a loop bound read from the data, a level without a model) or cannot weigh
    (`Refinement.measured_only`) is timed too, after the others: nothing else ranks it."""
    ranked = sorted((v for v in found if v.seconds is not None or timer is not None),
                    key=lambda v: (_unweighed(v), v.seconds or 0.0))
    kept: list[Version] = []
    for version in ranked:
        if len(kept) >= beam and not (timer is not None and _unweighed(version)):
            continue
        try:
            _kernel_of(version, start)
        except MclError:  # verified offers check; a failure here is a version to skip
            continue
        if timer is not None:
            tell(f"timing {_name(version)} ({version.invocation}) on the device")
            version.measured = timer(_kernel_of(version, start))
            if version.measured.seconds is None:
                continue
        kept.append(version)
    if timer is not None:
        kept.sort(key=lambda v: v.measured_seconds or 0.0)
    return kept[:beam]


def _unweighed(version: Version) -> bool:
    """Does the model give the version no time, or a time it cannot weigh (its step a
    refinement whose gain the model does not see)?"""
    return version.seconds is None or (
        version.offer is not None
        and refinement_named(version.offer.proposal.refinement).measured_only is not None)


def _faster(candidate: Version, best: Version) -> bool:
    """Is `candidate` faster than `best` by MIN_GAIN (the time model's threshold for a
    suggestion worth making): measured where both were run, by the model otherwise."""
    a, b = candidate.measured_seconds, best.measured_seconds
    if a is None or b is None:
        a, b = candidate.seconds, best.seconds
    return a is not None and b is not None and a > 0 and b / a >= MIN_GAIN


def _speed_text(candidate: Version, best: Version) -> str:
    parts = []
    if candidate.seconds and best.seconds:
        parts.append(f"estimated {best.seconds / candidate.seconds:.2f}x")
    if candidate.measured_seconds and best.measured_seconds:
        # the times too: a search cut short still leaves what it measured in its log
        parts.append(f"measured {best.measured_seconds / candidate.measured_seconds:.2f}x "
                     f"({seconds_text(candidate.measured_seconds)} against "
                     f"{seconds_text(best.measured_seconds)})")
    return (" and ".join(parts) or "no time") + " the best so far"


def _percent() -> str:
    return f"{(MIN_GAIN - 1) * 100:.0f}%"


def _name(version: Version) -> str:
    return f"version {version.number}"
