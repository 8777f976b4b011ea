"""Running one split kernel on the workers of a Dask cluster, in ranges of blocks.

1. every worker names its device (`mcl.multi.worker.device_name`);
2. where the workers' devices differ, a calibration run of a few blocks on each measures
   its speed (blocks per second of kernel time), and the first placement of the ranges
   is sized by it (Cashmere's heterogeneous case: a GPU and a CPU share one kernel);
   identical devices get equal shares;
3. each worker's share is one range, or with `chunks` K a queue of K ranges; a worker
   holds at most DEPTH ranges at once and, when its queue is empty, takes the last
   range of another worker's queue where it would finish it sooner (work stealing,
   `steal_from`). Each range's rows go to the worker that runs it, with the generated
   module sent once to all; the worker returns the rows it wrote;
4. the host assembles the outputs (`Split.assemble`). With `rounds` N the whole run is
   repeated N times: the rows of every range stay on the worker they were sent to (a
   Dask future) and the arrays the kernel only reads on its device, so a round after the
   first moves only what the kernel writes.

Why the client hands out ranges and not Dask's own work stealing: the scheduler balances
every `work-stealing-interval` (1 s by default) and prices a move at 100 ms of latency,
so it moves tasks of seconds, not the ranges of a GPU kernel (milliseconds). The client
learns of a finished range at once (`distributed.wait`), and the next range is already
on the worker (DEPTH), so no worker waits for the client.

A worker that disappears while it holds a range (killed, out of memory, its node gone)
ends the run with one error line; no output is assembled from the ranges that finished.
"""

from __future__ import annotations

import time
from collections import deque
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
# Ranges a worker holds at once (running or queued on it): two, so the next range is on
# the worker when one ends and the round trip to the client overlaps a kernel.
DEPTH = 2


@dataclass(frozen=True)
class DeviceRun:
    """One worker's part of the run (of its last round)."""

    worker: str
    device: str
    first: int  # the first block of its first range
    count: int  # blocks it ran, over all its ranges
    kernel_s: float  # summed over its ranges: the time its device was busy with the kernel
    to_device_s: float
    from_device_s: float
    wall_s: float
    blocks_per_s: float | None = None  # measured by the calibration run, where there was one
    ranges: int = 1
    stolen: int = 0  # of its ranges, those first placed on another worker


@dataclass(frozen=True)
class Round:
    """One round's figures (`rounds` N repeats the whole split run)."""

    end_to_end_s: float
    kernel_s: float
    to_device_s: float  # summed over the devices: what crossed to them this round


@dataclass
class MultiResult:
    outputs: dict[str, Any]
    devices: list[DeviceRun]
    blocks: int
    end_to_end_s: float  # the last round, from sending its first range to the assembled
    # outputs, the kernels built beforehand; it holds every repetition (each copies the
    # written arrays again, and the inputs too unless they are kept from an earlier round)
    calibrated: bool = False
    idle: list[str] = field(default_factory=list)  # workers given no blocks
    chunks: int = 1
    rounds: list[Round] = field(default_factory=list)

    @property
    def kernel_time_s(self) -> float:
        """The slowest device's kernel time: when the split kernel is done."""
        return max(d.kernel_s for d in self.devices)

    @property
    def device(self) -> str:
        names = sorted({d.device for d in self.devices})
        return f"{len(self.devices)} devices: " + "; ".join(names)


Tell = Callable[[str], None]


@dataclass(frozen=True)
class SplitRun:
    """What every round of a split run shares."""

    split: Split
    generated: Any
    function: str
    args: Mapping[str, Any]
    repeat: int = 1
    chunks: int = 1  # ranges per device: more than one lets a free device take another's
    rounds: int = 1  # whole runs; after the first, the inputs are kept on the workers


