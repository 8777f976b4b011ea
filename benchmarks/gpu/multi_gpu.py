"""One kernel split across 1, 2, ... N GPUs on Dask (`mcl run --devices`), and
`mcl tune --parallel` on N GPUs against one (docs/scaling.md, docs/performance.md).

    python3 benchmarks/gpu/multi_gpu.py --json $OUT/multi-gpu.json         # every GPU
    python3 benchmarks/gpu/multi_gpu.py --small --device-list 1,1 --leaf hopper  # PoCL check
    python3 benchmarks/gpu/multi_gpu.py --no-tune --chunks 4 --rounds 5 --json $OUT/m.json

For each application (matmul, convolution, Black-Scholes; the leaf versions of
APPS) at the paper's size of benchmarks/apps and at SCALE times as many rows of the split
dimension: `mcl run --devices D --format json --verify` with D the first 1, 2, 4, ... of
the devices, each through the same Dask code path. Recorded per run: the kernel time of
the slowest device (no transfers), the end-to-end time (inputs sent, ranges run, outputs
assembled), per-device times and ranges, and whether the output verified; with
`--chunks K` each device's share is K ranges (work stealing), with `--rounds N` every run
is N rounds with the inputs kept on the workers after the first, and each round's
end-to-end and host-to-device times are recorded (the kernel time and efficiency are the
last round's). Parallel
efficiency on N devices is t(1) / (N * t(N)), a ratio within this run. The host's
host-to-device bandwidth is measured in the same run on every device (a pyopencl copy of
256 MiB of pageable numpy memory, the copy `mcl run` makes), the figure that bounds the
end-to-end time. Last, `mcl tune --parallel` of TUNE_KERNEL on all devices against one:
wall time and the best configuration each found.

Runs mcl as `sys.executable -m mcl` in subprocesses, so it needs mcl, pyopencl and
distributed importable by that interpreter and nothing else (no torch, no cupy). Exit
status 1 when any output is wrong or a run fails.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "kernels"
# (application, leaf version, the reference size scaled for the 4x case, paper sizes)
APPS: list[tuple[str, str, str, dict[str, int]]] = [
    ("matmul", "hopper_v1.mcpl", "n", {"n": 4096, "m": 4096, "p": 4096}),
    ("convolution", "hopper_v1.mcpl", "h", {"h": 4096, "w": 4096, "fh": 9, "fw": 9}),
    ("blackscholes", "hopper_v1.mcpl", "n", {"n": 16_000_000}),
]
SMALL = {"matmul": {"n": 300, "m": 70, "p": 21}, "convolution": {"h": 301, "w": 77, "fh": 3,
                                                                  "fw": 5},
         "blackscholes": {"n": 30001}}
SCALE = 4
TUNE_KERNEL = ("matmul", "hopper_v1.mcpl")
MiB = 1024 * 1024


def mcl(*argv: str, timeout: float = 3600) -> tuple[int, str, str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mcl", *argv], capture_output=True,
                          text=True, cwd=REPO, timeout=timeout)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


def device_indices(kind: str) -> list[str]:
    """`mcl devices` indices of every device of `kind`."""
    sys.path.insert(0, str(REPO))
    from mcl.backends.opencl.runner import list_devices

    return [str(info.index) for info, _ in list_devices() if info.kind == kind]


def h2d_bandwidth(spec: str, nbytes: int = 256 * MiB, rounds: int = 5) -> float:
    """GB/s of a host-to-device copy of pageable numpy memory on device `spec`."""
    sys.path.insert(0, str(REPO))
    import numpy as np
    import pyopencl as cl

    from mcl.backends.opencl.runner import select_device

    device = select_device(spec)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    nbytes = int(min(nbytes, device.max_mem_alloc_size // 2))
    host = np.ones(nbytes // 4, dtype=np.float32)
    buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE, host.nbytes)
    times = []
    for _ in range(rounds + 1):  # the first copy maps the pages
        event = cl.enqueue_copy(queue, buffer, host)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return host.nbytes / min(times[1:]) / 1e9


def run_split(path: Path, leaf: str, sizes: dict[str, int], devices: list[str],
              repeat: int, chunks: int = 1, rounds: int = 1) -> dict[str, Any]:
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    modes = ["--chunks", str(chunks), "--rounds", str(rounds)]
    rc, out, err, wall = mcl("run", str(path), "--target", leaf, *defines, "--verify",
                             "--repeat", str(repeat), "--devices", ",".join(devices),
                             *modes, "--format", "json")
    record: dict[str, Any] = {"devices": devices, "rc": rc, "wall_s": wall,
                              "command": f"mcl run {path.relative_to(REPO)} --target {leaf} "
                              f"{' '.join(defines)} --verify --repeat {repeat} --devices "
                              f"{','.join(devices)} {' '.join(modes)} --format json"}
    try:
        document = json.loads(out)
    except json.JSONDecodeError:
        record["error"] = (err.strip().splitlines() or ["no output"])[-1]
        return record
    record |= {"kernel_s": document["seconds"], "verified": document["verified"],
               "multi": document.get("multi")}
    return record


def run_tune(path: Path, leaf: str, sizes: dict[str, int], devices: list[str]) -> dict[str, Any]:
    defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
    rc, out, err, wall = mcl("tune", str(path), "--target", leaf, *defines, "--parallel",
                             "--devices", ",".join(devices), "--no-write", "--no-cache")
    best = [line.split("best:", 1)[1].strip() for line in out.splitlines() if "best:" in line]
    return {"devices": devices, "rc": rc, "wall_s": wall, "best": best,
            "error": None if rc == 0 else (err.strip().splitlines() or ["?"])[-1]}


def counts(n: int) -> list[int]:
    """1, 2, 4, ... up to n, and n."""
    out, k = [], 1
    while k < n:
        out.append(k)
        k *= 2
    return [*out, n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the raw results here")
    parser.add_argument("--leaf", default="hopper")
    parser.add_argument("--kind", default="gpu", help="device kind to use (default gpu)")
    parser.add_argument("--device-list", help="device specs instead of every device of "
                        "--kind, e.g. 1,1 (a CPU shared by two workers)")
    parser.add_argument("--small", action="store_true", help="tiny sizes: check the script")
    # One repetition: the end-to-end time then holds one run (each repetition copies its
    # inputs again); the kernels are built before the timed run.
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--chunks", type=int, default=1,
                        help="ranges per device (mcl run --chunks: work stealing)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per run (mcl run "
                        "--rounds: the inputs kept on the workers after the first)")
    parser.add_argument("--no-tune", action="store_true")
    parser.add_argument("--factors", default=f"1,{SCALE}",
                        help=f"size factors to run (default 1,{SCALE}: the paper's size and "
                        f"{SCALE} times as many rows)")
    parser.add_argument("--apps", default=",".join(a[0] for a in APPS),
                        help="comma-separated applications to split (default all; none: "
                        "only the tuning)")
    args = parser.parse_args(argv)

    devices = args.device_list.split(",") if args.device_list else device_indices(args.kind)
    if not devices:
        print(f"no {args.kind} device", file=sys.stderr)
        return 1
    results: dict[str, Any] = {"devices": devices, "leaf": args.leaf, "scale": SCALE,
                               "chunks": args.chunks, "rounds": args.rounds,
                               "h2d_GBps": {d: h2d_bandwidth(d) for d in sorted(set(devices))},
                               "runs": [], "tune": []}
    print(f"host-to-device bandwidth (GB/s): {results['h2d_GBps']}")
    failed = False
    wanted = set(filter(None, args.apps.split(",")))
    for app, version, scaled, paper in APPS:
        if app not in wanted:
            continue
        base = SMALL[app] if args.small else paper
        for factor in (int(f) for f in args.factors.split(",")):
            sizes = {**base, scaled: base[scaled] * factor}
            single: float | None = None
            for n in counts(len(devices)):
                record = run_split(KERNELS / app / version, args.leaf, sizes, devices[:n],
                                   args.repeat, args.chunks, args.rounds)
                record |= {"app": app, "sizes": sizes, "n": n}
                ok = record.get("verified") is True
                failed |= not ok
                if ok and n == 1:
                    single = record["kernel_s"]
                if ok and single is not None:
                    record["efficiency"] = single / (n * record["kernel_s"])
                results["runs"].append(record)
                multi = record.get("multi") or {}
                kernel_ms = record.get("kernel_s", float("nan")) * 1e3
                print(f"{app} {sizes} on {n}: kernel {kernel_ms:.3f} ms, "
                      f"end to end {multi.get('end_to_end_s', float('nan')) * 1e3:.1f} ms, "
                      f"efficiency {record.get('efficiency', float('nan')):.3f}, "
                      f"verified {record.get('verified')} {record.get('error') or ''}", flush=True)
                if len(multi.get("rounds") or []) > 1:
                    print("  rounds, end to end ms: " + ", ".join(
                        f"{r['end_to_end_s'] * 1e3:.1f}" for r in multi["rounds"]) + "; ranges "
                        "per device (taken from others): " + ", ".join(
                        f"{d['ranges']} ({d['stolen']})" for d in multi["devices"]), flush=True)
    if not args.no_tune:
        app, version = TUNE_KERNEL
        sizes = SMALL[app] if args.small else dict(APPS[0][3])
        # All devices first: the one-device search then finds every kernel in the
        # driver's compile cache, so its time is not inflated by compiles (the ratio
        # errs against --parallel).
        for chosen in (devices, [devices[0]]):
            record = run_tune(KERNELS / app / version, args.leaf, sizes, chosen)
            failed |= record["rc"] != 0
            results["tune"].append(record)
            print(f"tune --parallel on {len(chosen)}: {record['wall_s']:.1f} s, best "
                  f"{record['best']} {record['error'] or ''}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
