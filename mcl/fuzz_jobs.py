"""A fuzz campaign split over processes (`python -m mcl.fuzz --jobs N`, docs/reliability.md,
"Fuzzing"), and the summary a campaign ends with.

Each job is a `python -m mcl.fuzz` process of its own (it forks a child per command, so
it must start single-threaded: no job is a thread of this one) on every N-th input of
its kind; inputs are numbered and seeded one by one (`mcl.fuzz.make_input`), so the jobs
together fuzz the inputs one process would. The lines the jobs print (failures,
progress) are passed on with the job's number; at the end each job's JSON summary is
read and summed into one. A job that ends without a summary is a failure of the run.
This module imports nothing of mcl: the fuzzer hands it the jobs' command lines.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


@dataclass
class Summary:
    """Inputs fuzzed by kind and outcome ("mcpl", "mcpl ok", "hdl diagnostics"), the
    failures (kind, outcome, stage, detail, saved), the seconds it took, and the CPU
    seconds its processes used on each kind of input (the fuzzer's, its warm-up
    included, and its commands' children's: on a shared machine the CPU time per input,
    not the wall time, tells what a host of N cores fuzzes in a given time)."""

    inputs: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, str]] = field(default_factory=list)
    elapsed: float = 0.0
    jobs: int = 1
    cpu: dict[str, float] = field(default_factory=dict)

    def line(self, headline: str) -> str:
        counts = Counter(f["outcome"] for f in self.failures)
        per = ", ".join(
            f"{kind.upper()} {1000 * self.cpu.get(kind, 0.0) / self.inputs[kind]:.0f} ms"
            for kind in ("mcpl", "hdl") if self.inputs[kind])
        return (f"fuzz: {self.inputs['mcpl']} MCPL and {self.inputs['hdl']} HDL inputs in "
                f"{self.elapsed:.0f} s and {sum(self.cpu.values()):.0f} s of CPU time"
                f"{' (' + per + ' an input)' if per else ''} ({headline}): "
                f"{counts['crash']} crashes, "
                f"{counts['signal']} signals, {counts['hang']} hangs; outcomes: "
                + ", ".join(f"{k}: {v}" for k, v in sorted(self.inputs.items()) if " " in k))

    def write(self, path: Path) -> None:
        path.write_text(json.dumps({"inputs": dict(self.inputs), "failures": self.failures,
                                    "elapsed": self.elapsed, "jobs": self.jobs,
                                    "cpu": dict(self.cpu)}, indent=1), encoding="utf-8")

    @classmethod
    def read(cls, path: Path) -> Summary:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(Counter(data["inputs"]), list(data["failures"]), float(data["elapsed"]),
                   int(data.get("jobs", 1)),
                   {k: float(v) for k, v in data.get("cpu", {}).items()})


def run_jobs(lines: Sequence[list[str]], summary_path: Path | None, headline: str) -> int:
    """Run the job command lines `lines` at once, pass their output on, print the summed
    summary (and write it to `summary_path`); 1 where anything failed."""
    start = time.monotonic()
    total = Summary(jobs=len(lines))
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="mcl-fuzz-jobs-") as tmp:
        paths = [Path(tmp) / f"job{j}.json" for j in range(len(lines))]
        processes = [subprocess.Popen([*line, "--summary", str(path)], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, text=True, errors="replace")
                     for line, path in zip(lines, paths, strict=True)]
        relays = [threading.Thread(target=_relay, args=(j, p.stdout, lock), daemon=True)
                  for j, p in enumerate(processes)]
        for relay in relays:
            relay.start()
        for j, (process, relay, path) in enumerate(zip(processes, relays, paths, strict=True)):
            status = process.wait()
            relay.join()
            try:
                part = Summary.read(path)
            except (OSError, ValueError, KeyError):
                total.failures.append({"kind": "job", "outcome": "crash", "stage": f"job {j}",
                                       "detail": f"ended without a summary (exit status "
                                       f"{status})", "saved": ""})
                continue
            total.inputs.update(part.inputs)
            total.failures += part.failures
            for kind, seconds in part.cpu.items():
                total.cpu[kind] = total.cpu.get(kind, 0.0) + seconds
    total.elapsed = time.monotonic() - start
    print(total.line(headline), flush=True)
    if summary_path is not None:
        total.write(summary_path)
    return 1 if total.failures else 0


def _relay(job: int, stream: IO[str] | None, lock: threading.Lock) -> None:
    """Pass job `job`'s lines on, each marked with the job."""
    if stream is None:
        return
    for line in stream:
        if line.startswith("fuzz: "):
            continue  # the job's own summary: the summed one is printed instead
        with lock:
            sys.stdout.write(f"[job {job:2d}] {line}")
            sys.stdout.flush()
