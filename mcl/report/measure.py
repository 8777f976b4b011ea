"""The performance column: run a version's OpenCL, generated from a leaf, on a device.

The program is translated down to the leaf when it is written above it, OpenCL is
generated (mcl.codegen) and run through the default backend (mcl.backends) on inputs
made by the kernel's numpy reference; the kernel time is the median of `repeat` runs,
and the rate is the reference's work (flops) over that time, as the paper's Table II
reports GFLOPS (`mcl.verify.rate_of`, the same formula as `mcl run`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcl.diagnostics import MclError
from mcl.quiet_threads import wait_until_quiet
from mcl.report.attained import Attained

if TYPE_CHECKING:
    from mcl.codegen.backend import Backend
    from mcl.hdl.library import HwdLibrary
    from mcl.mcpl.loader import Program


@dataclass(frozen=True)
class Measurement:
    leaf: str
    device: str = ""
    seconds: float = 0.0  # median kernel time of one run
    rate: float | None = None  # work / second (GFLOP/s for flops), None without work
    unit: str = ""  # "GFLOP/s" or "GB/s"
    verified: bool | None = None  # outputs match the reference; None when not compared
    problem: str | None = None  # why there is no figure
    roofline: Attained | None = None  # the fraction of the attainable performance reached

    @property
    def text(self) -> str:
        if self.problem:
            return f"({self.problem})"
        figure = f"{self.rate:.3g} {self.unit}" if self.rate is not None else \
            f"{self.seconds * 1e3:.3g} ms"
        if self.roofline is not None:
            from mcl.feedback.analyses.roofline import percent

            figure += f" ({percent(self.roofline.fraction)} of roof)"
        if self.verified is False:
            figure += " WRONG"
        return figure


def _backend(name: str | None) -> Backend:
    from mcl.backends import DEFAULT_BACKEND, get_backend

    return get_backend(name or DEFAULT_BACKEND)


def device_type(device: Any, backend: str | None = None) -> str:
    """gpu, cpu, accelerator or other: the key of a series' `run` table (`backend`:
    default mcl.backends' DEFAULT_BACKEND)."""
    return _backend(backend).device_kind(device)


def device_errors(backend: str | None = None) -> tuple[type[BaseException], ...]:
    """What the runtime of `backend` raises when a device cannot run a kernel it compiled
    (out of resources, too much local memory): a fact about the device, shown in the
    table, not a bug."""
    return _backend(backend).device_errors()


def can_reach(library: HwdLibrary, level: str, leaf: str) -> bool:
    """Can a program written at `level` be translated down to `leaf`?"""
    return level == leaf or level in library.ancestors(leaf)


def prepare_session(program: Program, function: str, leaf: str, library: HwdLibrary, device: Any,
                    overrides: Mapping[str, Any] | None = None,
                    queue: Any = None, backend: str | None = None) -> tuple[Any, str | None]:
    """A session of backend `backend` (default: mcl.backends' DEFAULT_BACKEND) with
    `function` of `program` (any level at or above `leaf`) built for `device` (named
    constants set by `overrides`), or (None, why not); with `queue`, on that command queue
    (and its device) instead, where the backend has queues."""
    from mcl import pipeline
    from mcl.backends import open_session

    try:
        found = program.main.function(function)
        if found is None:
            return None, f"{program.main.file} defines no function '{function}'"
        level = found.hwd
        if level != leaf and not can_reach(library, level, leaf):
            return None, f"{level} is not above {leaf}"
        generated = pipeline.generate(pipeline.checked(program, library), leaf, library,
                                      overrides=overrides, language=backend)
        return open_session(generated, device, queue=queue), None
    except MclError as exc:
        return None, exc.diagnostics[0].message.splitlines()[0]
    except device_errors(backend) as exc:
        return None, f"the device refused to build it: {exc}"


def tuned_overrides(program: Program, leaf: str, device: Any, args: Mapping[str, Any]
                    ) -> dict[str, Any] | None:
    """The constants `mcl tune` found best for this kernel file, leaf, device and sizes
    (the nearest tuned sizes), or None."""
    from mcl.tune.tuned_file import best_tuned

    backend = _backend(None)
    if device is None:  # the Session's default device
        try:
            device = backend.select_device(None)
        except MclError:
            return None
    file = program.main.file
    sizes = {k: int(v) for k, v in args.items() if isinstance(v, int) and not isinstance(v, bool)}
    config = best_tuned(file, leaf, backend.describe(device), sizes) if file else None
    return dict(config.constants) if config is not None else None


def measure_program(program: Program, function: str, leaf: str, library: HwdLibrary,
                    args: Mapping[str, Any], device: Any, *, repeat: int = 3,
                    reference: Any = None, expected: Mapping[str, Any] | None = None,
                    work: tuple[float, str] | None = None, tuned: bool = True) -> Measurement:
    """Run `function` of `program` (any level at or above `leaf`) on `device`, `repeat`
    times; compare the outputs with `expected` when given (mcl.verify). With `tuned`, the
    constants of the kernel's `.tuned.toml` for this device and sizes are used (the
    default backend's device)."""
    overrides = tuned_overrides(program, leaf, device, args) if tuned else None
    session, problem = prepare_session(program, function, leaf, library, device, overrides)
    if session is None:
        return Measurement(leaf, problem=problem)
    wait_until_quiet()  # numpy's BLAS spins its workers after a call (mcl.quiet_threads)
    try:
        result = session.run(function, dict(args), repeat)
    except MclError as exc:
        return Measurement(leaf, problem=exc.diagnostics[0].message.splitlines()[0])
    except device_errors() as exc:  # e.g. more local memory than the device has
        return Measurement(leaf, problem=f"the device refused to run it: {exc}")
    verified = None
    if expected is not None and reference is not None:
        from mcl.verify import verify

        verified = all(c.ok for c in verify(reference, expected, result.outputs, args))
    seconds = result.kernel_time_s
    from mcl.verify import rate_of

    rate, unit = rate_of(work, seconds)
    from mcl.report.attained import run_attained

    reached = run_attained(program, function, leaf, library, args, seconds)
    return Measurement(leaf, _backend(None).describe(device), seconds, rate, unit, verified,
                       roofline=reached)


@dataclass(frozen=True)
class PeerMeasurement:
    """The peer timed beside the versions: wall time of the host function (median)."""

    seconds: float
    rate: float | None
    unit: str

    @property
    def text(self) -> str:
        return f"{self.rate:.3g} {self.unit}" if self.rate is not None else \
            f"{self.seconds * 1e3:.3g} ms"


def measure_peer(fn: Any, args: Mapping[str, Any], repeat: int,
                 work: tuple[float, str] | None) -> PeerMeasurement:
    """Time `fn(args)` `repeat` times after one warm-up call; the median."""
    import statistics
    import time

    wait_until_quiet()
    fn(dict(args))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(dict(args))
        times.append(time.perf_counter() - start)
    seconds = statistics.median(times)
    from mcl.verify import rate_of

    rate, unit = rate_of(work, seconds)
    return PeerMeasurement(seconds, rate, unit)
