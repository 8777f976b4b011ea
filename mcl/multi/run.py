"""Running one split kernel on the workers of a Dask cluster, one range of blocks each.

1. every worker names its device (`mcl.multi.worker.device_name`);
2. where the workers' devices differ, a calibration run of a few blocks on each measures
   its speed (blocks per second of kernel time), and the ranges are sized by it
   (Cashmere's heterogeneous case: a GPU and a CPU share one kernel); identical devices
   get equal ranges;
3. each worker receives the generated module once and the rows of each array its range
   touches (`Split.args`), runs its range and returns the rows it wrote;
4. the host assembles the outputs (`Split.assemble`).

A worker that disappears while it holds a range (killed, out of memory, its node gone)
ends the run with one error line; no output is assembled from the ranges that finished.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcl.diagnostics import MclError, error
from mcl.multi.split import Piece, Split, ranges

# The calibration run's share of the blocks: a few per worker, enough for a kernel
# time well above the launch overhead, little next to the run itself.
CALIBRATION_SHARE = 8
# Calibration repetitions: the median of three leaves out the first launch, which PoCL
# and NVIDIA's driver may spend compiling or touching cold memory.
CALIBRATION_REPEAT = 3
POLL_S = 0.05


@dataclass(frozen=True)
class DeviceRun:
    """One worker's part of the run."""

    worker: str
    device: str
    first: int
    count: int
    kernel_s: float
    to_device_s: float
    from_device_s: float
    wall_s: float
    blocks_per_s: float | None = None  # measured by the calibration run, where there was one


@dataclass
class MultiResult:
    outputs: dict[str, Any]
    devices: list[DeviceRun]
    blocks: int
    end_to_end_s: float  # from sending the first input to the last output assembled, the
    # kernels built beforehand; it holds every repetition (each copies its inputs again)
    calibrated: bool = False
    idle: list[str] = field(default_factory=list)  # workers given no blocks

    @property
    def kernel_time_s(self) -> float:
        """The slowest device's kernel time: when the split kernel is done."""
        return max(d.kernel_s for d in self.devices)

    @property
    def device(self) -> str:
        names = sorted({d.device for d in self.devices})
        return f"{len(self.devices)} devices: " + "; ".join(names)


Tell = Callable[[str], None]


