"""`mcl refine` from matmul's perfect.mcpl at x86_avx512, ranked by CPU measurements, and
the version it finds timed against numpy's matmul (OpenBLAS) in the same run, on one
thread and on all (docs/refinements.md, "mcl refine"; docs/performance.md).

    python benchmarks/refine_x86.py --out /tmp/x86 [--search-size 1024] [--size 2048]
        [--steps 3] [--repeat 3] [--backend opencl|openmp] [--threads 1 2]

1. The search: `mcl refine kernels/matmul/perfect.mcpl --target x86_avx512 --measure
   --backend B -D n=m=p=SEARCH_SIZE` as a subprocess (x86_avx512 has no time model, so
   the measurements alone rank; B defaults to opencl, the PoCL CPU device that `mcl run`
   uses by default). Its series goes to OUT, its JSON document to OUT/search.json; the
   series, each step's measured gain and the search's wall time are printed.
2. The timing: for each thread count T, `benchmarks/openmp_matmul.py --sizes SIZE
   --versions BEST x86_avx512_v5` as a subprocess with OMP_NUM_THREADS,
   OPENBLAS_NUM_THREADS and POCL_MAX_PTHREAD_COUNT set to T: the search's best version
   and the hand-written v5, through OpenMP and PoCL, against numpy in one process.
Exit status 1 when the search or a timing failed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PERFECT = REPO / "kernels" / "matmul" / "perfect.mcpl"
TARGET = "x86_avx512"


def search(args: argparse.Namespace) -> Path | None:
    """Run the search; print its series; the best version's file (None on failure)."""
    out = Path(args.out)
    n = args.search_size
    command = [sys.executable, "-m", "mcl", "refine", str(PERFECT), "--target", TARGET,
               "--measure", "--backend", args.backend, "--repeat", str(args.repeat),
               "--steps", str(args.steps), "--beam", str(args.beam),
               f"-Dn={n}", f"-Dm={n}", f"-Dp={n}", "-o", str(out), "--force",
               "--format", "json"]
    print("# " + " ".join(["mcl", *command[3:]]).replace(str(REPO) + "/", ""), flush=True)
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        print(f"search failed ({wall:.1f} s): {done.stderr.strip()}")
        return None
    (out / "search.json").write_text(done.stdout)
    document = json.loads(done.stdout)
    print(f"# measured on {document['measured_on']}; {document['candidates']} candidates; "
          f"stopped: {document['stopped']}; search wall time {document['wall_s']:.1f} s "
          f"({wall:.1f} s with start-up)")
    for row in document["series"]:
        seconds = row["measured_seconds"]
        gain = row["measured_gain"]
        print(f"  {row['name']:<16} {(seconds or 0) * 1e3:>10.2f} ms  "
              f"{f'{gain:.2f}x' if gain else '-':>7}  {row['refinement'] or row['change']}")
    return out / f"{document['series'][-1]['name']}.mcpl"


def time_against_numpy(best: Path, args: argparse.Namespace) -> bool:
    """The best version and v5 against numpy at SIZE, for each thread count."""
    ok = True
    for threads in args.threads:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads),
                   OPENBLAS_NUM_THREADS=str(threads), POCL_MAX_PTHREAD_COUNT=str(threads))
        command = [sys.executable, str(REPO / "benchmarks" / "openmp_matmul.py"), "--sizes",
                   str(args.size), "--repeat", str(args.repeat), "--versions", str(best),
                   "x86_avx512_v5"]
        if args.backend == "openmp":
            # the search measured through OpenMP: PoCL's columns would time another
            # backend (and on a GPU host its default OpenCL device is the GPU)
            command.append("--no-pocl")
        print(f"# {threads} thread{'' if threads == 1 else 's'}", flush=True)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        print(done.stdout.rstrip(), flush=True)
        if done.returncode != 0:
            print(f"timing failed: {done.stderr.strip()}")
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the series")
    parser.add_argument("--search-size", type=int, default=1024,
                        help="n = m = p of the search's measurements (default 1024)")
    parser.add_argument("--size", type=int, default=2048,
                        help="n = m = p of the timing against numpy (default 2048)")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--beam", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--backend", choices=("opencl", "openmp"), default="opencl",
                        help="the search's measurements (default opencl: PoCL)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    print(f"# python benchmarks/refine_x86.py {' '.join(argv or sys.argv[1:])}")
    print(f"# load average (1 min) before: {os.getloadavg()[0]:.1f}", flush=True)
    best = search(args)
    ok = best is not None and time_against_numpy(best, args)
    print(f"# load average (1 min) after: {os.getloadavg()[0]:.1f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
