"""How long loading the whole HDL library takes (issue 2: "well under a second").

    python benchmarks/bench_hdl_load.py [--repeat N]

Reports four figures for the ten bundled descriptions:
  cold process: a fresh `python -c` that imports mcl.hdl.library and loads the library
                (interpreter start-up excluded: measured inside the process), without
                the on-disk parse cache (`MCL_CACHE_DIR=`): textX parses every file;
  cached process: the same with the on-disk parse cache filled (mcl.hdl.parse_cache),
                what every command after the first pays;
  cold load:    a load in this process with the parse caches emptied and off (textX
                metamodel already built, every file parsed again) — what a changed file
                costs;
  warm load:    a load with the in-process parse cache filled (resolution, building,
                validation).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

COLD_PROCESS = (
    "import time; t = time.perf_counter(); "
    "from mcl.hdl.library import load_library; load_library(use_env=False); "
    "print(time.perf_counter() - t)"
)


def cold_process(repeat: int, cache_dir: str) -> list[float]:
    """Fresh processes with MCL_CACHE_DIR=cache_dir ('' turns the disk cache off)."""
    env = {**os.environ, "MCL_CACHE_DIR": cache_dir}
    runs = []
    for _ in range(repeat + (1 if cache_dir else 0)):  # with a cache: one run to fill it
        out = subprocess.run([sys.executable, "-c", COLD_PROCESS], capture_output=True,
                             text=True, check=True, env=env)
        runs.append(float(out.stdout.strip()))
    return runs[1:] if cache_dir else runs


def in_process(repeat: int, clear_parse_cache: bool) -> list[float]:
    from mcl.hdl import syntax
    from mcl.hdl.library import load_library

    os.environ["MCL_CACHE_DIR"] = ""  # the on-disk cache off: textX parses
    load_library(use_env=False)  # build the textX metamodel once
    runs = []
    for _ in range(repeat):
        if clear_parse_cache:
            syntax._parse_cached.cache_clear()
            syntax._parse_file_text.cache_clear()
        t = time.perf_counter()
        load_library(use_env=False)
        runs.append(time.perf_counter() - t)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        cached = cold_process(args.repeat, cache)
    for label, runs in (
        ("cold process (import + load)", cold_process(args.repeat, "")),
        ("cached process (import + load)", cached),
        ("cold load (parse every file)", in_process(args.repeat, True)),
        ("warm load (parse cache hit)", in_process(args.repeat, False)),
    ):
        print(f"{label:32s} median {statistics.median(runs) * 1000:7.1f} ms   "
              f"min {min(runs) * 1000:7.1f} ms   ({len(runs)} runs)")


if __name__ == "__main__":
    main()