def run_split(client: Any, split: Split, generated: Any, function: str,
              args: Mapping[str, Any], repeat: int, tell: Tell) -> MultiResult:
    """Run `split` (generated once as `generated`) on every worker of `client`."""
    from mcl.multi import worker as w

    addresses = sorted(workers(client))
    if not addresses:
        raise MclError(error("run-no-workers", "the Dask cluster has no workers",
                             hint="start workers (`dask worker ADDRESS`) or leave out "
                             "--scheduler to let mcl start them"))
    names = gather(client, {client.submit(w.device_name, workers=[a], pure=False,
                                           allow_other_workers=False): a
                             for a in addresses}, {a: "naming its device" for a in addresses})
    shared = client.scatter(generated, broadcast=True, hash=False)
    gather(client, {client.submit(w.build, shared, workers=[a], pure=False,
                                  allow_other_workers=False): a for a in addresses},
           {a: "building the kernels" for a in addresses})
    speeds: dict[str, float | None] = {a: None for a in addresses}
    blocks = split.blocks
    calibrate = len(set(names.values())) > 1 and blocks >= 2 * len(addresses)
    if calibrate:
        count = max(1, blocks // (CALIBRATION_SHARE * len(addresses)))
        tell(f"calibrating: {count} block{'s' if count != 1 else ''} on each of "
             f"{len(addresses)} devices")
        trial = {a: split.piece(min(i * count, blocks - count), count)
                 for i, a in enumerate(addresses)}
        measured = _run_pieces(client, split, shared, function, args, CALIBRATION_REPEAT,
                               trial, names, lambda _: None)
        for a, result in measured.items():
            speeds[a] = count / max(result.kernel_s, 1e-9)
    weights = [speeds[a] or 1.0 for a in addresses]
    plan = {a: (first, count) for a, (first, count) in zip(addresses, ranges(blocks, weights),
                                                              strict=True)}
    pieces = {a: split.piece(first, count) for a, (first, count) in plan.items() if count}
    split.check_disjoint(list(pieces.values()))
    started = time.perf_counter()
    results = _run_pieces(client, split, shared, function, args, repeat, pieces, names, tell)
    order = sorted(pieces, key=lambda a: pieces[a].first)
    outputs = split.assemble(args, [pieces[a] for a in order],
                             [results[a].outputs for a in order])
    end_to_end = time.perf_counter() - started
    devices = [DeviceRun(a, names[a], pieces[a].first, pieces[a].count, results[a].kernel_s,
                         results[a].to_device_s, results[a].from_device_s, results[a].wall_s,
                         speeds[a]) for a in order]
    return MultiResult(outputs, devices, blocks, end_to_end, calibrate,
                       [a for a in addresses if a not in pieces])


def _run_pieces(client: Any, split: Split, shared: Any, function: str,
                args: Mapping[str, Any], repeat: int, pieces: Mapping[str, Piece],
                names: Mapping[str, str], tell: Tell) -> dict[str, Any]:
    from mcl.multi import worker as w

    futures = {}
    what = {}
    for a, piece in pieces.items():
        # A list of one: Dask takes a dict's keys as the data's keys, so every range's
        # dict of arguments would share the keys 'a', 'n', ... and overwrite each other.
        (data,) = client.scatter([split.args(args, piece)], workers=[a], hash=False)
        futures[client.submit(w.run_piece, shared, function, data, repeat, workers=[a],
                              pure=False, allow_other_workers=False)] = a
        what[a] = f"blocks {piece.first}..{piece.first + piece.count - 1}"
        tell(f"{names[a]} [{a}]: {what[a]} of {split.blocks} sent")
    return gather(client, futures, what, lambda a, r: tell(
        f"{names[a]} [{a}]: {what[a]} done, kernel {r.kernel_s * 1e3:.3f} ms, "
        f"to device {r.to_device_s * 1e3:.3f} ms, from device {r.from_device_s * 1e3:.3f} ms"))


def workers(client: Any) -> set[str]:
    """The addresses of the cluster's workers, asked of the scheduler now (the client's
    `scheduler_info()` returns a cache that a background refresh without the workers
    may just have replaced)."""
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return set(identity.get("workers", {}))


def gather(client: Any, futures: Mapping[Any, str], what: Mapping[str, str],
            done: Callable[[str, Any], None] | None = None) -> dict[str, Any]:
    """The result of each future by worker, watching that every worker still holding one
    is alive: a lost worker ends the run (MclError) instead of waiting for ever."""
    pending = dict(futures)
    results: dict[str, Any] = {}
    while pending:
        for future, address in list(pending.items()):
            if not future.done():
                continue
            del pending[future]
            if future.status != "finished":
                _raise_failure(client, future, address, what[address])
            results[address] = future.result()
            if done is not None:
                done(address, results[address])
        if not pending:
            break
        alive = workers(client)
        lost = [a for a in pending.values() if a not in alive]
        if lost:
            for future in pending:
                future.cancel()
            raise _lost(lost[0], what[lost[0]])
        time.sleep(POLL_S)
    return results


def _raise_failure(client: Any, future: Any, address: str, doing: str) -> None:
    """The error of a failed future: the worker's own MclError, or a lost worker (its
    data gone with it, whatever Dask calls the failure), or the exception in one line."""
    from distributed.core import CommClosedError
    from distributed.scheduler import KilledWorker

    exception = future.exception()
    if isinstance(exception, MclError):
        raise exception
    if isinstance(exception, KilledWorker | CommClosedError) \
            or address not in workers(client):
        raise _lost(address, doing)
    raise MclError(error("run-worker-failed", f"worker {address} failed while {doing}: "
                         f"{type(exception).__name__}: {exception}"))


def _lost(address: str, doing: str) -> MclError:
    return MclError(error(
        "run-worker-lost",
        f"Dask worker {address} was lost while {doing}; no output was assembled",
        hint="run again; the worker's log (or the job scheduler's) says why it ended"))


def describe_devices(result: MultiResult) -> Sequence[str]:
    """One line per device for the text report."""
    lines = []
    for d in result.devices:
        share = 100.0 * d.count / result.blocks
        line = (f"  {d.device} [{d.worker}]: blocks {d.first}..{d.first + d.count - 1} "
                f"({share:.0f}%), kernel {d.kernel_s * 1e3:.3f} ms, to device "
                f"{d.to_device_s * 1e3:.3f} ms, from device {d.from_device_s * 1e3:.3f} ms")
        if d.blocks_per_s is not None:
            line += f", calibrated at {d.blocks_per_s:.3g} blocks/s"
        lines.append(line)
    return lines
