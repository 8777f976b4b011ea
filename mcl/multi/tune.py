"""`mcl tune --parallel`: the search on every worker of a Dask cluster at once.

Workers are grouped by the name of their device: a configuration's time on one kind of
GPU says nothing about another, so each kind gets its own search and its own entry in the
`.tuned.toml`. What a worker does once is kept off the critical path (docs/scaling.md,
"Tuning on all devices"):

- the client generates every configuration's code once (`build_space`) while the
  cluster starts and each worker imports Kernel Tuner and opens its device
  (`mcl.multi.cluster.starting`, `mcl.multi.worker.warm`); a worker is sent the code of
  the configurations it runs and generates none itself;
- with the brute-force strategy the allowed configurations are cut into small batches,
  a queue per kind of device, and a worker takes the next batch when it finishes one,
  so a worker whose configurations compile or run longer takes fewer (`batches`);
- another strategy runs on each worker over the i-th of n interleaved parts, as the
  strategy needs its whole part at once.

Each batch or part runs with Kernel Tuner's own sequential runner and verification, and
a group's best is the fastest verified configuration of any. Kernel Tuner's parallel
runner is built on Ray, a second cluster system beside Dask; batches keep its runner,
cache and verification as they are on one device, and with brute force the batches
together are exactly the one-device search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from mcl.multi.run import finished, gather, required_workers

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

# Modules a tuning worker imports while the client prepares (mcl.multi.worker.warm).
WARM = ("kernel_tuner", "mcl.tune.search", "mcl.pipeline", "mcl.verify")
# Batches per worker of a brute-force search: enough that a worker whose configurations
# take longer hands the rest to the others, few enough that a batch's own cost is paid
# rarely. A batch is a Kernel Tuner call, and on an NVIDIA GPU that costs about 2.5 s
# of its own (measured on 4 x H100, 51 configurations of matmul hopper_v2: search 16.0,
# 17.9 and 20.0 s with 1, 2 and 4 batches per worker; docs/performance.md).
BATCHES_PER_WORKER = 2


@dataclass(frozen=True)
class TuneJob:
    """What every worker needs, sent once (the reference by path: a module is not
    sent, the worker imports it)."""

    program: Program
    path: str
    function: str
    target: str
    library: Any
    space: Any
    reference_path: str
    sizes: dict[str, int]
    inputs: dict[str, Any]
    expected: dict[str, Any]
    strategy: str
    options: dict[str, Any] | None
    iterations: int
    use_cache: bool


@cache
def _reference(path: str) -> Any:
    from mcl.verify import load_reference

    return load_reference(path)


def tune_part(job: TuneJob, built: Any) -> Any:
    """On a worker: search the configurations of `built` (a `Space`, their code made by
    the client) on the worker's device."""
    from pathlib import Path

    from mcl.codegen import select_device
    from mcl.tune.search import run_search

    return run_search(job.program, Path(job.path), job.function, job.target, job.library,
                      select_device(None), job.space, _reference(job.reference_path),
                      job.sizes, dict(job.inputs), job.expected, job.strategy, job.options,
                      job.iterations, False, job.use_cache, "opencl", built=built)


def batches(keys: Sequence[Any], workers: int, strategy: str) -> list[list[Any]]:
    """The configurations of one kind of device in the pieces its `workers` take: small
    batches in order for brute force, else one interleaved part per worker (one worker:
    one piece, a batch being a Kernel Tuner call of its own)."""
    if workers == 1:
        return [list(keys)] if keys else []
    if strategy != "brute_force":
        return [list(keys[i::workers]) for i in range(workers) if keys[i::workers]]
    size = max(1, math.ceil(len(keys) / (workers * BATCHES_PER_WORKER)))
    return [list(keys[i:i + size]) for i in range(0, len(keys), size)]


def tune_parallel(client: Any, job: TuneJob, built: Any, tell: Any,
                  names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The merged `TuneResult` of each kind of device on the cluster, by device name;
    `built` is the whole space (`build_space`), `names` each worker's device where the
    workers have said it already."""
    from mcl.multi import worker as w

    addresses = required_workers(client)
    if names is None or set(names) != set(addresses):
        names = gather(
            client, {client.submit(w.device_name, workers=[a], pure=False,
                                   allow_other_workers=False): a for a in addresses},
            {a: "naming its device" for a in addresses})
    groups: dict[str, list[str]] = {}
    for a in addresses:
        groups.setdefault(names[a], []).append(a)
    shared = client.scatter(job, broadcast=True, hash=False)
    keys = sorted(built.candidates)
    queues = {name: batches(keys, len(group), job.strategy) for name, group in groups.items()}
    total = {name: len(queue) for name, queue in queues.items()}
    flying: dict[Any, tuple[str, str]] = {}
    sent: dict[Any, float] = {}
    results: dict[str, list[Any]] = {name: [] for name in groups}

    def submit(a: str) -> None:
        queue = queues[names[a]]
        if queue:
            part = queue.pop(0)
            piece = type(built)(built.names, {k: built.candidates[k] for k in part}, {})
            future = client.submit(tune_part, shared, piece, workers=[a], pure=False,
                                   allow_other_workers=False)
            flying[future] = (a, f"tuning {len(part)} configurations")
            sent[future] = time.perf_counter()

    for a in addresses:
        submit(a)
    while flying:
        for future in finished(client, flying):
            a, _ = flying.pop(future)
            took = time.perf_counter() - sent.pop(future)
            result = future.result()
            results[names[a]].append(result)
            name = names[a]
            run = len(result.evaluated)
            tell(f"{name} [{a}]: batch done, {run} configuration{'s' if run != 1 else ''} "
                 f"run in {took:.1f} s; {len(results[name])} of {total[name]} batches done "
                 "on this kind")
            submit(a)
    return {name: _merged(built, parts, name) for name, parts in results.items()}


def _merged(built: Any, parts: Sequence[Any], device: str) -> Any:
    """One kind's `TuneResult` from its batches' results, over the whole space."""
    from mcl.tune.search import TuneResult

    timed = [r for r in parts if r.best is not None]
    best = min(timed, key=lambda r: r.best_time_ms) if timed else None
    return TuneResult(best.best if best else None, best.best_time_ms if best else None,
                      [e for r in parts for e in r.evaluated],
                      sorted({k for r in parts for k in r.wrong}, key=str), built, device)
