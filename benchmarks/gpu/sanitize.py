"""compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on every shipped version
at every leaf with a CUDA mapping, through the CUDA backend, on the GPU machine:

    PYTHONPATH=. python3 benchmarks/gpu/sanitize.py [--sizes prime,paper]
        [--tools memcheck,racecheck,synccheck,initcheck] [--paper-tools memcheck,synccheck]
        [--out benchmarks/results/sanitize] [--timeout 540] [--only SUBSTRING]

Each tool runs one process per size set: `compute-sanitizer --tool T python3
benchmarks/gpu/cuda_cases.py --sizes S --planted`, which runs every case (and the two
planted defects of benchmarks/gpu/planted) in turn and prints a `### case ID` marker before
each; the reports between two markers belong to that case. The tools run at the same time
(one process each). NVIDIA's OpenCL driver is invisible to compute-sanitizer ("Target
application terminated before first instrumented API call"), which is why the cases run
as generated CUDA.

The planted defects prove that the run instruments mcl's kernels: memcheck must report
the out-of-bounds write, racecheck the shared-memory race; a tool whose planted defect is
not caught cannot vouch for the cases, and the summary says so. Paper sizes (4096³ matmul)
run under `--paper-tools` only: racecheck and initcheck at those sizes take hours. Each
process's output is kept under --out; the summary (per case x tool) is printed and saved
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "benchmarks" / "gpu" / "cuda_cases.py"
# The defect each tool must find in the planted kernels.
PLANTED_FOR = {"memcheck": "planted/oob_write", "racecheck": "planted/shared_race"}
# A report of compute-sanitizer starts with one of these after its "========= " prefix.
_REPORT = re.compile(r"^========= (Invalid|Error|Warning|Barrier|Uninitialized|Program hit|"
                     r"Race|Malformed|Out-of-range|Misaligned)", re.M)


def sanitizer() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/compute-sanitizer"), reverse=True):
        return str(candidate)
    return None


def per_case(output: str) -> dict[str, tuple[int, str]]:
    """Case id -> (reports of compute-sanitizer inside it, the case's result line)."""
    out: dict[str, tuple[int, str]] = {}
    parts = re.split(r"^### case (\S+).*$", output, flags=re.M)
    for name, text in zip(parts[1::2], parts[2::2], strict=True):
        result = re.search(r"^### result \S+ (.*)$", text, re.M)
        out[name] = (len(_REPORT.findall(text)), result.group(1) if result else "did not finish")
    return out


def run(command: list[str], log: Path, timeout: float) -> tuple[int | None, float, str]:
    start = time.monotonic()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=REPO, env=env)
        status, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        status = None
        text = [x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                for x in (exc.stdout, exc.stderr)]
        output = "".join(text) + f"\n(timed out after {timeout:.0f} s)"
    log.write_text(" ".join(command) + "\n\n" + output)
    return status, time.monotonic() - start, output


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="prime,paper")
    parser.add_argument("--tools", default="memcheck,racecheck,synccheck,initcheck")
    parser.add_argument("--paper-tools", default="memcheck,synccheck",
                        help="the tools that also run at paper sizes (default memcheck,synccheck)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/sanitize")
    parser.add_argument("--timeout", type=float, default=540, help="seconds per process")
    parser.add_argument("--only", default="", help="substring of the case ids to run")
    args = parser.parse_args(argv)
    tool_path = sanitizer()
    if tool_path is None:
        print("compute-sanitizer not found (PATH, /usr/local/cuda*/bin)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    jobs = []
    for sizes in args.sizes.split(","):
        tools = args.tools.split(",") if sizes != "paper" else args.paper_tools.split(",")
        for tool in tools:
            base = [tool_path, "--tool", tool, "--print-limit", "20"]
            if tool == "racecheck":
                base += ["--racecheck-report", "all"]
            command = [*base, sys.executable, str(DRIVER), "--sizes", sizes, "--planted"]
            if args.only:
                command += ["--only", args.only]
            jobs.append((tool, sizes, command))
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        done = list(pool.map(lambda j: run(j[2], args.out / f"{j[0]}-{j[1]}.log",
                                           args.timeout), jobs))
    rows = []
    verdicts = []
    for (tool, sizes, _), (status, seconds, output) in zip(jobs, done, strict=True):
        cases = per_case(output)
        for name, (reports, result) in cases.items():
            rows.append((tool, sizes, name, reports, result))
        planted = PLANTED_FOR.get(tool)
        caught = cases.get(planted, (0, ""))[0] if planted else None
        clean = [n for n, (r, _) in cases.items() if not n.startswith("planted/") and r == 0]
        real = [n for n in cases if not n.startswith("planted/")]
        state = "timed out" if status is None else f"exit {status}"
        line = (f"- {tool} at {sizes} sizes ({state}, {seconds:.0f} s): {len(clean)} of "
                f"{len(real)} shipped cases without a report")
        if planted:
            line += (f"; the planted {planted} is caught ({caught} reports)" if caught else
                     f"; the planted {planted} is NOT caught, so this tool vouches for nothing")
        verdicts.append(line)
    table = ["| tool | sizes | case | reports | result |", "|---|---|---|---|---|"]
    table += [f"| {t} | {s} | {n} | {r} | {res} |" for t, s, n, r, res in rows]
    text = "\n".join(["# compute-sanitizer on the generated CUDA", "", *verdicts, "", *table])
    (args.out / "summary.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
