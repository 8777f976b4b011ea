"""Run the matmul refinement series on one OpenCL device, side by side with the vendor
library measured in the same run.

    PYTHONPATH=. python benchmarks/matmul_series.py                      # PoCL CPU, 2048³
    PYTHONPATH=. python benchmarks/matmul_series.py --device nvidia --size 4096 \\
        --versions perfect,nvidia_v1,hopper_v1,hopper_v2 --tuned

Every version in kernels/matmul/series.toml that names a leaf for the device's type (gpu,
cpu) is translated to that leaf, compiled to OpenCL (mcl.codegen) and run through
pyopencl; its time is the OpenCL profiling time of the kernel. The vendor libraries are
timed in the same rounds, interleaved with the versions, so that a machine shared with
other work slows both alike:
- on a CPU device: numpy `a @ b` (OpenBLAS), wall time;
- on an NVIDIA GPU: cuBLAS SGEMM through torch with TF32 off
  (`torch.backends.cuda.matmul.allow_tf32 = False`), CUDA-event time; and CLBlast SGEMM
  through pyclblast on the same OpenCL device, when pyclblast imports.
Each figure is the best of `--rounds` rounds (the least disturbed one); the median is
printed too. `--tuned` adds a row per version with the constants `mcl tune` wrote to its
.tuned.toml for this device. Each row also shows its NDRange at this size (work-groups x
work-items per group), to compare with the device's compute units. The ratios at the end
are the ones docs/performance.md asks for: the best version against perfect and against
each vendor library.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Result:
    name: str
    leaf: str = ""
    times: list[float] = field(default_factory=list)  # seconds, one per round
    verified: bool | None = None
    problem: str | None = None
    version: str = ""  # the series version (name is "VERSION (tuned)" for a tuned row)
    constants: dict[str, Any] | None = None  # the tuned constants, for a tuned row
    launch: str = ""  # work-groups x work-items of its kernels at this size

    @property
    def best(self) -> float | None:
        return min(self.times) if self.times else None

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None


def gflops(flops: float, seconds: float | None) -> float | None:
    return flops / seconds * 1e-9 if seconds else None


# ----------------------------------------------------------------------------- vendors


def numpy_vendor(a: np.ndarray, b: np.ndarray) -> Callable[[], float]:
    """numpy `a @ b` in float32 (OpenBLAS on this machine): wall time of one product."""

    def run() -> float:
        start = time.perf_counter()
        a @ b
        return time.perf_counter() - start

    run()  # warm-up: threads started, pages touched
    return run


def cublas_vendor(a: np.ndarray, b: np.ndarray) -> Callable[[], float] | str:
    """cuBLAS SGEMM through torch, TF32 off (so it computes in float32 like the kernels)."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ta = torch.from_numpy(a).cuda()
    tb = torch.from_numpy(b).cuda()
    tc = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32, device="cuda")

    def run() -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(ta, tb, out=tc)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e-3

    run()
    return run


