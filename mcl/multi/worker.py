"""What runs inside a Dask worker: the worker's one device, and ranges of a kernel on it.

A worker serves one device, named by its environment (MCL_DEVICE, read by
`mcl.codegen.select_device`; GPUs pinned with CUDA_VISIBLE_DEVICES), whether mcl started
the worker (`mcl.multi.cluster`) or the user did (`dask-jobqueue`, `dask worker`). The
device and the built kernels of the current module live in a `DeviceSessions` plugin of
the worker, so a calibration run and the real run build the program once. With rounds
(`mcl run --rounds`), the plugin also keeps the device buffers of the arrays a range only
reads, by the Dask key of the range's arguments, so a later round of the same range does
not copy them to the device again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin

from mcl.diagnostics import MclError

PLUGIN = "mcl-device-sessions"


@dataclass(frozen=True)
class PieceResult:
    """One range's outputs and times on one device."""

    outputs: dict[str, Any]
    device: str
    kernel_s: float  # median kernel time of the repetitions
    to_device_s: float
    from_device_s: float
    wall_s: float  # the task's time on the worker: build (first time), copies, kernels


class DeviceSessions(WorkerPlugin):
    """The worker's device and one `Session` per generated module (by its source)."""

    name = PLUGIN

    def __init__(self) -> None:
        self.sessions: dict[str, Any] = {}
        self.device: Any = None
        self.context: Any = None  # the device held open from the start (`warm_up`)
        self.kept: dict[str, dict[str, Any]] = {}  # by arguments' key: buffers by array

    def session(self, generated: Any) -> Any:
        from mcl.backends import default_backend, open_session

        if self.device is None:
            self.device = default_backend().select_device(None)
        key = generated.source
        if key not in self.sessions:
            # one module at a time
            self.sessions = {key: open_session(generated, self.device)}
            self.kept = {}  # buffers of the previous module's context
        return self.sessions[key]


def _sessions() -> DeviceSessions:
    from distributed import get_worker

    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN)
    if not isinstance(plugin, DeviceSessions):
        # A worker the user started: the plugin arrives with the first task.
        plugin = DeviceSessions()
        worker.plugins[PLUGIN] = plugin
    return plugin


def device_name() -> str:
    """The worker's device, as `mcl devices` names it."""
    from mcl.backends import default_backend

    backend = default_backend()
    sessions = _sessions()
    if sessions.device is None:
        sessions.device = backend.select_device(None)
    return str(backend.describe(sessions.device))


def warm(modules: tuple[str, ...]) -> str:
    """Import `modules` and open the worker's device ahead of the work (while the client
    still prepares it; a worker mcl started has done both before it joined); the
    device's name, as `device_name`."""
    warm_up(_sessions(), modules)
    return device_name()


def main(argv: list[str]) -> None:
    """A worker process of mcl's local cluster (`mcl.multi.cluster`): `argv` is its name
    and the modules to import. It imports them first, then reads its device's
    environment (a JSON object) from standard input and opens the device, then reads the
    scheduler's address (the client lists the devices and starts the scheduler
    meanwhile) and joins. It ends as soon as its standard input closes, at any point."""
    import asyncio
    import importlib
    import json
    import logging
    import os
    import queue
    import sys
    import threading

    from distributed import Worker

    name, *modules = argv
    logging.getLogger("distributed").setLevel(logging.ERROR)
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            lines.put(line)
        # The client closed the pipe or its process ended: whatever this worker is doing
        # (importing, running), its results are no longer wanted.
        os._exit(0)

    threading.Thread(target=read, daemon=True).start()
    for module in modules:  # no device is touched yet: its environment is not set
        importlib.import_module(module)
    os.environ.update(json.loads(lines.get()))
    sessions = DeviceSessions()
    try:
        warm_up(sessions, ())
    except MclError as e:  # the client reports this line (mcl.multi.cluster)
        print(e.diagnostics[0].message, file=sys.stderr)
        sys.exit(1)
    address = lines.get().strip()

    async def serve() -> None:
        async with Worker(address, nthreads=1, name=name, host="127.0.0.1",
                          death_timeout=60) as worker:
            worker.plugins[PLUGIN] = sessions
            await worker.finished()

    asyncio.run(serve())
    os._exit(0)


def warm_up(sessions: DeviceSessions, modules: tuple[str, ...]) -> None:
    """Import `modules` and open the device of `sessions` with a context, so that the
    driver's start (on NVIDIA, the CUDA driver's initialisation) is not paid by the
    first task."""
    import importlib

    from mcl.multi.cluster_backend import cluster_backend

    for module in modules:
        importlib.import_module(module)
    if sessions.device is None:
        backend = cluster_backend()
        sessions.device = backend.select_device(None)
        sessions.context = backend.hold_device(sessions.device)


def build(generated: Any) -> str:
    """Build the module's program on the worker's device ahead of the timed run (NVIDIA
    compiles here; PoCL compiles each kernel at its first launch)."""
    sessions = _sessions()
    sessions.session(generated)
    return str(sessions.device.name)


def run_piece(generated: Any, function: str, args: dict[str, Any], repeat: int,
              kept: str | None = None) -> PieceResult:
    """Run one range (its arguments from `Split.args`) on the worker's device; with
    `kept`, the Dask key of `args`, the arrays it only reads stay on the device for the
    next run of the same arguments."""
    started = time.perf_counter()
    sessions = _sessions()
    session = sessions.session(generated)
    buffers = None if kept is None else sessions.kept.setdefault(kept, {})
    result = session.run(function, args, repeat, buffers)
    return PieceResult(dict(result.outputs), result.device, result.kernel_time_s,
                       result.to_device_s, result.from_device_s,
                       time.perf_counter() - started)


def forget_kept(dask_worker: Any) -> int:
    """Release the device buffers kept for later rounds (`Client.run` at the end of a
    run); the number of ranges they were kept for."""
    plugin = dask_worker.plugins.get(PLUGIN)
    if not isinstance(plugin, DeviceSessions):
        return 0
    count = len(plugin.kept)
    plugin.kept = {}
    return count


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
