"""The roofline: which roof bounds a kernel at its level, and what it can attain.

The paper names, as future work (section 8), telling the programmer how close a kernel is
to what the hardware can do. With the operation statistics of section 6.2 and the peaks a
description states (mcl.hdl.peak, docs/hardware.md) the roofline model (Williams et al.,
CACM 2009) answers it: the kernel's floating-point operations over the bytes it moves to
and from each memory level is its arithmetic intensity against that level; the level
bounds it at intensity × bandwidth, the execution units at their peak; the lowest of
these roofs is the performance it can attain, and the kernel needs at least the largest
of the times they imply.

- operations: the computational instructions of opstats (2nmp for matmul);
- bytes per memory level: opstats' loads and stores of each memory space, times the
  element size of the arrays in it (registers and spaces whose level states no bandwidth
  are no roof). Where a cache holds the space, only the compulsory traffic must reach
  the level (each array parameter once per direction, at most what its accesses move),
  so that "at least" is a lower bound whatever the caches serve; the count of every
  access stays as the worst case (`bytes_<space>_no_reuse`).

`roofline_of` is the figures, for `mcl run`, `mcl report --run` and the plots
(mcl.report.roofline_plot); the analysis below is the feedback message (code `roofline`).
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import sympy

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.budget import budget
from mcl.feedback.emit import Emitter, seconds_text
from mcl.feedback.facts.costs import COMPUTATIONAL, DATA, Costs, function_costs
from mcl.feedback.facts.counting import lowest_terms, tidy
from mcl.feedback.facts.sizes import parameter_bytes, space_and_size
from mcl.feedback.facts.symbolic import at_least, identical
from mcl.feedback.findings import (
    Finding,
    RooflineFinding,
    SpaceTraffic,
    code_of,
    declaration,
)
from mcl.feedback.messages import FeedbackSeverity
from mcl.feedback.phrases import if_lines
from mcl.feedback.values import evaluate
from mcl.hdl.peak import bandwidth, peak_flops
from mcl.mcpl import ast

if TYPE_CHECKING:
    from mcl.mcpl.checked import CheckedProgram

# The code of this analysis, as its record type declares it (mcl.feedback.findings; the
# catalogue is docs/feedback.md).
MESSAGE_CODES = (declaration(RooflineFinding),)


COMPUTE = "compute"


@dataclass(frozen=True)
class Level:
    """One memory level the kernel uses: the bytes it moves there (symbolic) and the
    level's bandwidth in bytes/s."""

    space: str
    bytes: Any
    bandwidth: float
    no_reuse: Any = None  # the bytes when every access reached the level (worst case)
    # the arrays of the level read through a subscript that depends on data: `bytes`
    # leaves them out, so it is a lower bound of the compulsory traffic
    uncounted: tuple[str, ...] = ()