def clblast_vendor(a: np.ndarray, b: np.ndarray, device: Any) -> Callable[[], float] | str:
    """CLBlast SGEMM through pyclblast on the same OpenCL device: profiling time."""
    try:
        import pyclblast
        import pyopencl as cl
        import pyopencl.array as cla
    except ImportError:
        return "pyclblast is not installed"
    context = cl.Context([device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    da, db = cla.to_device(queue, a), cla.to_device(queue, b)
    dc = cla.zeros(queue, (a.shape[0], b.shape[1]), np.float32)
    n, p = a.shape
    m = b.shape[1]

    def run() -> float:
        event = pyclblast.gemm(queue, n, m, p, da, db, dc, a_ld=p, b_ld=m, c_ld=m)
        event.wait()
        return (event.profile.end - event.profile.start) * 1e-9

    try:
        run()
    except Exception as exc:  # noqa: BLE001 - a vendor library that fails is reported, not fatal
        return f"CLBlast failed: {exc}"
    return run


# ----------------------------------------------------------------------------- versions


def prepare_versions(names: list[str], kind: str, target: str | None, device: Any,
                     library: Any, inputs: dict[str, Any] | None = None,
                     tuned: bool = False, cuda_device: Any = None
                     ) -> tuple[list[Result], dict[str, Any]]:
    """A built OpenCL session per version (translated to its leaf for this device), with
    the constants written in the kernel; with `tuned`, also a row "VERSION (tuned)" with
    the constants of the version's .tuned.toml for this device (nearest sizes); with
    `cuda_device`, also a row "VERSION [cuda]" per row: the generated CUDA of the same
    version and constants on that device."""
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import prepare_session, tuned_overrides
    from mcl.report.series import load_series

    series = load_series(REPO / "kernels" / "matmul", library)
    results, sessions = [], {}
    for name in names:
        spec = series.version(name)
        result = Result(name, version=name)
        results.append(result)
        if spec is None or spec.translated:
            result.problem = "not a hand-written version of the series"
            continue
        leaf = target or spec.leaf_for(kind)
        if leaf is None:
            result.problem = f"series.toml names no leaf for a {kind} device"
            continue
        result.leaf = leaf
        program = load_program(spec.path, (), library)
        variants: list[tuple[Result, dict[str, Any] | None]] = [(result, None)]
        if tuned:
            overrides = tuned_overrides(program, leaf, device, inputs or {})
            if overrides is not None:
                row = Result(f"{name} (tuned)", leaf, version=name, constants=overrides)
                results.append(row)
                variants.append((row, overrides))
        if cuda_device is not None:
            for row, overrides in list(variants):
                twin = Result(f"{row.name} [cuda]", leaf, version=name, constants=overrides)
                results.append(twin)
                variants.append((twin, overrides))
        for row, overrides in variants:
            backend = "cuda" if row.name.endswith("[cuda]") else "opencl"
            session, problem = prepare_session(
                program, "matmul", leaf, library,
                cuda_device if backend == "cuda" else device, overrides, backend=backend)
            if session is None:
                row.problem = problem
                continue
            sessions[row.name] = session
            if inputs is not None:
                row.launch = launch_text(session.generated, inputs)
    return results, sessions


def roof_fractions(results: list[Result], library: Any, sizes: dict[str, int]
                   ) -> dict[str, Any]:
    """Each version's fraction of the attainable performance at its leaf (issue 17,
    mcl.report.attained), from its best time; None where the leaf states no peak."""
    from mcl.mcpl.loader import load_program
    from mcl.report.attained import run_attained
    from mcl.report.series import load_series

    series = load_series(REPO / "kernels" / "matmul", library)
    out: dict[str, Any] = {}
    for r in results:
        spec = series.version(r.version or r.name)
        if r.best is None or not r.leaf or spec is None or spec.path is None:
            continue
        program = load_program(spec.path, (), library)
        out[r.name] = run_attained(program, "matmul", r.leaf, library, sizes, r.best)
    return out


def _asdict_or_none(x: Any) -> dict[str, Any] | None:
    return asdict(x) if x is not None else None


def launch_text(generated: Any, inputs: dict[str, Any]) -> str:
    """`352 x 1` for 352 work-groups of 1 work-item (per launch, `+` between launches)."""
    from mcl.backends.opencl.runner import launch_values, ndrange_of

    parts = []
    for kernel, values in launch_values(generated, "matmul", dict(inputs)):
        groups, local = ndrange_of(kernel, values)
        parts.append(f"{int(np.prod(groups))} x {int(np.prod(local))}")
    return " + ".join(parts)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(REPO))
    from mcl.backends.opencl.runner import describe, select_device
    from mcl.diagnostics import MclError
    from mcl.hdl.library import default_library
    from mcl.report.measure import device_errors, device_type
    from mcl.report.series import load_series
    from mcl.verify import expected_outputs, load_reference, make_inputs, verify

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", help="OpenCL device: P:D, N, or a name such as nvidia "
                        "(default: the PoCL CPU device)")
    parser.add_argument("--size", type=int, default=2048, help="n = m = p (default 2048)")
    parser.add_argument("--versions", help="comma-separated versions (default: every "
                        "version of series.toml that names a leaf for the device)")
    parser.add_argument("--target", help="run every version on this leaf instead of its own")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--no-verify", action="store_true",
                        help="skip comparing each version's output with the reference")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--tuned", action="store_true",
                        help="also run each version with the constants of its .tuned.toml "
                        "for this device (mcl tune), as a row 'VERSION (tuned)'")
    parser.add_argument("--backend", choices=("opencl", "both"), default="opencl",
                        help="both: also each version's generated CUDA on the first CUDA "
                        "device, as a row 'VERSION [cuda]' timed in the same rounds")
    args = parser.parse_args(argv)

    library = default_library()
    device = select_device(args.device)
    kind = device_type(device)
    series = load_series(REPO / "kernels" / "matmul", library)
    if args.versions:
        names = [v.strip() for v in args.versions.split(",") if v.strip()]
    else:
        names = [v.name for v in series.versions
                 if not v.translated and (args.target or v.leaf_for(kind))]

    reference = load_reference(REPO / "kernels" / "matmul" / "reference.py")
    sizes, inputs = make_inputs(reference, {"n": args.size, "m": args.size, "p": args.size}, 0)
    flops = reference.work(sizes)[0]
    units = getattr(device, "max_compute_units", "?")
    print(f"device: {describe(device)} ({kind}, {units} compute units); n = m = p = "
          f"{args.size}; best and median of {args.rounds} rounds", flush=True)

    cuda_device = None
    if args.backend == "both":
        from mcl.backends.cuda.runner import select_cuda_device

        cuda_device = select_cuda_device(None)
    results, sessions = prepare_versions(names, kind, args.target, device, library, inputs,
                                         args.tuned, cuda_device)
    vendors: dict[str, Callable[[], float]] = {}
    vendor_problems: dict[str, str] = {}
    a, b = inputs["a"], inputs["b"]
    candidates: dict[str, Callable[[], Any]] = (
        {"numpy (OpenBLAS)": lambda: numpy_vendor(a, b)} if kind == "cpu" else
        {"cuBLAS SGEMM (no TF32)": lambda: cublas_vendor(a, b),
         "CLBlast SGEMM": lambda: clblast_vendor(a, b, device)})
    for label, make in candidates.items():
        vendor = make()
        if isinstance(vendor, str):
            vendor_problems[label] = vendor
        else:
            vendors[label] = vendor
    vendor_times: dict[str, list[float]] = {label: [] for label in vendors}

    expected = None if args.no_verify else expected_outputs(reference, inputs)
    for _ in range(max(1, args.rounds)):
        for label, vendor in vendors.items():
            vendor_times[label].append(vendor())
        for result in results:
            session = sessions.get(result.name)
            if session is None:
                continue
            try:
                run = session.run("matmul", dict(inputs), 1)
            except device_errors() as exc:  # e.g. gpu_v3's p-sized local tile at 4096
                result.problem = f"the device refused to run it: {exc}"
                sessions.pop(result.name)
                continue
            except MclError as exc:  # the CUDA runner's one-line errors
                result.problem = str(exc).splitlines()[0]
                sessions.pop(result.name)
                continue
            result.times.append(run.kernel_time_s)
            if expected is not None and result.verified is None:
                result.verified = all(
                    c.ok for c in verify(reference, expected, run.outputs, inputs))

    _print(results, vendor_times, vendor_problems, flops, units)
    roofs = roof_fractions(results, library, {"n": args.size, "m": args.size, "p": args.size})
    for name, reached in roofs.items():
        if reached is not None:
            print(f"{name}: {reached.text}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": describe(device), "kind": kind, "size": args.size, "rounds": args.rounds,
            "compute_units": units,
            "versions": [asdict(r) | {"best_gflops": gflops(flops, r.best),
                                      "roofline": _asdict_or_none(roofs.get(r.name))}
                         for r in results],
            "vendors": {k: {"times": v, "best_gflops": gflops(flops, min(v))}
                        for k, v in vendor_times.items()},
            "vendor_problems": vendor_problems,
        }, indent=2), encoding="utf-8")
    return 0 if all(r.verified is not False for r in results) else 1


