"""`mcl run FILE --target LEAF --devices LIST|all [--scheduler ADDRESS]`: one kernel split
across several devices on Dask (mcl.multi; docs/scaling.md). `mcl run` calls these for
`--devices` or `--scheduler`; preparing the inputs and verifying the outputs are its own.
"""

from __future__ import annotations

import argparse
from typing import Any

from mcl.diagnostics import MclError, error
from mcl.output_width import say
from mcl.styled import text_console


def add_arguments(p: argparse.ArgumentParser, purpose: str) -> None:
    """`--devices` and `--scheduler`; `purpose` says what the workers do."""
    p.add_argument(
        "--devices", metavar="LIST",
        help=f"{purpose} several devices, one Dask worker each: device specs as --device "
        "takes them, comma-separated (0,1; a CPU named twice is shared), or `all` "
        "(docs/scaling.md)")
    p.add_argument(
        "--scheduler", metavar="ADDRESS",
        help=f"{purpose} the workers of this running Dask cluster (e.g. tcp://node1:8786, "
        "started by dask-jobqueue) instead of a local one")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """`mcl run`'s own options of a split run: ranges per device and rounds."""
    p.add_argument(
        "--chunks", type=int, default=1, metavar="K",
        help="with --devices or --scheduler: split each device's share into K ranges; a "
        "device that runs out takes the last range of a slower one (work stealing; "
        "default 1: one range per device)")
    p.add_argument(
        "--rounds", type=int, default=1, metavar="N",
        help="with --devices or --scheduler: run the split kernel N times, the inputs "
        "kept on the workers and their devices after the first; the report is the last "
        "round's (default 1)")


def is_multi(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "devices", None) or getattr(args, "scheduler", None))


def execute_multi(prepared: Any, args: argparse.Namespace) -> Any:
    """Split the prepared kernel, run its ranges on the cluster, assemble the outputs:
    an `mcl.multi.run.MultiResult`."""
    from mcl.backends import generate_module, load_mapping
    from mcl.multi.cluster import connect, device_slots
    from mcl.multi.run import SplitRun, run_split
    from mcl.multi.split import split_program

    if not args.target:
        raise MclError(error("run-devices-target", "--devices and --scheduler split a "
                             "generated kernel", hint="add --target LEAF"))
    from mcl.backends import DEFAULT_BACKEND, default_backend

    backend = getattr(args, "backend", DEFAULT_BACKEND)
    if backend != DEFAULT_BACKEND:  # the cluster's workers run the default backend's
        raise MclError(error("run-devices-backend", "--devices and --scheduler run "
                             f"{default_backend().title} kernels",
                             hint=f"leave out --backend {backend}"))
    for flag, value in (("--chunks", args.chunks), ("--rounds", args.rounds)):
        if value < 1:
            raise MclError(error("run-devices-count", f"{flag} {value}: needs a positive "
                                 "count", hint=f"e.g. {flag} 4"))
    mapping = load_mapping(prepared.library.get(args.target))
    slots = None if args.scheduler else device_slots(args.devices, mapping.device_type)
    overrides = _tuned(prepared, args, slots)
    with prepared.timings.step("build", f"splitting {prepared.function} and generating "
                               f"OpenCL for {args.target}"):
        # Split the kernel as it runs: at the leaf (section 4.4), translated there first.
        split = split_program(prepared.checked, prepared.function, args.target,
                              prepared.library, prepared.args, overrides)
        assert split.program is not None  # split_program sets it
        generated = generate_module(split.program, args.target, prepared.library,
                                    overrides=overrides)
    if slots:  # refuse overlapping writes before any worker starts (run_split checks again)
        from mcl.multi.split import ranges

        split.check_disjoint([split.piece(first, count) for first, count
                              in ranges(split.blocks, [1.0] * len(slots)) if count])

    from mcl.progress import Progress

    tell = Progress("run", quiet=getattr(args, "quiet", False)).say

    job = SplitRun(split, generated, prepared.function, prepared.args, args.repeat,
                   args.chunks, args.rounds)
    with connect(slots, args.scheduler) as client:
        return run_split(client, job, tell)


def _tuned(prepared: Any, args: argparse.Namespace, slots: list[Any] | None) -> Any:
    """The constants of the kernel's .tuned.toml where every device of --devices has one
    name (one code runs on all of them); None otherwise, and with --scheduler, whose
    devices are known only once the run has started."""
    from mcl.tune.tuned_file import best_tuned, describe_tuned

    names = {slot.name for slot in slots or []}
    if args.no_tuned or len(names) != 1:
        return None
    config = best_tuned(prepared.path, args.target, names.pop(), prepared.sizes)
    if config is None:
        return None
    say(describe_tuned(config, prepared.path))
    return config.constants


def report_multi(prepared: Any, target: str, result: Any, repeat: int) -> None:
    """The kernel time of the slowest device and the rate, then a line per device."""

    from mcl.commands.kernel_time import kernel_line
    from mcl.multi.run import describe_devices

    line = kernel_line(prepared, target, result.kernel_time_s, repeat, "the slowest device")
    say(f"{line} on {result.device}; end to end {result.end_to_end_s * 1e3:.1f} ms")
    if len(result.rounds) > 1:
        first = result.rounds[0]
        say(f"  round {len(result.rounds)} of {len(result.rounds)}, the inputs kept on the "
              f"workers and devices since round 1 (end to end {first.end_to_end_s * 1e3:.1f} "
              f"ms, to device {first.to_device_s * 1e3:.3f} ms); every round: "
              + ", ".join(f"{r.end_to_end_s * 1e3:.1f}" for r in result.rounds) + " ms")
    for device_line in describe_devices(result):
        say(device_line)
    text_console().print(f"  apart from the kernel: {prepared.timings.text()}")


def devices_document(result: Any) -> dict[str, Any]:
    """The `multi` member of `mcl run --format json`."""
    from dataclasses import asdict

    return {"blocks": result.blocks, "end_to_end_s": result.end_to_end_s,
            "calibrated": result.calibrated, "chunks": result.chunks,
            "rounds": [asdict(r) for r in result.rounds],
            "devices": [asdict(d) for d in result.devices]}
