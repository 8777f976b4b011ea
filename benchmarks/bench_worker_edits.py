"""CPU time of the editor's feedback worker per code edit, each edit a text not seen
before (unlike bench_lsp_typing.py's, which alternate with the original text).

    python benchmarks/bench_worker_edits.py [KERNEL ...] [--edits N] [--json FILE]

For each KERNEL (default: spmv hopper_v17 and v20) this process runs the worker's jobs
as its process does (mcl.lsp.worker: definitions reused, the loop counters and stand-ins
of the last job, caches bounded after each job): one on the file's text (warm), then N
edits of each kind, every one different:

- `statement`: `float bench_tK = K.0;` inserted at the top of the kernel body;
- `constant`: the first decimal number of the kernel body set to K + 2.5.

Prints per kernel and kind the median and mean CPU time of a job (`time.process_time`)
and each job's; the figures depend on the machine's load (state `uptime` beside them).
`--by-analysis`: also the median CPU time of each part of a job: the worker's parse and
check of the file (`check_source`) and each analysis (`mcl.feedback.registry`, the facts
it is the first to ask for included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))

from mcl.lsp import worker  # noqa: E402

# As the worker's process does before SymPy is imported (where the code has it).
getattr(worker, "size_sympy_cache", lambda: None)()

from benchmarks.bench_lsp_typing import VALUES, body_start, constant_edit  # noqa: E402

DEFAULT = ["spmv/hopper_v17", "spmv/hopper_v20"]


def variants(text: str, kind: str, count: int) -> list[str]:
    at = body_start(text)
    start, end, _ = constant_edit(text)
    if kind == "statement":
        return [text[:at] + f"  float bench_t{k} = {k}.0;\n" + text[at:] for k in range(count)]
    return [text[:start] + f"{k + 2}.5" + text[end:] for k in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="*", help="e.g. spmv/hopper_v17")
    parser.add_argument("--edits", type=int, default=12, help="of each kind, per kernel")
    parser.add_argument("--json", type=Path, help="the raw figures")
    parser.add_argument("--by-analysis", action="store_true",
                        help="the median CPU time of each part of a job too")
    args = parser.parse_args()
    parts: dict[str, float] = {}  # part of the job running now -> its CPU seconds so far
    if args.by_analysis:
        _time_parts(parts)
    from mcl.feedback.refinable import use_answered
    from mcl.lsp.analysis import Libraries
    from mcl.mcpl.parse import reuse_definitions
    from mcl.refine.answers import answered_changes

    use_answered(answered_changes)  # as the worker's process (mcl.lsp.worker._serve)
    reuse_definitions()
    libraries = Libraries()
    worker._warm_up(libraries)
    from mcl.lsp.heap import settle

    settle()  # as the worker's process does after its warm-up
    print(f"load average (1 min) {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs; "
          f"-D {dict(VALUES)}")
    print(f"{'kernel':<20} {'edit':<10} {'median':>7} {'mean':>7}  jobs (ms of CPU)")
    raw: dict[str, dict[str, list[float]]] = {}
    for name in args.kernels or DEFAULT:
        path = REPO / "kernels" / (name if name.endswith(".mcpl") else name + ".mcpl")
        text = path.read_text()
        spec = str(path.resolve())

        by_part: dict[str, dict[str, list[float]]] = {}

        def job(t: str, spec: str = spec) -> float:
            parts.clear()
            result = worker.FeedbackResult()
            start = time.process_time()
            worker.run_job(worker.FeedbackJob(spec, ((spec, t),), (), (), None,
                                              tuple(sorted(VALUES.items()))),
                           libraries, result)
            worker.bound_caches()
            if result.failure or not result.messages:
                raise SystemExit(f"{spec}: no feedback ({result.failure})")
            return (time.process_time() - start) * 1000

        raw[name] = {}
        for kind in ("statement", "constant"):
            job(text)
            times = []
            for t in variants(text, kind, args.edits):
                times.append(job(t))
                for part, seconds in parts.items():
                    by_part.setdefault(kind, {}).setdefault(part, []).append(seconds * 1000)
            raw[name][kind] = times
            print(f"{name:<20} {kind:<10} {statistics.median(times):7.0f} "
                  f"{statistics.mean(times):7.0f}  {' '.join(f'{t:.0f}' for t in times)}",
                  flush=True)
            for part, spent in sorted(by_part.get(kind, {}).items(),
                                      key=lambda p: -statistics.median(p[1])):
                print(f"{'':<20} {'':<10} {statistics.median(spent):7.1f}  {part}")
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1) + "\n")
    return 0


def _time_parts(parts: dict[str, float]) -> None:
    """Add the CPU time of the worker's check and of each analysis to `parts` as they
    run (by wrapping the functions the job calls them through)."""
    from mcl import pipeline
    from mcl.feedback import registry

    def timed(name_of: Any, run: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return run(*args, **kwargs)
            finally:
                name = name_of(*args)
                parts[name] = parts.get(name, 0.0) + time.process_time() - start
        return wrapper

    registry._run_within_budget = timed(lambda a, *_: a.name, registry._run_within_budget)
    pipeline.check_source = timed(lambda *_: "check_source", pipeline.check_source)


if __name__ == "__main__":
    sys.exit(main())
