"""`mcl tune --parallel`: the search on every worker of a Dask cluster at once.

Workers are grouped by the name of their device: a configuration's time on one kind of
GPU says nothing about another, so each kind gets its own search and its own entry in the
`.tuned.toml`. What a worker does once is kept off the critical path (docs/scaling.md,
"Tuning on all devices"):

- the client checks the kernel and generates every configuration's code once
  (`build_space`) while the cluster starts and each worker imports Kernel Tuner and
  opens its device (`mcl.multi.cluster.starting`, `mcl.multi.worker.main`, or
  `mcl.multi.worker.warm` on the workers of `--scheduler`); a worker is sent the code of
  the configurations and generates none itself;
- with the brute-force strategy each worker makes one Kernel Tuner call and pulls the
  configurations of its kind, one at a time, from a queue on the scheduler
  (`mcl.tune.search.Pulled`): a worker whose configurations compile or run longer takes
  fewer, no worker idles while another finishes a batch, and Kernel Tuner's cost per
  call (context, inputs on the device, a warm-up run) is paid once per worker;
- another strategy runs on each worker over the i-th of n interleaved parts, as the
  strategy needs its whole part at once.

Each worker runs Kernel Tuner's own sequential runner and verification, and a group's
best is the fastest verified configuration of any worker. Kernel Tuner's parallel runner
is built on Ray, a second cluster system beside Dask; pulling keeps its runner, cache
and verification as they are on one device, and with brute force the configurations the
workers pull are together exactly the one-device search.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from mcl.multi.run import finished, gather, required_workers

if TYPE_CHECKING:
    from mcl.mcpl.loader import Program

# Modules a tuning worker imports while the client prepares (mcl.multi.worker.warm).
WARM = ("kernel_tuner", "mcl.tune.search", "mcl.pipeline", "mcl.verify")


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


def tune_part(job: TuneJob, built: Any, pulled: str | None = None) -> Any:
    """On a worker: search the configurations of `built` (a `Space`, their code made by
    the client) on the worker's device; with `pulled`, the name of a Dask queue of
    indices into the sorted configurations, only those the worker takes from it, until
    it takes None."""
    from pathlib import Path

    from mcl.backends import default_backend
    from mcl.tune.search import run_search

    pull = None
    tag = ""
    if pulled is not None:
        from distributed import Queue, get_worker

        queue = Queue(pulled)
        keys = sorted(built.candidates)

        def pull() -> Any:
            index = queue.get()
            return None if index is None else keys[index]

        tag = str(get_worker().name)
    backend = default_backend()  # the cluster's workers run the default backend's kernels
    return run_search(job.program, Path(job.path), job.function, job.target, job.library,
                      backend.select_device(None), job.space, _reference(job.reference_path),
                      job.sizes, dict(job.inputs), job.expected, job.strategy, job.options,
                      job.iterations, False, job.use_cache, backend.name, built=built,
                      pull=pull, cache_tag=tag)


def parts(keys: Sequence[Any], workers: int) -> list[list[Any]]:
    """A strategy other than brute force needs its part of the space at once: one
    interleaved part per worker (fewer where there are fewer configurations)."""
    return [list(keys[i::workers]) for i in range(workers) if keys[i::workers]]


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
    flying: dict[Any, tuple[str, str]] = {}
    queues: list[tuple[Any, int]] = []  # each kind's queue and its number of workers
    started = time.perf_counter()
    for group in groups.values():
        queue = None
        if job.strategy == "brute_force":
            from distributed import Queue

            queue = Queue(f"mcl-tune-{uuid.uuid4().hex}", client=client)
            queues.append((queue, len(group)))
        for a, piece in _tasks(built, keys, group, queue is not None):
            future = client.submit(tune_part, shared, piece, queue and queue.name,
                                   workers=[a], pure=False, allow_other_workers=False)
            flying[future] = (a, "tuning")
    # Filled once the tasks are out: a worker sets up Kernel Tuner (context, inputs on the
    # device) meanwhile, and waits at the queue only if it gets there first. The indices
    # in order, then one None per worker to stop it.
    for queue, count in queues:
        for index in [*range(len(keys)), *[None] * count]:
            queue.put(index)
    results: dict[str, list[Any]] = {name: [] for name in groups}
    while flying:
        for future in finished(client, flying):
            a, _ = flying.pop(future)
            result = future.result()
            results[names[a]].append(result)
            run = len(result.evaluated)
            tell(f"{names[a]} [{a}]: done, {run} configuration{'s' if run != 1 else ''} run "
                 f"in {time.perf_counter() - started:.1f} s")
    return {name: _merged(built, found, name) for name, found in results.items()}


def _tasks(built: Any, keys: Sequence[Any], group: Sequence[str],
           pulled: bool) -> list[tuple[str, Any]]:
    """Each worker of one kind and the configurations it is sent: the whole space where
    the workers pull from a queue, else its interleaved part."""
    if pulled:
        return [(a, built) for a in group]
    return [(a, _piece(built, part))
            for a, part in zip(group, parts(keys, len(group)), strict=False)]


def _piece(built: Any, part: Sequence[Any]) -> Any:
    return type(built)(built.names, {k: built.candidates[k] for k in part}, {})


def _merged(built: Any, found: Sequence[Any], device: str) -> Any:
    """One kind's `TuneResult` from its workers' results, over the whole space."""
    from mcl.tune.search import TuneResult

    timed = [r for r in found if r.best is not None]
    best = min(timed, key=lambda r: r.best_time_ms) if timed else None
    return TuneResult(best.best if best else None, best.best_time_ms if best else None,
                      [e for r in found for e in r.evaluated],
                      sorted({k for r in found for k in r.wrong}, key=str), built, device,
                      strategy=found[0].strategy if found else "brute_force")