@dataclass(frozen=True)
class Roofline:
    """The roofs of a kernel. Where an `if` the counts cannot decide (a condition on
    data) holds work, the counts are upper bounds (every such branch taken) and `least`
    is the roofline of the lower counts (every such branch at its smaller count, the
    skip of an `if` without `else`): the least time, the bound and the attainable
    performance at given sizes are then its, so that "at least" is never built from an
    upper bound."""

    level: str  # the hardware description
    dtype: str  # "float" or "double"
    flops: Any  # symbolic
    peak: float  # flop/s
    levels: tuple[Level, ...]
    approximate: bool = False  # the counts are upper bounds
    least: Roofline | None = None
    undecided: tuple[int, ...] = ()  # the lines of the `if`s the counts cannot decide

    def intensity(self, level: Level) -> Any:
        return lowest_terms(self.flops, level.bytes)

    def undefined(self) -> bool:
        """Has a count or an intensity no value (SymPy's `nan` or `zoo`, a division by
        zero in it)? Then no roof can be compared with the others."""
        return any(_undefined(x) for x in (self.flops, *(lv.bytes for lv in self.levels),
                                             *(self.intensity(lv) for lv in self.levels)))

    def times(self, values: Mapping[str, Any]) -> dict[str, float] | None:
        """Seconds each roof needs at `values` (None when a size is missing or a count
        has no finite value there)."""
        out: dict[str, float] = {}
        for name, amount, rate in self._roofs():
            number = evaluate(amount, values).numeric
            if number is None or not math.isfinite(float(number)):
                return None
            out[name] = float(number) / rate if rate > 0 else math.inf
        return out

    def bound(self, values: Mapping[str, Any]) -> str | None:
        """`compute` or the memory space whose roof is lowest at `values` (whose time is
        the longest: the highest of the times the roofs imply); without values, the one
        every size gives (a constant intensity), else None. Where some counts are
        bounds, the lower counts' roof at `values`; without them, the one the upper
        counts' intensities give (every undecided branch taken)."""
        if self.least is not None and self.least.times(values) is not None:
            return self.least.bound(values)
        times = self.times(values)
        if times is not None:
            return max(times, key=lambda k: times[k])
        if self.flops == 0:
            return None  # no arithmetic: which memory bounds it depends on the sizes
        per_flop = {}
        for name, amount, rate in self._roofs():
            ratio = lowest_terms(amount, self.flops) / rate
            if ratio.free_symbols:
                return None
            per_flop[name] = float(ratio)
        return max(per_flop, key=lambda k: per_flop[k])

    def min_seconds(self, values: Mapping[str, Any]) -> float | None:
        """The least time the kernel needs: the largest of the times its roofs imply
        (each roof is a lower bound of the time; the highest one is the best), of the
        lower counts where some are bounds (`least`)."""
        if self.least is not None:
            return self.least.min_seconds(values)
        return self.most_seconds(values)

    def most_seconds(self, values: Mapping[str, Any]) -> float | None:
        """The largest of the times the roofs of these counts imply (for upper-bound
        counts, the least time if every undecided branch is taken)."""
        times = self.times(values)
        return max(times.values()) if times else None

    def no_reuse(self) -> Roofline | None:
        """The worst case: every access reaches its level, as if no cache served any
        reuse (None when no level has compulsory traffic below its accesses)."""
        least = self.least.no_reuse() or self.least if self.least is not None else None
        if all(lv.no_reuse is None for lv in self.levels) and least is self.least:
            return None
        levels = tuple(Level(lv.space, lv.no_reuse if lv.no_reuse is not None else lv.bytes,
                             lv.bandwidth) for lv in self.levels)
        return Roofline(self.level, self.dtype, self.flops, self.peak, levels,
                        self.approximate, least, self.undecided)

    def attainable(self, values: Mapping[str, Any]) -> float | None:
        """flop/s at the lowest roof (None when a size is missing)."""
        if self.least is not None:
            return self.least.attainable(values)
        seconds = self.min_seconds(values)
        flops = evaluate(self.flops, values).numeric
        if seconds is None or flops is None:
            return None
        return float(flops) / seconds if seconds > 0 else self.peak

    def fraction(self, values: Mapping[str, Any], seconds: float) -> float | None:
        """How much of the attainable performance a run of `seconds` reached: the least
        time the roofs allow over the time measured (the same operations either way)."""
        least = self.min_seconds(values)
        if least is None or seconds <= 0:
            return None
        return least / seconds

    def attainable_symbolic(self) -> Any:
        """GFLOP/s at the lowest roof, as a formula in the kernel's sizes; None where
        the roofs cannot be compared."""
        return _attainable(self)

    def _roofs(self) -> list[tuple[str, Any, float]]:
        return [(COMPUTE, self.flops, self.peak),
                *((lv.space, lv.bytes, lv.bandwidth) for lv in self.levels)]


# The roofs are formulas in the kernel's sizes: the least of them is computed once per
# process, as their ratios are (`lowest_terms`).
@functools.lru_cache(maxsize=256)
def _attainable(roof: Roofline) -> Any:
    """`Roofline.attainable_symbolic`. A roof that is no number SymPy can compare (`nan`
    where a count divides by zero, an unlimited bandwidth times an intensity of 0) made
    `sympy.Min` raise: no figure instead, never a wrong one."""
    if roof.undefined():
        return None  # `2*n / zoo` is an intensity of 0: a wrong figure
    roofs = [sympy.Float(roof.peak * 1e-9, 4)]
    roofs += [sympy.Float(lv.bandwidth * 1e-9, 4) * roof.intensity(lv) for lv in roof.levels]
    if len(roofs) == 1:
        return roofs[0]
    if any(_undefined(r) for r in roofs):
        return None
    try:
        return sympy.Min(*roofs)
    except (TypeError, ValueError):  # not comparable: SymPy cannot order the roofs
        return None


def _undefined(e: Any) -> bool:
    return isinstance(e, sympy.Basic) and e.has(sympy.nan, sympy.zoo)


