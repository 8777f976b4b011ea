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
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

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
    args = parser.parse_args()
    from mcl.feedback.refinable import use_answered
    from mcl.lsp.analysis import Libraries
    from mcl.mcpl.parse import reuse_definitions
    from mcl.refine.answers import answered_changes

    use_answered(answered_changes)  # as the worker's process (mcl.lsp.worker._serve)
    reuse_definitions()
    libraries = Libraries()
    worker._warm_up(libraries)
    print(f"load average (1 min) {os.getloadavg()[0]:.1f}; {os.cpu_count()} CPUs; "
          f"-D {dict(VALUES)}")
    print(f"{'kernel':<20} {'edit':<10} {'median':>7} {'mean':>7}  jobs (ms of CPU)")
    raw: dict[str, dict[str, list[float]]] = {}
    for name in args.kernels or DEFAULT:
        path = REPO / "kernels" / (name if name.endswith(".mcpl") else name + ".mcpl")
        text = path.read_text()
        spec = str(path.resolve())

        def job(t: str, spec: str = spec) -> float:
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
            times = [job(t) for t in variants(text, kind, args.edits)]
            raw[name][kind] = times
            print(f"{name:<20} {kind:<10} {statistics.median(times):7.0f} "
                  f"{statistics.mean(times):7.0f}  {' '.join(f'{t:.0f}' for t in times)}",
                  flush=True)
    print(f"load average (1 min) after: {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
