"""`mcl tune --parallel`: the search on every worker of a Dask cluster at once.

Workers are grouped by the name of their device: a configuration's time on one kind of
GPU says nothing about another, so each kind gets its own search and its own entry in the
`.tuned.toml`. Within a group of n workers, worker i searches the i-th of n interleaved
parts of the allowed configurations (`run_search(part=(i, n))`) with Kernel Tuner's own
sequential runner, and the group's best is the fastest verified configuration of any
part. Kernel Tuner's parallel runner is built on Ray, a second cluster system beside
Dask; partitions keep its runner, cache and verification as they are on one device, and
with the brute-force strategy the parts together are exactly the one-device search.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcl.multi.run import gather, workers


@dataclass(frozen=True)
class TuneJob:
    """What a worker needs to search its part (the reference by path: a module is not
    sent, the worker imports it)."""

    program: Any
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


def tune_part(job: TuneJob, part: tuple[int, int]) -> Any:
    """On a worker: search part `part` of `job` on the worker's device."""
    from pathlib import Path

    from mcl.codegen import select_device
    from mcl.tune.search import run_search
    from mcl.verify import load_reference

    return run_search(job.program, Path(job.path), job.function, job.target, job.library,
                      select_device(None), job.space, load_reference(job.reference_path),
                      job.sizes, dict(job.inputs), job.expected, job.strategy, job.options,
                      job.iterations, False, job.use_cache, "opencl", part)


def tune_parallel(client: Any, job: TuneJob, tell: Any) -> dict[str, Any]:
    """The merged `TuneResult` of each kind of device on the cluster, by device name."""
    from mcl.multi import worker as w
    from mcl.tune.search import Space, TuneResult

    addresses = sorted(workers(client))
    names: Mapping[str, str] = gather(
        client, {client.submit(w.device_name, workers=[a], pure=False,
                               allow_other_workers=False): a for a in addresses},
        {a: "naming its device" for a in addresses})
    groups: dict[str, list[str]] = {}
    for a in addresses:
        groups.setdefault(names[a], []).append(a)
    shared = client.scatter(job, broadcast=True, hash=False)
    futures = {}
    for group in groups.values():
        for i, a in enumerate(group):
            futures[client.submit(tune_part, shared, (i, len(group)), workers=[a],
                                  pure=False, allow_other_workers=False)] = a
    what = {a: f"tuning part {groups[names[a]].index(a) + 1} of {len(groups[names[a]])}"
            for a in addresses}
    results = gather(client, futures, what, lambda a, r: tell(
        f"{names[a]} [{a}]: {what[a]} done, {len(r.evaluated)} configurations run"))
    merged = {}
    for name, group in groups.items():
        parts = [results[a] for a in group]
        timed = [r for r in parts if r.best is not None]
        best = min(timed, key=lambda r: r.best_time_ms) if timed else None
        first = parts[0].space
        space = Space(first.names, {k: c for r in parts for k, c in r.space.candidates.items()},
                      first.ruled_out)
        merged[name] = TuneResult(best.best if best else None,
                                  best.best_time_ms if best else None,
                                  [e for r in parts for e in r.evaluated],
                                  sorted({k for r in parts for k in r.wrong}, key=str),
                                  space, parts[0].device)
    return merged