def roofline_of(function: ast.Function, checked: CheckedProgram, hwd: Any,
                memory_only: bool = False, values: Mapping[str, Any] | None = None
                ) -> Roofline | None:
    """The roofs of `function` of a checked program at its level `hwd`, or None where the
    description states no peak (for the kernel's floating-point type) or the kernel does
    no arithmetic; with `memory_only`, a kernel without arithmetic that moves data gets
    its memory roofs (no intensity to plot, but a bound: its compulsory traffic over the
    bandwidth). `values`: the sizes it will be evaluated at, which decide the `if`s that
    take the same branch in every iteration there (`function_costs`); without them the
    least time counts every `if` the counts cannot collapse at its smaller branch."""
    return context_roofline(AnalysisContext(function, checked, hwd, values or {}), memory_only)


def context_roofline(ctx: AnalysisContext, memory_only: bool = False) -> Roofline | None:
    """`roofline_of` for an analysis context (its facts shared with the other analyses)."""
    hwd = ctx.hwd
    peak = peak_flops(hwd, _dtype(ctx.function))
    if peak is None or not math.isfinite(peak):
        return None
    costs = function_costs(ctx.facts, ctx.values)
    upper = _roofs(ctx, costs, peak, memory_only)
    undecided = costs.undecided()
    if upper is None or not undecided:
        return upper
    # Every count inside an undecided `if` is an upper bound: the least time must come
    # from the lower counts (each such `if` at its smaller branch).
    least = _roofs(ctx, function_costs(ctx.facts, ctx.values, least=True), peak, True)
    lines = tuple(sorted({g.span.line for g in undecided if g.span is not None}))
    return replace(upper, least=least, undecided=lines) if least is not None else upper


def _roofs(ctx: AnalysisContext, costs: Costs, peak: float, memory_only: bool
           ) -> Roofline | None:
    """The roofs of one set of counts (`context_roofline`)."""
    hwd, facts = ctx.hwd, ctx.facts
    flops = costs.total(COMPUTATIONAL)
    if flops == 0 and not memory_only:
        return None
    moved: dict[str, Any] = defaultdict(lambda: sympy.Integer(0))
    per_param: dict[str, Any] = defaultdict(lambda: sympy.Integer(0))
    for (cat, _kind, _unit, key), count in costs.entries.items():
        if cat != DATA or key is None:
            continue
        space, size = space_and_size(facts, key)
        moved[space] += count * size
        if key[0] == "param":
            per_param[key[1]] += count * size
    cached = {s for m in hwd.caches() for s in m.spaces}
    irregular = _irregular(facts)
    compulsory = _compulsory(facts, per_param, cached, irregular)
    levels = []
    for space, amount in moved.items():
        bw = bandwidth(hwd, space)
        if bw is None or tidy(amount) == 0:
            continue  # registers, or a level without a stated bandwidth
        least = compulsory.get(space)
        if least == 0:
            # Every array of the space is read through a subscript the analysis cannot
            # follow: no byte of it is known to be compulsory, and an intensity against
            # 0 bytes is no roof (it printed as SymPy's infinity, `zoo`). The accesses
            # as counted stand instead, as for a level no cache holds.
            least = None
        if least is None or identical(least, amount):
            levels.append(Level(space, tidy(amount), bw.bytes_per_s))
        else:
            uncounted = tuple(sorted(name for name in irregular if name in per_param
                                     and getattr(facts.param(name), "space", None) == space))
            levels.append(Level(space, tidy(least), bw.bytes_per_s, tidy(amount),
                                uncounted))
    if flops == 0 and not levels:
        return None
    return Roofline(hwd.name, _dtype(ctx.function), flops, peak, tuple(levels),
                    bool(costs.approximations))


def _irregular(facts: Any) -> set[str]:
    """The array parameters read or written through a subscript that depends on data
    (`x[cols[k]]`)."""
    return {a.binding.root.name for a in facts.accesses
            if a.binding.root.kind == "param"
            and any(facts.evaluator.is_opaque(s) for i in a.indices
                    for s in getattr(facts.evaluator.sym(i, a.item.scope),
                                     "free_symbols", ()))}