def run_split(client: Any, job: SplitRun, tell: Tell) -> MultiResult:
    """Run `job.split` (generated once as `job.generated`) on every worker of `client`."""
    from mcl.multi import worker as w

    addresses = required_workers(client)
    names = gather(client, {client.submit(w.device_name, workers=[a], pure=False,
                                           allow_other_workers=False): a
                             for a in addresses}, {a: "naming its device" for a in addresses})
    shared = client.scatter(job.generated, broadcast=True, hash=False)
    gather(client, {client.submit(w.build, shared, workers=[a], pure=False,
                                  allow_other_workers=False): a for a in addresses},
           {a: "building the kernels" for a in addresses})
    dispatch = _Dispatch(client, job, shared, names, tell)
    speeds = _calibrate(dispatch, addresses, names, tell)
    split, blocks = job.split, job.split.blocks
    plan: dict[str, list[Piece]] = {}
    weights = [speeds[a] or 1.0 for a in addresses]
    for a, (first, count) in zip(addresses, ranges(blocks, weights), strict=True):
        if count:
            plan[a] = [split.piece(first + f, c)
                       for f, c in ranges(count, [1.0] * min(job.chunks, count))]
    split.check_disjoint([p for pieces in plan.values() for p in pieces])
    rounds: list[Round] = []
    try:
        for _ in range(job.rounds):
            started = time.perf_counter()
            done = dispatch.run(plan, steal=job.chunks > 1)
            done.sort(key=lambda d: d.piece.first)
            outputs = split.assemble(job.args, [d.piece for d in done],
                                     [d.result.outputs for d in done])
            devices = _devices(done, names, speeds)
            rounds.append(Round(time.perf_counter() - started,
                                max(d.kernel_s for d in devices),
                                sum(d.to_device_s for d in devices)))
            # The next round starts where this one ran: each range's rows are there.
            plan = {a: [d.piece for d in done if d.worker == a] for a in addresses}
            plan = {a: pieces for a, pieces in plan.items() if pieces}
    finally:
        if job.rounds > 1:  # a worker lost meanwhile has nothing left to release
            client.run(w.forget_kept, on_error="ignore")
    return MultiResult(outputs, devices, blocks, rounds[-1].end_to_end_s,
                       any(s is not None for s in speeds.values()),
                       [a for a in addresses if a not in {d.worker for d in devices}],
                       job.chunks, rounds)


