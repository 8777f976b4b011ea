"""Shared pieces of the benchmarks: open a device, measure its copy bandwidth, run one
kernel version verified against its reference, time peers (torch, numpy) alike.

Every benchmark reports performance as a ratio to a peer measured in the same run
(docs/performance.md); these helpers make the measurements comparable. Contracts:

`open_device(spec) -> Opened`
    `spec` is a `--device` value as `mcl run` takes it (None: $MCL_DEVICE/$PYOPENCL_CTX,
    else the PoCL CPU device; `P:D`, `N`, a name such as `nvidia`; `auto`: the first GPU).
    Device selection is mcl's own (`mcl.codegen.select_device`). `Opened` is a named tuple
    `(context, queue)`; the queue has profiling enabled; `.device`, `.name` (mcl's
    description) and `.kind` (gpu, cpu, ...) come with it. Raises `MclError` when no device
    matches.

`copy_bandwidth(queue, nbytes=256 MiB, rounds=5) -> float`
    GB/s (10⁹ bytes/s) of an OpenCL buffer-to-buffer copy of `nbytes` on the queue's device,
    counting read + write (2 · nbytes per copy); the best of `rounds`, timed by OpenCL
    profiling. `nbytes` is capped at a quarter of the device's largest allocation.

`torch_copy_bandwidth(nbytes=256 MiB, rounds=5) -> float | None`
    The same for a CUDA device-to-device copy through torch (CUDA events); None when torch
    is missing or sees no CUDA device.

`run_version(kernel_file, leaf, queue, defines, rounds, tuned=False, seed=0, inputs=None)
-> RunResult`
    Load the kernel file, translate it to `leaf` when written above it, generate OpenCL
    (with the constants of its `.tuned.toml` for this device when `tuned`), build it on the
    queue's device, make inputs with its folder's reference.py at `defines` (sizes; the
    reference's defaults for the rest; `inputs` names one of its INPUTS generators, e.g.
    spmv's "powerlaw"), run it `rounds` times and verify the outputs of the last round with
    the reference protocol (error-bound tolerances, mcl.verify). The inputs and expected
    outputs of the last call are kept, so versions of one kernel at one size share them.
    `RunResult.times` are seconds per round (the sum of the kernel times of one run, from
    OpenCL profiling events; host↔device transfers excluded); `verified` is True/False
    (None when not run); `ratio` the worst error/bound over the outputs (0 for exact
    matches); `problem` says why there is no figure (a diagnostic, a device limit), in
    which case `times` is empty. `rate` is the reference's work per second at the best
    time: GFLOP/s for `flops`, GB/s (10⁹ B/s) for `bytes_moved`, with `unit` naming it.
    Never raises for a kernel that cannot run: that is `problem`.

`time_cuda(fn, rounds) -> list[float]`, `time_cpu(fn, rounds) -> list[float]`
    Seconds of each of `rounds` calls of `fn()` after one warm-up call: CUDA events around
    the call (torch) or `time.perf_counter` wall time. `best(times)` and `median(times)`
    summarise either list.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script from a checkout: import mcl from it
    sys.path.insert(0, str(REPO))

MiB = 1024 * 1024


class Opened(NamedTuple):
    context: Any
    queue: Any

    @property
    def device(self) -> Any:
        return self.queue.device

    @property
    def name(self) -> str:
        from mcl.backends.opencl.runner import describe

        return describe(self.device)

    @property
    def kind(self) -> str:
        from mcl.backends.opencl.runner import device_kind

        return device_kind(self.device.type)


def open_device(spec: str | None = None) -> Opened:
    """A context and profiling queue on the device `spec` names (mcl's `--device`)."""
    import pyopencl as cl

    from mcl.backends.opencl.runner import select_device

    device = select_device(spec, "gpu")
    context = cl.Context([device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    return Opened(context, queue)


def copy_bandwidth(queue: Any, nbytes: int = 256 * MiB, rounds: int = 5) -> float:
    """GB/s of a device-to-device OpenCL buffer copy, read + write counted."""
    import numpy as np
    import pyopencl as cl

    nbytes = int(min(nbytes, queue.device.max_mem_alloc_size // 4))
    nbytes -= nbytes % 4
    src = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    dst = cl.Buffer(queue.context, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1.0), 0, nbytes).wait()
    times = []
    for _ in range(rounds + 1):  # the first copy warms the buffers up
        event = cl.enqueue_copy(queue, dst, src, byte_count=nbytes)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return 2 * nbytes / min(times[1:]) / 1e9


def torch_copy_bandwidth(nbytes: int = 256 * MiB, rounds: int = 5) -> float | None:
    """GB/s of a CUDA device-to-device copy through torch; None without torch or CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    src = torch.ones(nbytes // 4, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    times = time_cuda(lambda: dst.copy_(src), rounds)
    return 2 * (nbytes // 4 * 4) / min(times) / 1e9


def time_cuda(fn: Callable[[], Any], rounds: int) -> list[float]:
    """Seconds of each call of `fn` (CUDA events, torch), after one warm-up call."""
    import torch

    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3)
    return times


def time_cpu(fn: Callable[[], Any], rounds: int) -> list[float]:
    """Wall seconds of each call of `fn`, after one warm-up call."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def best(times: list[float]) -> float | None:
    return min(times) if times else None


def median(times: list[float]) -> float | None:
    return statistics.median(times) if times else None


@dataclass
class RunResult:
    kernel: str  # the kernel file, as given
    leaf: str
    sizes: dict[str, int] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)  # seconds, one per round
    verified: bool | None = None
    ratio: float | None = None  # worst |error| / bound over the outputs
    problem: str | None = None
    work: tuple[float, str] | None = None  # (amount, "FLOP" or "B") of one run
    constants: dict[str, Any] | None = None  # tuned constants used, if any

    @property
    def best(self) -> float | None:
        return best(self.times)

    @property
    def median(self) -> float | None:
        return median(self.times)

    @property
    def unit(self) -> str:
        from mcl.verify import rate_of

        return rate_of(self.work, self.best or 0.0)[1]

    @property
    def rate(self) -> float | None:
        """GFLOP/s or GB/s (10⁹ per second, mcl.verify.rate_of) at the best time."""
        from mcl.verify import rate_of

        return rate_of(self.work, self.best or 0.0)[0]


_PREPARED: dict[tuple, tuple[dict[str, int], dict[str, Any], Any]] = {}


def prepared_inputs(reference: Any, defines: Mapping[str, int], seed: int,
                    kind: str | None) -> tuple[dict[str, int], dict[str, Any], Any]:
    """(sizes, inputs, expected outputs with bounds), kept for the last key only: the
    arrays of a paper-sized run are large."""
    from mcl.verify import expected_outputs, make_inputs

    key = (str(reference.path), tuple(sorted(defines.items())), seed, kind)
    if key not in _PREPARED:
        _PREPARED.clear()
        sizes, inputs = make_inputs(reference, dict(defines), seed, kind)
        _PREPARED[key] = (sizes, inputs, expected_outputs(reference, inputs))
    return _PREPARED[key]


def run_version(kernel_file: str | Path, leaf: str, queue: Any, defines: Mapping[str, int],
                rounds: int, tuned: bool = False, seed: int = 0,
                inputs: str | None = None, backend: str = "opencl",
                cuda_device: Any = None) -> RunResult:
    """Run one kernel version on the queue's device, verified (see the module docstring);
    with `backend="cuda"`, its generated CUDA on `cuda_device` (the same constants as the
    OpenCL build: a .tuned.toml entry of the queue's device applies to both)."""
    from mcl.diagnostics import MclError
    from mcl.hdl.library import default_library
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import device_errors, prepare_session, tuned_overrides
    from mcl.verify import load_reference, reference_for, verify

    result = RunResult(str(kernel_file), leaf)
    try:
        library = default_library()
        program = load_program(Path(kernel_file), (), library)
        reference = load_reference(reference_for(kernel_file))
        sizes, args, expected = prepared_inputs(reference, defines, seed, inputs)
        result.sizes, result.work = sizes, reference.work(sizes)
    except MclError as exc:
        result.problem = exc.diagnostics[0].message.splitlines()[0]
        return result
    overrides = tuned_overrides(program, leaf, queue.device, args) if tuned else None
    result.constants = overrides
    device = cuda_device if backend == "cuda" else queue.device
    session, problem = prepare_session(program, reference.function, leaf, library,
                                       device, overrides, queue=queue, backend=backend)
    if session is None:
        result.problem = problem
        return result
    try:
        run = session.run(reference.function, dict(args), max(1, rounds))
    except MclError as exc:
        result.problem = exc.diagnostics[0].message.splitlines()[0]
        return result
    except device_errors() as exc:  # out of resources, too much local memory
        result.problem = f"the device refused to run it: {exc}"
        return result
    result.times = list(run.kernel_times_s)
    checks = verify(reference, expected, run.outputs, sizes)
    result.verified = all(c.ok for c in checks)
    result.ratio = max((c.ratio for c in checks), default=0.0)
    return result