def _compulsory(facts: Any, per_param: Mapping[str, Any], cached: set[str],
                irregular: set[str]) -> dict[str, Any]:
    """Per space that a cache holds: the bytes that must move between the level and the
    units however well the caches serve the reuse (Williams et al.'s "compulsory"
    traffic): each array parameter once in every direction the kernel uses it, at most
    what its accesses move; a parameter read through a subscript that depends on data
    (`x[cols[k]]`) may touch only part of the array, so it counts nothing; the space's
    other arrays as counted."""
    out: dict[str, Any] = {}
    whole = {name: (mode, size) for name, mode, size in parameter_bytes(facts)}
    for space in cached:
        total = sympy.Integer(0)
        for name, counted in per_param.items():
            p = facts.param(name)
            if p is None or p.space != space:
                continue
            if name in irregular or name not in whole:
                continue
            mode, size = whole[name]
            directions = ("r" in mode) + ("w" in mode)
            whole_bytes = directions * size
            # each element moved once at least: the array's bytes wherever the accesses
            # move as much (every probed size), else the smaller of the two
            total += whole_bytes if at_least(counted, whole_bytes) else \
                sympy.Min(counted, whole_bytes)
        out[space] = total
    return out


def _dtype(function: ast.Function) -> str:
    """float64 when an array parameter holds doubles (the kernel computes in double)."""
    for p in function.params:
        t = p.type.element if isinstance(p.type, ast.ArrayType) else p.type
        if isinstance(t, ast.Prim) and t.name == "double":
            return "double"
    return "float"


# ----------------------------------------------------------------------------- message


def has_peak(hwd: Any) -> bool:
    return peak_flops(hwd) is not None


def roofline(ctx: AnalysisContext) -> list[Finding]:
    """Arithmetic intensity against each memory level, the bound and the attainable
    performance at the given sizes."""
    roof = context_roofline(ctx, memory_only=True)
    if roof is None:
        return []
    if roof.undefined():
        return [Finding(Emitter(ctx.facts, "roofline", ctx.values).message(
            code_of(RooflineFinding), FeedbackSeverity.INFO,
            f"roofline at {roof.level}: cannot be decided: a count has no value (it "
            "divides by zero)", ctx.function.span, approximate=True))]
    # The figures come from opstats' counts, already made; what is left is display
    # (factoring a long formula), which gets a budget of its own so that the analyses
    # before this one, which spent the kernel's, do not leave it unfactored.
    with budget():
        return [_message(roof, Emitter(ctx.facts, "roofline", ctx.values), ctx.function,
                         ctx.values)]


