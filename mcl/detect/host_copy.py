"""numpy's copy on the host, the peer of a CPU device's OpenCL copy (mcl.detect.measure).

Three ways numpy copies `size` bytes, each timed as the best of its runs:

- one thread: `np.copyto` of the whole array (one memmove);
- `workers` threads: `np.copyto` over one slice per thread (numpy releases the GIL while
  it copies), as the OpenCL copy runs a work-group on every core;
- the same threads with non-temporal stores: glibc's memmove writes around the caches only
  above its `x86_non_temporal_threshold` (about the L3's size: 240 MiB on a VM that
  reports the host's L3), so a slice below it is written through the cache, and every
  line written is first read ("write-allocate"): 3 bytes move for the 2 a copy counts, and
  the copy looks 1.5x slower than the memory is. The OpenCL copy on a CPU stores
  non-temporally (as memcpy does for large copies), so the fair peer is numpy's copy with
  the threshold below the slice size -- a glibc tunable, read when a process starts, hence
  a child process.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from mcl.detect.timing import Rate, Spread, wall_seconds

# glibc's smallest allowed threshold is 0x4040 bytes; 1 MiB keeps small copies cached
# while every slice of a device-memory-sized copy streams past the caches.
NONTEMPORAL_THRESHOLD = 1 << 20
TUNABLE = "glibc.cpu.x86_non_temporal_threshold"


def sliced_copy(dst: np.ndarray, src: np.ndarray, pool: ThreadPoolExecutor,
                workers: int) -> None:
    """`np.copyto(dst, src)` as one contiguous slice per worker, all at once."""
    bounds = np.linspace(0, src.size, workers + 1).astype(int)
    list(pool.map(lambda i: np.copyto(dst[bounds[i]:bounds[i + 1]],
                                      src[bounds[i]:bounds[i + 1]]), range(workers)))


def copy_spreads(size: int, repeat: int, workers: int,
                 only_threaded: bool = False) -> dict[int, Spread]:
    """Seconds of numpy's copy of `size` bytes, by thread count (1 and `workers`; only
    `workers` with `only_threaded`), after a warm-up that touches every page."""
    src = np.ones(size // 4, np.float32)
    dst = np.empty_like(src)
    found: dict[int, Spread] = {}
    with ThreadPoolExecutor(workers) as pool:
        runs: dict[int, Callable[[], None]] = {
            workers: lambda: sliced_copy(dst, src, pool, workers)}
        if not only_threaded and workers > 1:
            runs[1] = lambda: np.copyto(dst, src)
        for threads, run in runs.items():
            found[threads] = wall_seconds(run, repeat)
    return found


def nontemporal_env() -> dict[str, str] | None:
    """The environment of a child whose glibc memmove stores non-temporally from
    NONTEMPORAL_THRESHOLD bytes on; None where that tunable does not exist (not glibc, not
    x86-64)."""
    if platform.machine() not in ("x86_64", "AMD64") or platform.libc_ver()[0] != "glibc":
        return None
    tunables = [t for t in os.environ.get("GLIBC_TUNABLES", "").split(":")
                if t and not t.startswith(TUNABLE + "=")]
    return {**os.environ,
            "GLIBC_TUNABLES": ":".join([*tunables, f"{TUNABLE}={NONTEMPORAL_THRESHOLD:#x}"])}


def nontemporal_spread(size: int, repeat: int, workers: int,
                       timeout: float = 60.0) -> Spread | None:
    """`workers` threads' copy of `size` bytes in a child with non-temporal stores
    (`nontemporal_env`); None where it cannot run."""
    env = nontemporal_env()
    if env is None:
        return None
    done = subprocess.run([sys.executable, "-m", "mcl.detect.host_copy", str(size),
                           str(repeat), str(workers)], env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        return None
    return Spread(tuple(json.loads(done.stdout)))


def numpy_copies(size: int, repeat: int, workers: int) -> dict[str, Rate]:
    """numpy's copies of `size` bytes, by how they ran (`one thread`, `N threads`,
    `N threads, non-temporal stores`), bytes read + written per second."""
    def label(threads: int) -> str:
        return "one thread" if threads == 1 else f"{threads} threads"

    what = f"numpy copyto of {size >> 20} MiB, "
    rates = {label(t): Rate.of_work(2.0 * size, s, what + label(t) + ", read + written")
             for t, s in copy_spreads(size, repeat, workers).items()}
    streamed = nontemporal_spread(size, repeat, workers)
    if streamed is not None:
        key = f"{label(workers)}, non-temporal stores"
        rates[key] = Rate.of_work(2.0 * size, streamed, f"{what}{key} ({TUNABLE} = "
                                  f"{NONTEMPORAL_THRESHOLD >> 20} MiB), read + written")
    return rates


def main(argv: list[str]) -> int:
    """The child: SIZE REPEAT WORKERS; prints the seconds of the threaded copy (JSON)."""
    size, repeat, workers = (int(a) for a in argv)
    spread = copy_spreads(size, repeat, workers, only_threaded=True)[workers]
    print(json.dumps(list(spread.seconds)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
