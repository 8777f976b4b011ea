"""What one fuzz input costs (docs/reliability.md, "Fuzzing"): a forked `mcl check` of a
syntax error with only a clean check run in the fuzzer before (what it did until
2026-12-07) and after the fuzzer's warm-up (`mcl.fuzz._warm`: a failing check too), and
the CPU time per input of a short campaign with each warm-up, the fuzzer's and its
children's (on a shared machine the CPU time, not the wall time, tells what a host of N
cores fuzzes in a given time).

    python benchmarks/bench_fuzz_cost.py [--seconds 30] [--generated 0.3] [--seed 903]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def cpu() -> float:
    own, children = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                      resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def clean_check_only() -> None:
    """The warm-up before 2026-12-07: the imports and one clean check."""
    from mcl import fuzz

    for name in fuzz._WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    seeds = sorted(fuzz.kernels_dir().glob("*/perfect.mcpl"))
    fuzz._run_here(["check", "--no-feedback", str(seeds[0])], 60.0)


def forked_ms(argv: list[str], repeats: int = 20) -> float:
    """The median wall milliseconds of `argv` in a forked child (`fuzz.run_command`)."""
    from mcl import fuzz

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fuzz.run_command(argv, 10.0)
        times.append(1000 * (time.perf_counter() - started))
    return sorted(times)[len(times) // 2]


def campaign_cost(seconds: float, generated: float, seed: int) -> str:
    from mcl import fuzz

    tally = fuzz.Tally()
    options = fuzz.CampaignOptions(10.0, None, 0.3, generated, 0.0)
    before, started = cpu(), time.monotonic()
    fuzz.campaign("mcpl", range(10**6), seed, options, lambda line: None, tally,
                  time.monotonic() + seconds)
    used, inputs = cpu() - before, tally.inputs["mcpl"]
    return (f"{inputs} inputs in {time.monotonic() - started:.1f} s wall, {used:.1f} s CPU: "
            f"{1000 * used / max(inputs, 1):.0f} ms of CPU an input")


def measure(warm: str, seconds: float, generated: float, seed: int) -> None:
    """In this (forked) process: the fuzzer warmed up as `warm` says, then measured."""
    from mcl import fuzz

    if warm == "before":
        clean_check_only()
        fuzz._warmed.append(True)  # run_command warms no further
    else:
        fuzz._warm()
    with tempfile.TemporaryDirectory() as tmp:
        broken = Path(tmp) / "broken.mcpl"
        broken.write_text("perfect void k( {", encoding="utf-8")
        ms = forked_ms(["check", "--no-feedback", "--format", "json", str(broken)])
    print(f"warm-up {warm}: forked check of a syntax error {ms:.1f} ms (median of 20); "
          f"campaign of --generated {generated:g}, seed {seed}, {seconds:g} s: "
          f"{campaign_cost(seconds, generated, seed)}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--generated", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=903)
    args = parser.parse_args(argv)
    print(f"load: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; "
          f"{os.cpu_count()} CPUs", flush=True)
    for warm in ("before", "now"):
        pid = os.fork()  # each warm-up in a process of its own
        if pid == 0:
            code = 1
            try:
                measure(warm, args.seconds, args.generated, args.seed)
                code = 0
            finally:
                os._exit(code)
        os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
