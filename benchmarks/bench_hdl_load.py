"""How long loading the whole HDL library takes (issue 2: "well under a second").

    python benchmarks/bench_hdl_load.py [--repeat N]

Reports three figures for the ten bundled descriptions:
  cold process: a fresh `python -c` that imports mcl.hdl.library and loads the library
                (interpreter start-up excluded: measured inside the process);
  cold load:    a load in this process with the parse cache emptied (textX metamodel
                already built, every file parsed again) — what a changed file costs;
  warm load:    a load with the parse cache filled (resolution, building, validation).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COLD_PROCESS = (
    "import time; t = time.perf_counter(); "
    "from mcl.hdl.library import load_library; load_library(use_env=False); "
    "print(time.perf_counter() - t)"
)


def cold_process(repeat: int) -> list[float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", COLD_PROCESS], capture_output=True,
                             text=True, check=True)
        runs.append(float(out.stdout.strip()))
    return runs


def in_process(repeat: int, clear_parse_cache: bool) -> list[float]:
    from mcl.hdl import syntax
    from mcl.hdl.library import load_library

    load_library(use_env=False)  # build the textX metamodel once
    runs = []
    for _ in range(repeat):
        if clear_parse_cache:
            syntax._parse_cached.cache_clear()
        t = time.perf_counter()
        load_library(use_env=False)
        runs.append(time.perf_counter() - t)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    for label, runs in (
        ("cold process (import + load)", cold_process(args.repeat)),
        ("cold load (parse every file)", in_process(args.repeat, True)),
        ("warm load (parse cache hit)", in_process(args.repeat, False)),
    ):
        print(f"{label:32s} median {statistics.median(runs) * 1000:7.1f} ms   "
              f"min {min(runs) * 1000:7.1f} ms   ({len(runs)} runs)")


if __name__ == "__main__":
    main()