def _calibrate(dispatch: _Dispatch, addresses: Sequence[str], names: Mapping[str, str],
               tell: Tell) -> dict[str, float | None]:
    """Blocks per second of kernel time of each worker's device where the devices
    differ (a run of a few blocks each), else None for every worker."""
    speeds: dict[str, float | None] = {a: None for a in addresses}
    blocks = dispatch.job.split.blocks
    if len(set(names.values())) < 2 or blocks < 2 * len(addresses):
        return speeds
    count = max(1, blocks // (CALIBRATION_SHARE * len(addresses)))
    tell(f"calibrating: {count} block{'s' if count != 1 else ''} on each of "
         f"{len(addresses)} devices")
    trial = {a: [dispatch.job.split.piece(min(i * count, blocks - count), count)]
             for i, a in enumerate(addresses)}
    for done in dispatch.run(trial, steal=False, repeat=CALIBRATION_REPEAT, quiet=True):
        speeds[done.worker] = count / max(done.result.kernel_s, 1e-9)
    return speeds


@dataclass(frozen=True)
class Done:
    """A range that ran: where, and whether it was first placed elsewhere."""

    worker: str
    piece: Piece
    result: Any  # mcl.multi.worker.PieceResult
    stolen: bool


def _devices(done: Sequence[Done], names: Mapping[str, str],
             speeds: Mapping[str, float | None]) -> list[DeviceRun]:
    """Each worker's ranges of one round, summed (the ranges of a device run one after
    another, so its times add up)."""
    out = []
    for a in sorted({d.worker for d in done}, key=lambda a: min(
            d.piece.first for d in done if d.worker == a)):
        mine = [d for d in done if d.worker == a]
        out.append(DeviceRun(
            a, names[a], mine[0].piece.first, sum(d.piece.count for d in mine),
            sum(d.result.kernel_s for d in mine), sum(d.result.to_device_s for d in mine),
            sum(d.result.from_device_s for d in mine), sum(d.result.wall_s for d in mine),
            speeds.get(a), len(mine), sum(d.stolen for d in mine)))
    return out


def steal_from(queues: Mapping[str, Sequence[Piece]], held: Mapping[str, int],
               rate: Mapping[str, float], thief: str) -> str | None:
    """The worker whose last queued range `thief` should take, or None: the one that
    would reach that range latest (its blocks held and queued over its rate), where
    `thief` would finish the range sooner than that. Rates are blocks per second; a
    device's speed decides, so a slow device does not take a fast one's last range."""
    best: tuple[float, str] | None = None
    for victim, queue in queues.items():
        if victim == thief or not queue:
            continue
        ahead = (held.get(victim, 0) + sum(p.count for p in queue)) / rate[victim]
        if queue[-1].count / rate[thief] < ahead and (best is None or ahead > best[0]):
            best = (ahead, victim)
    return best[1] if best else None


class _Dispatch:
    """Hands the ranges of a run to the workers, DEPTH at a time each, and keeps each
    range's rows on the worker they were sent to for later rounds."""

    def __init__(self, client: Any, job: SplitRun, shared: Any, names: Mapping[str, str],
                 tell: Tell) -> None:
        self.client, self.job, self.shared, self.names, self.tell = \
            client, job, shared, names, tell
        # (first, count) -> (worker, future of the range's arguments), with rounds only
        self.kept: dict[tuple[int, int], tuple[str, Any]] = {}
        self.rate: dict[str, float] = {}  # blocks per second of wall time, measured

    def run(self, plan: Mapping[str, Sequence[Piece]], steal: bool,
            repeat: int | None = None, quiet: bool = False) -> list[Done]:
        # Every worker has a queue: one given no range (calibration) may still steal.
        queues = {a: deque(plan.get(a, ())) for a in self.names}
        owner = {(p.first, p.count): a for a, pieces in plan.items() for p in pieces}
        flying: dict[Any, tuple[str, Piece]] = {}
        done: list[Done] = []
        total = sum(len(q) for q in queues.values())
        tell = (lambda _: None) if quiet else self.tell
        while queues and any(queues.values()) or flying:
            for a in list(queues):
                while sum(1 for w, _ in flying.values() if w == a) < DEPTH:
                    piece = self._next(a, queues, flying, steal)
                    if piece is None:
                        break
                    flying[self._submit(a, piece, repeat)] = (a, piece)
                    tell(f"{self.names[a]} [{a}]: blocks {_span(piece)} of "
                         f"{self.job.split.blocks} sent")
            doing = {f: (a, f"blocks {_span(p)}") for f, (a, p) in flying.items()}
            for future in finished(self.client, doing):
                a, piece = flying.pop(future)
                result = future.result()
                done.append(Done(a, piece, result, owner[piece.first, piece.count] != a))
                self._learn(a, done)
                mine = sum(1 for d in done if d.worker == a)
                tell(f"{self.names[a]} [{a}]: blocks {_span(piece)} done, kernel "
                     f"{result.kernel_s * 1e3:.3f} ms, to device "
                     f"{result.to_device_s * 1e3:.3f} ms, from device "
                     f"{result.from_device_s * 1e3:.3f} ms; {mine} range"
                     f"{'s' if mine != 1 else ''} on this device, {len(done)} of {total}")
        return done

    def _next(self, a: str, queues: Mapping[str, deque[Piece]],
              flying: Mapping[Any, tuple[str, Piece]], steal: bool) -> Piece | None:
        if queues[a]:
            return queues[a].popleft()
        if not steal:
            return None
        held: dict[str, int] = {}
        for w, piece in flying.values():
            held[w] = held.get(w, 0) + piece.count
        # A worker not measured yet counts as fast as the thief.
        rate = {w: self.rate.get(w, self.rate.get(a, 1.0)) for w in queues}
        victim = steal_from(queues, held, rate, a)
        return queues[victim].pop() if victim is not None else None

    def _learn(self, a: str, done: Sequence[Done]) -> None:
        """The worker's blocks per second of wall time so far, all devices starting equal."""
        mine = [d for d in done if d.worker == a]
        self.rate[a] = sum(d.piece.count for d in mine) / max(
            sum(d.result.wall_s for d in mine), 1e-9)

    def _submit(self, a: str, piece: Piece, repeat: int | None) -> Any:
        from mcl.multi import worker as w

        key = (piece.first, piece.count)
        kept = self.job.rounds > 1
        if key in self.kept and self.kept[key][0] == a:
            data = self.kept[key][1]
        else:
            # A list of one: Dask takes a dict's keys as the data's keys, so every range's
            # dict of arguments would share the keys 'a', 'n', ... and overwrite each other.
            (data,) = self.client.scatter([self.job.split.args(self.job.args, piece)],
                                          workers=[a], hash=False)
            if kept:
                self.kept[key] = (a, data)
        return self.client.submit(
            w.run_piece, self.shared, self.job.function, data,
            self.job.repeat if repeat is None else repeat, data.key if kept else None,
            workers=[a], pure=False, allow_other_workers=False)


def _span(piece: Piece) -> str:
    return f"{piece.first}..{piece.first + piece.count - 1}"


def required_workers(client: Any) -> list[str]:
    """The cluster's worker addresses, sorted; none is an error."""
    addresses = sorted(workers(client))
    if not addresses:
        raise MclError(error("run-no-workers", "the Dask cluster has no workers",
                             hint="start workers (`dask worker ADDRESS`) or leave out "
                             "--scheduler to let mcl start them"))
    return addresses


def workers(client: Any) -> set[str]:
    """The addresses of the cluster's workers, asked of the scheduler now (the client's
    `scheduler_info()` returns a cache that a background refresh without the workers
    may just have replaced)."""
    identity = client.sync(client.scheduler.identity, n_workers=-1)
    return set(identity.get("workers", {}))


def gather(client: Any, futures: Mapping[Any, str], what: Mapping[str, str],
            done: Callable[[str, Any], None] | None = None) -> dict[str, Any]:
    """The result of each future by worker (`finished` watches the workers)."""
    pending = {f: (a, what[a]) for f, a in futures.items()}
    results: dict[str, Any] = {}
    while pending:
        for future in finished(client, pending):
            address, _ = pending.pop(future)
            results[address] = future.result()
            if done is not None:
                done(address, results[address])
    return results


def finished(client: Any, pending: Mapping[Any, tuple[str, str]]) -> list[Any]:
    """The futures of `pending` (each with its worker and what it does there) that have
    finished, as soon as one has, or none after POLL_S; a failed one or a worker lost
    while it holds one ends the run (MclError) instead of waiting for ever."""
    from concurrent.futures import CancelledError

    from distributed import wait

    try:
        wait(list(pending), timeout=POLL_S, return_when="FIRST_COMPLETED")
    except CancelledError:
        pass  # a future's data went with its worker: its status below says so
    except TimeoutError:
        alive = workers(client)
        lost = [(a, doing) for a, doing in pending.values() if a not in alive]
        if lost:
            for future in pending:
                future.cancel()
            raise _lost(*lost[0]) from None
        return []
    done = [f for f in pending if f.done()]
    for future in done:
        if future.status != "finished":
            _raise_failure(client, future, *pending[future])
    return done


def _raise_failure(client: Any, future: Any, address: str, doing: str) -> None:
    """The error of a failed future: the worker's own MclError, or a lost worker (its
    data gone with it, whatever Dask calls the failure), or the exception in one line."""
    from distributed.core import CommClosedError
    from distributed.scheduler import KilledWorker

    if future.status == "cancelled":  # its data lost with a worker, this one or another
        raise _lost(address, doing)
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
        where = f"blocks {d.first}..{d.first + d.count - 1}" if d.ranges == 1 else \
            f"{d.count} blocks in {d.ranges} ranges ({d.stolen} taken from other devices)"
        line = (f"  {d.device} [{d.worker}]: {where} ({share:.0f}%), kernel "
                f"{d.kernel_s * 1e3:.3f} ms, to device {d.to_device_s * 1e3:.3f} ms, "
                f"from device {d.from_device_s * 1e3:.3f} ms")
        if d.blocks_per_s is not None:
            line += f", calibrated at {d.blocks_per_s:.3g} blocks/s"
        lines.append(line)
    return lines