def _message(roof: Roofline, emit: Emitter, function: ast.Function,
             values: Mapping[str, Any]) -> RooflineFinding:
    figures: dict[str, Any] = {"flops": roof.flops}
    moves = roof.flops == 0  # data movement only: no intensity, a bound all the same
    against = []
    for lv in roof.levels:
        figures[f"bytes_{lv.space}"] = lv.bytes
        if not moves:
            figures[f"intensity_{lv.space}"] = roof.intensity(lv)
        compulsory = ""
        if lv.no_reuse is not None:  # the worst case: no cache serves any reuse
            figures[f"bytes_{lv.space}_no_reuse"] = lv.no_reuse
            compulsory = ", compulsory traffic"
            if lv.uncounted:  # the figure is then a lower bound: say so and why
                compulsory += (f", a lower bound: {', '.join(lv.uncounted)}, read "
                               "through a subscript that depends on data, not counted")
        amount = f"{{bytes_{lv.space}}} B to" if moves else \
            f"{{intensity_{lv.space}}} flop/B against"
        against.append(f"{amount} {lv.space} ({rate_text(lv.bandwidth, 'B/s')}{compulsory})")
    attainable_gflops = None if moves else roof.attainable_symbolic()
    if attainable_gflops is not None:
        figures["attainable_gflops"] = attainable_gflops
    bound = roof.bound(values)
    seconds = roof.min_seconds(values)
    text = (f"roofline at {roof.level} ({rate_text(roof.peak, 'FLOP/s')} {roof.dtype}): "
            + ("no arithmetic, data movement only: " + ", ".join(against) if moves
               else "arithmetic intensity " + ", ".join(against) if against
               else "no memory level with a bandwidth") + "; ")
    hint = None
    if bound is None:
        text += "the bound depends on the sizes"
        needs = sorted(({s.name for s in sympy.sympify(roof.flops).free_symbols}
                        | {s.name for lv in roof.levels for s in lv.bytes.free_symbols})
                       - set(values))  # never ask again for a value that was given
        hint = "give the sizes for the bound: " + " ".join(f"-D {n}=..." for n in needs)
    else:
        text += f"bound by {describe_bound(bound)}"
    if seconds is not None:
        attainable = roof.attainable(values) or 0.0
        # With undecided branches the attainable rate has no meaning: the flops counted
        # and the least time are of different paths.
        text += ", at least " if moves or roof.least is not None else (
            f", attainable {rate_text(attainable, 'FLOP/s')} "
            f"({percent(attainable / roof.peak)} of peak), at least ")
        text += seconds_text(seconds)
        if _undecided_matters(roof, values):
            text += (f" with the smaller branch of {if_lines(roof.undecided)} in every unit "
                     f"(the counts cannot decide {'it' if len(roof.undecided) == 1 else 'them'})")
        worst = roof.no_reuse()
        worst_seconds = worst.min_seconds(values) if worst is not None else None
        if worst_seconds is not None and worst_seconds > seconds * 1.01:
            text += (f" ({seconds_text(worst_seconds)} in the worst case, if no cache "
                     "served any reuse)")
        text += _larger_text(roof, values)
    if not moves and attainable_gflops is None:
        text += "; the least roof as a formula in the sizes cannot be decided"
    if roof.least is not None and seconds is not None:
        # the lower counts' figures at the sizes given, which the time model reads for
        # its least estimate
        figures["flops_least"] = roof.least.flops
        for lv in roof.least.levels:
            figures[f"bytes_{lv.space}_least"] = lv.bytes
            if lv.no_reuse is not None:
                figures[f"bytes_{lv.space}_no_reuse_least"] = lv.no_reuse
    message = emit.message(code_of(RooflineFinding), FeedbackSeverity.INFO, text,
                           function.span, figures, approximate=roof.approximate, hint=hint)
    # the figures as the message states them (evaluated at the sizes given)
    stated = message.value_map
    least = None
    if roof.least is not None and "flops_least" in stated:
        least = (stated["flops_least"], tuple(
            SpaceTraffic(lv.space, stated[f"bytes_{lv.space}_least"],
                         stated.get(f"bytes_{lv.space}_no_reuse_least"))
            for lv in roof.least.levels))
    return RooflineFinding(message, flops=stated["flops"], traffic=tuple(
        SpaceTraffic(lv.space, stated[f"bytes_{lv.space}"],
                     stated.get(f"bytes_{lv.space}_no_reuse")) for lv in roof.levels),
        least_flops=least[0] if least else None, least_traffic=least[1] if least else None,
        undecided=roof.undecided)


def _undecided_matters(roof: Roofline, values: Mapping[str, Any]) -> bool:
    """Do the undecided `if`s change the least time by more than 1% (a last-row halo
    under one does not: the message then states the least time alone)?"""
    least, most = roof.min_seconds(values), roof.most_seconds(values)
    return roof.least is not None and (least is None or most is None or least < 0.99 * most)


def _larger_text(roof: Roofline, values: Mapping[str, Any]) -> str:
    """Where the counts cannot decide an `if`: the least time if every unit took the
    larger branch instead ("" where every `if` is decided)."""
    if not _undecided_matters(roof, values):
        return ""
    most = roof.most_seconds(values)
    bound = replace(roof, least=None).bound(values)
    if most is None or bound is None:
        return ""
    return f"; {seconds_text(most)}, bound by {describe_bound(bound)}, with the larger"


def describe_bound(bound: str) -> str:
    return "the arithmetic peak (compute)" if bound == COMPUTE else \
        f"{bound} memory bandwidth"


def percent(x: float) -> str:
    """63%, 1.2%, 0.042%, 0.000099%: two significant digits below 10%, never in
    exponent notation (a tiny kernel's share of its roof is still read as a percentage)."""
    if x >= 0.1:
        return f"{x:.0%}"
    value = x * 100
    if value <= 0 or not math.isfinite(value):
        return f"{value:g}%"
    value = float(f"{value:.2g}")  # two significant digits, then written out in full
    digits = max(0, 1 - math.floor(math.log10(value)))
    text = f"{value:.{digits}f}"
    return (text.rstrip("0").rstrip(".") if "." in text else text) + "%"


def rate_text(x: float, unit: str) -> str:
    """66.9 TFLOP/s, 3.35 TB/s, 837 GFLOP/s."""
    if math.isinf(x):
        return f"unlimited {unit}"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if x >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"
