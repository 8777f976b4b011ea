"""`mcl tune --strategy model`: mcl's time model ranks every configuration of the space
before anything runs, and Kernel Tuner measures them in that order until the
measurements stop improving (docs/tuning.md, "Guided by the time model").

The model (mcl.feedback.analyses.timemodel) estimates a kernel from the figures the
feedback states at its leaf -- traffic, occupancy, bank conflicts, latency -- and those
figures depend on the named constants (tile sizes, warps per block) the space varies.
A configuration is estimated from the program translated to the leaf once, with its
constants set as code generation sets them (the `override-constants` pass): nothing is
parsed, checked or translated again per configuration.

The stop rule: measure in rank order and stop after `patience` measurements in a row
that beat the fastest verified time so far by less than `MIN_IMPROVEMENT` (or when the
budget, `--max-fevals`, is spent). How well the model ranked is stated as Spearman's
rank correlation between its estimates and the measured times of the configurations
measured.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from mcl.fork_safety import single_threaded
from mcl.identity import Ref

if TYPE_CHECKING:
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.checked import CheckedProgram
    from mcl.mcpl.loader import Program
    from mcl.mcpl.sidetables import Binding
    from mcl.tune.search import Key, Space

STRATEGY = "model"
BRUTE_FORCE = "brute_force"  # Kernel Tuner's exhaustive strategy, what `auto` falls back to
# Measurements in a row without a new best (by MIN_IMPROVEMENT) before the search stops.
PATIENCE = 8
# A measurement improves on the best when it is faster by more than this share: the
# timing noise of a few repeated runs must not keep the search going.
MIN_IMPROVEMENT = 0.01


# `--strategy auto` takes the model-guided search on a space of at least this many
# configurations. Below it the search saves little: its stop rule measures PATIENCE
# configurations past the best one, and ranking takes about as long as measuring a
# small space (on an H100, 2026-12-07: 51 configurations of matmul ranked in 10 s,
# measured exhaustively in 66 s; 9 of gesummv ranked in 8.7 s, measured in 1.1 s).
AUTO_MODEL_MIN = 25


def auto_strategy(configurations: int, hwd: Any, asked_for_model: bool) -> tuple[str, str]:
    """What `--strategy auto` (the default) runs, and why: the model-guided search where
    the user gave its options (--patience, --max-fevals), or where the leaf has a time
    model and the space is large enough for its ranking to pay; brute force otherwise."""
    from mcl.feedback.analyses.timemodel import has_time_model

    if asked_for_model:
        return STRATEGY, "--patience and --max-fevals belong to the model-guided search"
    if not has_time_model(hwd):
        return BRUTE_FORCE, f"{hwd.name} has no time model to rank with"
    if configurations >= AUTO_MODEL_MIN:
        return STRATEGY, (f"{configurations} configurations allowed: the time model's ranking "
                       f"pays from {AUTO_MODEL_MIN}")
    return BRUTE_FORCE, (f"{configurations} configurations allowed: the time model's "
                         f"ranking pays from {AUTO_MODEL_MIN}")


@dataclass(frozen=True)
class Ranking:
    """The time model's estimate of each configuration (None: the model states no time
    for it), the configurations best-estimated first (those without an estimate last,
    in the space's order), and the seconds the ranking took."""

    seconds: dict[Key, float | None]
    order: list[Key]
    elapsed_s: float


def with_constants(checked: CheckedProgram, target: str, library: HwdLibrary,
                   config: Mapping[str, Any]) -> CheckedProgram:
    """`checked` with its named constants set to `config` by code generation's own
    `override-constants` pass, and every name of a changed constant bound to its new
    declaration: the feedback finds a name's declaration through the checker's
    bindings (mcl.feedback.facts.declarations), and the pass keeps the old one there."""
    from mcl.codegen.passes import LoweringContext, override_named_constants

    checked = replace(checked, tables=checked.tables.copy())  # the caller's stay as they were
    out = override_named_constants(checked, LoweringContext(target, library, dict(config)))
    tables = out.tables
    moved: dict[Binding, Binding] = {}
    for name, module in checked.program.modules.items():
        new_module = out.program.modules[name]
        for old, new in zip(module.constants, new_module.constants, strict=True):
            bound = tables.binding_declared_by(old)
            if new is not old and bound is not None:
                moved[bound] = tables.declared[Ref(new)] = replace(bound, node=new)
    for use, bound in list(tables.bindings.items()):
        if (now := moved.get(bound)) is not None:
            tables.bindings[use] = now
    return out


def rank_space(program: Program, function: str, target: str, library: HwdLibrary,
               space: Space, values: Mapping[str, Any],
               advance: Callable[[], None] | None = None, jobs: int | None = None
               ) -> Ranking:
    """Estimate every configuration of `space` (its candidates) at leaf `target` with the
    sizes and scalar arguments `values`, in `jobs` processes (default: one per core this
    process may use); `advance` is called after each."""
    from mcl import pipeline
    from mcl.feedback.analyses.timemodel import has_time_model

    start = time.perf_counter()
    configs = {key: candidate.config for key, candidate in space.candidates.items()}
    if not has_time_model(library.get(target)):  # no estimate to wait for: the space's order
        return Ranking(dict.fromkeys(configs), list(configs), time.perf_counter() - start)
    at_leaf = pipeline.lower(program, target, library)
    job = _Job(at_leaf, function, target, library, dict(values))
    jobs = min(jobs or len(os.sched_getaffinity(0)), len(configs))
    seconds: dict[Key, float | None] = {}
    pool = _worker_pool(job, jobs) if jobs > 1 else None
    if pool is None:
        for key, config in configs.items():
            seconds[key] = job.estimate(config)
            if advance is not None:
                advance()
    else:
        with pool:
            for key, estimate in pool.imap_unordered(_estimate_in_worker, configs.items()):
                seconds[key] = estimate
                if advance is not None:
                    advance()
        seconds = {key: seconds[key] for key in configs}  # the space's order again
    known = sorted((k for k, s in seconds.items() if s is not None),
                   key=lambda k: seconds[k] or 0.0)  # sorted() is stable: ties in space order
    order = known + [k for k in seconds if seconds[k] is None]
    return Ranking(seconds, order, time.perf_counter() - start)


@dataclass(frozen=True)
class _Job:
    """What estimating one configuration needs: the program at the leaf, once."""

    at_leaf: CheckedProgram
    function: str
    target: str
    library: HwdLibrary
    values: dict[str, Any]

    def estimate(self, config: Mapping[str, Any]) -> float | None:
        """The time model's seconds for `config` (None: it states none)."""
        from mcl.feedback.findings import TimeEstimate, first
        from mcl.feedback.registry import analyse_findings

        configured = with_constants(self.at_leaf, self.target, self.library, config)
        found = configured.program.main.function(self.function)
        if found is None:
            return None
        estimate = first(analyse_findings(found, configured, self.library.get(self.target),
                                          self.values), TimeEstimate, self.function)
        return estimate.seconds if estimate is not None else None


_job: _Job | None = None  # the job of a worker process of `rank_space`


def _worker_pool(job: _Job, jobs: int) -> Any:
    """`jobs` worker processes that hold `job`, or None where they cannot.

    Each configuration's analysis is independent and takes a good part of a second: the
    cores share them. A process with one thread forks its workers, which inherit the
    translated program. `mcl tune` ranks with the device open (an OpenCL or CUDA
    runtime's threads) and a progress bar's thread: a forked child would keep a lock one
    of them held for ever (mcl.fork_safety), so the workers then come from a fork server,
    a fresh process, and receive the job pickled (a few hundred KB). A program that does
    not pickle (a local function somewhere in its tables) gets no workers."""
    if single_threaded():
        return multiprocessing.get_context("fork").Pool(
            jobs, initializer=_install_job, initargs=(job,))
    try:
        blob = pickle.dumps(job)
    except (pickle.PicklingError, AttributeError, TypeError):
        return None
    return multiprocessing.get_context("forkserver").Pool(
        jobs, initializer=_install_job, initargs=(blob,))


def _install_job(job: _Job | bytes) -> None:
    global _job
    _job = pickle.loads(job) if isinstance(job, bytes) else job


def _estimate_in_worker(item: tuple[Key, Mapping[str, Any]]) -> tuple[Key, float | None]:
    assert _job is not None
    return item[0], _job.estimate(item[1])


@dataclass
class RankedQueue:
    """The configurations of a ranking handed out best-estimated first (its `pull`, for
    `mcl.tune.search.Pulled`), until `patience` measurements in a row bring no new best
    or `budget` configurations were measured."""

    order: Sequence[Key]
    patience: int = PATIENCE
    budget: int | None = None
    best_s: float = math.inf
    since_best: int = 0
    handed: int = 0
    measured: list[tuple[Key, float]] = field(default_factory=list)

    def pull(self) -> Key | None:
        if self.handed >= len(self.order) or self.since_best >= self.patience:
            return None
        if self.budget is not None and self.handed >= self.budget:
            return None
        self.handed += 1
        return self.order[self.handed - 1]

    def told(self, key: Key, seconds: Any) -> None:
        """The measurement of `key`: its verified time (anything but a number, or
        infinity: wrong outputs or a failed build)."""
        seconds = float(seconds) if isinstance(seconds, (int, float)) else math.inf
        self.measured.append((key, seconds))
        if seconds < self.best_s * (1 - MIN_IMPROVEMENT):
            self.since_best = 0
        else:
            self.since_best += 1
        self.best_s = min(self.best_s, seconds)


def rank_correlation(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation of two equally long series (ties share their average
    rank); None for fewer than 3 pairs or a series without spread."""
    if len(xs) != len(ys) or len(xs) < 3:
        return None
    rx, ry = _ranks(xs), _ranks(ys)
    if np.std(rx) == 0 or np.std(ry) == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def _ranks(values: Sequence[float]) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    order = np.argsort(data, kind="stable")
    ranks = np.empty(len(data))
    ranks[order] = np.arange(len(data), dtype=float)
    for value in np.unique(data):  # ties: the average of their ranks
        tied = data == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def model_correlation(ranking: Ranking, measured: Mapping[Key, float]
                      ) -> tuple[float | None, int]:
    """The rank correlation of the model's estimates and the measured times (seconds or
    milliseconds alike) of the configurations that have both, and how many those are."""
    pairs = [(s, measured[k]) for k, s in ranking.seconds.items()
             if s is not None and k in measured and math.isfinite(measured[k])]
    return rank_correlation([p[0] for p in pairs], [p[1] for p in pairs]), len(pairs)
