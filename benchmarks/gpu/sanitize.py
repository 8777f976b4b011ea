"""compute-sanitizer (memcheck, racecheck) on the hopper versions at a realistic size
(issue 20), on the GPU machine:

    python3 benchmarks/gpu/sanitize.py --device nvidia [--size 1024] [--tools memcheck,racecheck]
                                       [--out benchmarks/results/sanitize] [--timeout 900]

Cases: every kernel file written for hopper (`kernels/*/hopper*.mcpl`, so new series are
picked up) and every kernel's `perfect.mcpl` translated to hopper, each run as
`mcl run --target hopper --device DEVICE --verify` with its data sizes (reference sizes of
10 and more) set to --size, under `compute-sanitizer --tool TOOL`.

compute-sanitizer instruments CUDA; whether it sees kernels that NVIDIA's OpenCL driver
launches is not documented. Two positive controls settle it on the machine at hand: a
CUDA kernel (through CuPy) and an OpenCL kernel (through pyopencl) that both write past
the end of a buffer and race on shared/local memory. A tool whose OpenCL control shows no
error cannot vouch for the OpenCL cases, and the summary says so instead of reporting
them clean. Each run's full output is kept under --out; the summary is printed and saved
as summary.md there.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CONTROL_CUDA = r"""
import cupy as cp
cp.cuda.set_allocator(None)  # no memory pool: memcheck sees the 128-byte allocation itself
kernel = cp.RawKernel(r'''
extern "C" __global__ void bad(float* a, int n) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = (float)t;
    float x = s[(t + 1) % 32];          // racecheck: read of another thread's write, no barrier
    a[n + t] = x;                       // memcheck: past the end of a
}''', 'bad')
a = cp.zeros(32, dtype=cp.float32)
kernel((1,), (32,), (a, cp.int32(32)))
cp.cuda.Device().synchronize()
print("cuda control ran")
"""

_CONTROL_OPENCL = r"""
import sys
import numpy as np
import pyopencl as cl
spec = sys.argv[1]
devices = [d for p in cl.get_platforms() for d in p.get_devices()
           if spec.lower() in (p.name + d.name + d.vendor).lower()]
ctx = cl.Context([devices[0]])
queue = cl.CommandQueue(ctx)
program = cl.Program(ctx, '''
__kernel void bad(__global float* a, int n) {
    __local float s[32];
    int t = get_local_id(0);
    s[t] = (float)t;
    float x = s[(t + 1) % 32];
    a[n + t] = x;
}''').build()
a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 32 * 4)
program.bad(queue, (32,), (32,), a, np.int32(32))
queue.finish()
print("opencl control ran on", devices[0].name)
"""


def sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/compute-sanitizer"), reverse=True):
        return str(candidate)
    return None


def cases(size: int) -> list[tuple[str, Path, dict[str, int]]]:
    sys.path.insert(0, str(REPO))
    from mcl.verify import load_reference

    out = []
    for folder in sorted((REPO / "kernels").iterdir()):
        if not (folder / "reference.py").exists():
            continue
        sizes = {k: (size if v >= 10 else v) for k, v in load_reference(
            folder / "reference.py").sizes.items()}
        for path in [*sorted(folder.glob("hopper*.mcpl")), folder / "perfect.mcpl"]:
            if path.exists():
                out.append((f"{folder.name}/{path.stem}", path, sizes))
    return out


def errors_in(output: str) -> int | None:
    """compute-sanitizer's `ERROR SUMMARY: N errors` (summed over processes), or None
    when it printed none."""
    found = re.findall(r"ERROR SUMMARY: (\d+) error", output)
    # racecheck reports hazards as "RACECHECK SUMMARY: N hazards displayed (E errors, W
    # warnings)"; a RAW/WAR hazard on shared memory is a real race even when it is graded
    # a warning, so every hazard counts.
    hazards = re.findall(r"RACECHECK SUMMARY: (\d+) hazard", output)
    if not found and not hazards:
        return None
    return sum(int(n) for n in found) + sum(int(n) for n in hazards)


def run(command: list[str], log: Path, timeout: float) -> tuple[int | None, float, str]:
    start = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=REPO, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        status = None
        output = f"{exc.stdout or ''}{exc.stderr or ''}\n(timed out after {timeout:.0f} s)"
    log.write_text(" ".join(command) + "\n\n" + (output if isinstance(output, str) else ""))
    return status, time.monotonic() - start, output if isinstance(output, str) else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="nvidia", help="OpenCL device spec for mcl run")
    parser.add_argument("--size", type=int, default=1024, help="data sizes (default 1024)")
    parser.add_argument("--tools", default="memcheck,racecheck")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/sanitize")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--only", default="", help="substring of the case names to run")
    args = parser.parse_args(argv)
    tool_path = sanitizer()
    if tool_path is None:
        print("compute-sanitizer not found (PATH, /usr/local/cuda*/bin)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for tool in args.tools.split(","):
        base = [tool_path, "--tool", tool, "--error-exitcode", "99"]
        if tool == "racecheck":
            base += ["--racecheck-report", "all"]
        controls = {
            "control: CUDA (CuPy)": [sys.executable, "-c", _CONTROL_CUDA],
            "control: OpenCL (pyopencl)": [sys.executable, "-c", _CONTROL_OPENCL, args.device],
        }
        for name, command in controls.items():
            slug = re.sub(r"\W+", "_", name)
            status, seconds, output = run(base + command, args.out / f"{tool}-{slug}.log",
                                          args.timeout)
            rows.append((tool, name, "", status, errors_in(output), seconds))
        for name, path, sizes in cases(args.size):
            if args.only and args.only not in name:
                continue
            defines = [a for k, v in sizes.items() for a in ("-D", f"{k}={v}")]
            command = [sys.executable, "-m", "mcl", "run", "--target", "hopper", "--device",
                       args.device, "--verify", *defines, str(path)]
            slug = re.sub(r"\W+", "_", name)
            status, seconds, output = run(base + command, args.out / f"{tool}-{slug}.log",
                                          args.timeout)
            shown = " ".join(f"{k}={v}" for k, v in sizes.items())
            rows.append((tool, name, shown, status, errors_in(output), seconds))
            print(f"{tool:9} {name:28} {shown:28} exit {status} errors {errors_in(output)} "
                  f"{seconds:6.1f} s", flush=True)
    lines = ["| tool | case | sizes | exit | errors reported | seconds |", "|---|---|---|---|---|---|"]
    lines += [f"| {t} | {n} | {s} | {'timeout' if st is None else st} | "
              f"{'none printed' if e is None else e} | {sec:.1f} |" for t, n, s, st, e, sec in rows]
    verdicts = []
    for tool in args.tools.split(","):
        control = {n: e for t, n, _, _, e, _ in rows if t == tool and n.startswith("control")}
        opencl = control.get("control: OpenCL (pyopencl)")
        if not opencl:
            verdicts.append(f"- {tool}: the OpenCL control shows no error, so {tool} does not "
                            "see kernels of NVIDIA's OpenCL driver here; 0 errors on the cases "
                            "below means nothing.")
        else:
            verdicts.append(f"- {tool}: the OpenCL control is caught ({opencl} errors): the "
                            "cases' figures are meaningful.")
    text = "\n".join(["# compute-sanitizer on the hopper versions", "", *verdicts, "", *lines])
    (args.out / "summary.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
