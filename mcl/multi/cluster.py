"""The Dask cluster a split kernel runs on: one worker process per device.

Without `--scheduler`, mcl starts a local cluster: a Dask scheduler in this process
(`distributed.SpecCluster`, the class `LocalCluster` is built on) and one worker process
per device of `--devices` (`python -m mcl.multi.worker`, one thread), its device pinned by
the environment the backend gives it (`ClusterBackend.worker_slots`, mcl.codegen.backend:
OpenCL's names the device in MCL_DEVICE, pins an NVIDIA GPU with CUDA_VISIBLE_DEVICES and
shares a CPU device named several times between its workers' PoCL). The worker processes
are started first, before the devices are listed and the scheduler starts: each imports
Dask and the modules it is given meanwhile, then reads its device's environment from its
standard input and opens the device, then reads the scheduler's address. No Dask nanny stands
between: a worker that fails ends the run anyway, and the nanny would add a process
start and a handshake to every worker's start and a graceful teardown to its end. A
worker ends when its standard input closes, so none survives mcl, however mcl ends.

With `--scheduler ADDRESS`, the workers of that cluster are used as they are, each on
the device its environment names (docs/scaling.md shows a dask-jobqueue setup); the rest
of the run is the same code.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mcl.codegen.backend import DeviceSlot
from mcl.diagnostics import MclError, error


def device_slots(spec: str, preferred_type: str | None) -> list[DeviceSlot]:
    """The workers of `--devices SPEC`: `all` (every device of the leaf's preferred type,
    else every device) or a comma-separated list of device specs as `--device` takes
    them; a device may be named more than once (its workers share it)."""
    specs = None
    if spec.strip() != "all":
        specs = [p.strip() for p in spec.split(",")]
        if not all(specs):
            raise MclError(error("run-devices", f"--devices {spec}: an empty device in the "
                                 "list", hint="e.g. --devices 0,1 or --devices all"))
    from mcl.multi.cluster_backend import cluster_backend

    return cluster_backend().worker_slots(specs, preferred_type)


# How long closing may take: the results are in hand by then, and a worker that has not
# ended is killed (its device's driver frees what it held).
CLOSE_S = 2.0


@contextmanager
def connect(slots: list[DeviceSlot] | None, scheduler: str | None,
            modules: tuple[str, ...] = ()) -> Iterator[Any]:
    """A `distributed.Client` of the cluster: `scheduler`'s, or a local one with a worker
    per slot, each worker having imported `modules` (closed again afterwards)."""
    with _connect(None if slots is None else (lambda: slots), None if slots is None
                  else len(slots), scheduler, modules) as client:
        yield client


def planned_workers(spec: str) -> int | None:
    """How many workers `--devices SPEC` starts, where that is known before the devices
    are listed (a list of devices; not `all`)."""
    return None if spec.strip() == "all" else len(spec.split(","))


@contextmanager
def _connect(slots_of: Callable[[], list[DeviceSlot]] | None, count: int | None,
             scheduler: str | None, modules: tuple[str, ...],
             given_up: threading.Event | None = None) -> Iterator[Any]:
    """`connect`, the local workers' slots found by `slots_of`; `count` of them (where
    known) start before it is called; `given_up`, once set, stops the wait for them."""
    try:
        from distributed import Client
    except ImportError:
        raise MclError(error("run-no-dask", "--devices and --scheduler run on Dask, which "
                             "is not installed",
                             hint="pip install 'mcl[dask]' (the distributed package)")) from None
    if scheduler is not None:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise MclError(error("run-scheduler", f"--scheduler {scheduler}: cannot connect "
                                 f"({e})", hint="start it with `dask scheduler` (or a "
                                 "dask-jobqueue cluster) and pass the address it prints")) from None
        with client:
            yield client
        return
    assert slots_of is not None
    with _local(slots_of, count or 0, modules, given_up or threading.Event()) as client:
        yield client


@contextmanager
def _local(slots_of: Callable[[], list[DeviceSlot]], count: int, modules: tuple[str, ...],
           given_up: threading.Event) -> Iterator[Any]:
    """The local cluster: `count` worker processes start at once and import `modules`
    while the devices are listed (`slots_of`, which opens every OpenCL platform here) and
    the scheduler starts; each is then sent its device's environment and the scheduler's
    address."""
    import logging

    from distributed import Client, Scheduler, SpecCluster

    processes = [_spawn(f"mcl-{i}", modules) for i in range(count)]
    cluster = None
    joined = False
    try:
        slots = slots_of()
        processes += [_spawn(f"mcl-{i}", modules) for i in range(len(processes), len(slots))]
        for process, slot in zip(processes, slots, strict=True):
            process.label = slot.label
            _send(process, json.dumps(slot.env))
        cluster = SpecCluster(
            workers={},
            scheduler={"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False,
                                                   "dashboard_address": "127.0.0.1:0"}},
            silence_logs=logging.ERROR)
        for process in processes:
            _send(process, cluster.scheduler_address)
        client = Client(cluster)
        try:
            _wait_for(client, processes, given_up)
            joined = True
            yield client
        finally:
            # The client first: with it gone, the scheduler loses no data it still holds
            # for it when the workers end.
            client.close(timeout=CLOSE_S)
    finally:
        _stop(processes, CLOSE_S if joined else 0.0)
        if cluster is not None:
            cluster.close(timeout=CLOSE_S)


def _send(process: Any, line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(f"{line}\n".encode())
    process.stdin.flush()


def _spawn(name: str, modules: tuple[str, ...]) -> Any:
    """Start a worker process (`mcl.multi.worker.main`; its device's environment comes
    later, on its standard input), its stderr kept in a file that says why if it ends
    before it joins."""
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    # The worker imports what this process can (this mcl, wherever it was found, and the
    # modules of functions sent to it), as a process of `multiprocessing` would.
    path = os.pathsep.join(str(Path(p or ".").resolve()) for p in sys.path)
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "mcl.multi.worker", name, *modules], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=log, env={**os.environ, "PYTHONPATH": path})
    # the worker's log file travels with its process, an attribute Popen does not declare
    process.log = log  # type: ignore[attr-defined]
    return process


class _GivenUp(Exception):
    """The caller of `starting` left (an error in its own work) before the workers
    joined: the cluster is closed without waiting for them."""


def _wait_for(client: Any, processes: list[Any], given_up: threading.Event) -> None:
    """Until every worker has joined; a worker process that ended first is an error
    (its last line of stderr says why)."""
    import time

    from mcl.multi.run import workers

    while len(workers(client)) < len(processes):
        if given_up.is_set():
            raise _GivenUp
        for process in processes:
            if process.poll() is not None:
                process.log.seek(0)
                lines = process.log.read().decode(errors="replace").strip().splitlines()
                raise MclError(error("run-worker", f"the Dask worker of {process.label} "
                                     f"ended before it joined (exit status "
                                     f"{process.returncode}): "
                                     f"{lines[-1] if lines else 'no message'}",
                                     hint="`mcl devices` lists the devices; --devices "
                                     "names them by number or P:D"))
        time.sleep(0.05)


def _stop(processes: list[Any], grace: float) -> None:
    """End the worker processes: their standard input closed (a worker that has started
    its `main` exits at once), then killed where one has not ended within `grace`
    seconds (none for workers that never joined: nothing of theirs is wanted)."""
    import subprocess

    for process in processes:
        if process.stdin is not None and not process.stdin.closed:
            process.stdin.close()
    for process in processes:
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.log.close()


@dataclass(frozen=True)
class Started:
    """A cluster that `starting` brought up: its client, and each worker's device name
    (the workers warmed up)."""

    client: Any
    names: dict[str, str]


@contextmanager
def starting(slots_of: Callable[[], list[DeviceSlot]] | None, count: int | None,
             scheduler: str | None,
             modules: tuple[str, ...]) -> Iterator[Callable[[], Started]]:
    """`connect` in a background thread, each worker then importing `modules` and opening
    its device (`mcl.multi.worker.warm`), while the caller prepares the work; yields the
    function that waits for it. Worker processes start in seconds (Python, Dask, the
    device's driver), time the caller spends checking the kernel, making inputs and
    generating code. The local workers' devices are listed in that thread too
    (`slots_of`), `count` workers (`planned_workers`) starting before."""
    from mcl.multi import worker as w
    from mcl.multi.run import gather, workers

    ready: Future[Started] = Future()
    stop = threading.Event()
    closing: list[BaseException] = []  # an error closing the cluster, raised by the caller

    def hold() -> None:
        try:
            with _connect(slots_of, count, scheduler, modules, stop) as client:
                addresses = sorted(workers(client))
                names = gather(client, {client.submit(w.warm, modules, workers=[a], pure=False,
                                                      allow_other_workers=False): a
                                        for a in addresses},
                               {a: "importing and opening its device" for a in addresses})
                ready.set_result(Started(client, names))
                stop.wait()
        except BaseException as e:  # the caller's `result()` raises it, not this thread
            if not ready.done():
                ready.set_exception(e)
            else:
                closing.append(e)

    thread = threading.Thread(target=hold, name="mcl-cluster", daemon=True)
    thread.start()
    try:
        yield ready.result
    finally:
        stop.set()
        thread.join()
    if closing:
        raise closing[0]
