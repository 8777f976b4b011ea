"""Does a CPU version of the matmul series scale with cores on PoCL? Runs
benchmarks/matmul_series.py once per thread count, each in a fresh process with PoCL and
OpenBLAS limited to that many threads, and prints GFLOP/s, the speed-up over one thread
and the ratio to numpy (OpenBLAS) measured in the same process.

    PYTHONPATH=. python benchmarks/pocl_scaling.py --size 2048 --threads 1,2,4,8,16 \\
        --versions x86_avx512_v3 [--device pthread] [--tuned] [--json scaling.json]

PoCL's CPU driver starts one worker thread per compute unit unless POCL_MAX_PTHREAD_COUNT
caps it (PoCL reads it when the platform is first used, hence one process per count);
OpenBLAS reads OPENBLAS_NUM_THREADS (and OMP_NUM_THREADS) likewise. A version that
scales shows a speed-up near the thread count until memory bandwidth or the number of
work-groups (printed by matmul_series.py per version) runs out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THREAD_VARIABLES = ("POCL_MAX_PTHREAD_COUNT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS")


def run_with_threads(threads: int, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        command = [sys.executable, str(REPO / "benchmarks" / "matmul_series.py"),
                   "--size", str(args.size), "--rounds", str(args.rounds),
                   "--versions", args.versions, "--json", str(out)]
        if args.device:
            command += ["--device", args.device]
        if args.tuned:
            command.append("--tuned")
        env = dict(os.environ)
        env.update({name: str(threads) for name in THREAD_VARIABLES})
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
        load_before = os.getloadavg()[0]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if not out.is_file():
            raise SystemExit(f"matmul_series.py failed with {threads} threads:\n"
                             f"{done.stdout}\n{done.stderr}")
        # The machine may be shared: the 1-minute load average before and after the run
        # goes with the figures (the ratio to numpy, timed in the same rounds, is what
        # load disturbs least).
        load = (load_before, os.getloadavg()[0])
        print(done.stdout + f"load average (1 min) before and after: {load[0]:.2f}, "
              f"{load[1]:.2f}\n", flush=True)
        return json.loads(out.read_text()) | {"load_average": load}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2048)
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts (default: 1, 2, 4, ... cores)")
    parser.add_argument("--versions", default="x86_avx512_v3")
    parser.add_argument("--device", help="OpenCL device (default: the PoCL CPU device)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tuned", action="store_true")
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    cores = os.cpu_count() or 1
    if args.threads:
        counts = [int(t) for t in args.threads.split(",") if t.strip()]
    else:
        counts = sorted({min(cores, 2 ** k) for k in range(cores.bit_length() + 1)})

    runs = {t: run_with_threads(t, args) for t in counts}
    first = runs[counts[0]]
    names = [v["name"] for v in first["versions"]] + list(first["vendors"])
    print(f"{'threads':>7}" + "".join(f"{n[:22]:>24}" for n in names) + "  (GFLOP/s, speed-up)")
    table = {}
    for t, data in runs.items():
        row = {v["name"]: v["best_gflops"] for v in data["versions"]}
        row |= {k: v["best_gflops"] for k, v in data["vendors"].items()}
        table[t] = row
        cells = []
        for n in names:
            g, g1 = row.get(n), table[counts[0]].get(n)
            cells.append(f"{g:>14.1f} ({g / g1:4.1f}x)" if g and g1 else f"{'-':>24}")
        print(f"{t:>7}" + "".join(f"{c:>24}" for c in cells))
    vendor = next(iter(first["vendors"]), None)
    if vendor:
        for t, row in table.items():
            ratios = ", ".join(f"{n} {row[n] / row[vendor] * 100:.0f}%" for n in names
                               if n != vendor and row.get(n) and row.get(vendor))
            print(f"{t} threads, against {vendor}: {ratios}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "size": args.size, "device": first["device"], "gflops": table,
            "load_average": {t: data["load_average"] for t, data in runs.items()},
            "rounds": args.rounds, "versions": args.versions,
        }, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