def _print(results: list[Result], vendor_times: dict[str, list[float]],
           vendor_problems: dict[str, str], flops: float, units: Any = None) -> None:
    rows = [(r.name, r.leaf, gflops(flops, r.best), gflops(flops, r.median),
             {None: "", True: "ok", False: "WRONG"}[r.verified], r.problem, r.launch)
            for r in results]
    rows += [(label, "vendor", gflops(flops, min(t)), gflops(flops, statistics.median(t)), "",
              None, "") for label, t in vendor_times.items()]
    print(f"{'version':<26}{'leaf':<12}{'GFLOP/s best':>14}{'median':>10}  check  "
          "work-groups x work-items")
    for name, leaf, best, median, check, problem, launch in rows:
        if problem:
            print(f"{name:<26}{leaf:<12}  ({problem})")
            continue
        print(f"{name:<26}{leaf:<12}{best:>14.1f}{median:>10.1f}  {check:<5}  {launch}")
    for label, problem in vendor_problems.items():
        print(f"{label}: not measured ({problem})")
    for r in results:
        if r.constants:
            constants = ", ".join(f"{k} = {v}" for k, v in r.constants.items())
            print(f"{r.name}: {constants}")
    if isinstance(units, int):
        for r in results:
            groups = [int(part.split(" x ")[0]) for part in r.launch.split(" + ") if part]
            if groups and max(groups) < units:
                print(f"{r.name}: {max(groups)} work-groups for {units} compute units: "
                      "some units idle at this size")

    measured = [r for r in results if r.best and r.verified is not False]
    if not measured:
        return
    best = min(measured, key=lambda r: r.best)
    print(f"\nbest version: {best.name} ({gflops(flops, best.best):.1f} GFLOP/s)")
    perfect = next((r for r in measured if r.name == "perfect"), None)
    if perfect is not None:
        print(f"  vs perfect: {perfect.best / best.best:.1f}x faster")
    for label, times in vendor_times.items():
        print(f"  vs {label}: {min(times) / best.best * 100:.0f}% "
              f"(median vs median: {statistics.median(times) / best.median * 100:.0f}%)")


if __name__ == "__main__":
    sys.exit(main())
