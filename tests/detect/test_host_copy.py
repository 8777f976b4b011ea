"""numpy's host copies, the peers of a CPU device's OpenCL copy: they copy right, the
non-temporal one runs in a child with glibc's tunable set, and the peers script's ratios
are the kernel's rate over each peer's. No timing is asserted: the machine is shared."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from benchmarks.hwd_detect_peers import ratios
from mcl.detect.bench_memory import numpy_copy
from mcl.detect.host_copy import (
    NONTEMPORAL_THRESHOLD,
    TUNABLE,
    nontemporal_env,
    numpy_copies,
    sliced_copy,
)

GLIBC_X86 = platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc"


@pytest.mark.parametrize(("n", "workers"), [(1, 1), (7, 3), (1000, 4), (3, 8)])
def test_the_sliced_copy_copies_every_element(n: int, workers: int) -> None:
    src = np.arange(n, dtype=np.float32)
    dst = np.full_like(src, -1.0)
    with ThreadPoolExecutor(workers) as pool:
        sliced_copy(dst, src, pool, workers)
    assert np.array_equal(dst, src)


def test_the_child_s_environment_sets_the_threshold_and_keeps_other_tunables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLIBC_TUNABLES", f"glibc.malloc.check=0:{TUNABLE}=0x99999")
    env = nontemporal_env()
    if not GLIBC_X86:
        assert env is None
        return
    assert env is not None
    assert env["GLIBC_TUNABLES"].split(":") == [
        "glibc.malloc.check=0", f"{TUNABLE}={NONTEMPORAL_THRESHOLD:#x}"]


def test_the_child_prints_one_time_per_run() -> None:
    done = subprocess.run([sys.executable, "-m", "mcl.detect.host_copy", str(1 << 20), "3",
                           "2"], capture_output=True, text=True, check=True)
    seconds = json.loads(done.stdout)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)


def test_every_peer_is_reported_and_the_library_copy_is_the_fastest() -> None:
    rates = numpy_copies(2 << 20, 2, 2)
    expected = {"one thread", "2 threads"} | ({"2 threads, non-temporal stores"}
                                              if GLIBC_X86 else set())
    assert set(rates) == expected
    assert all(r.value > 0 and r.runs == 2 and "2 MiB" in r.how for r in rates.values())
    best = numpy_copy(2 << 20, 2, 2)
    assert best.runs == 2
    assert "the fastest of numpy's copies" in best.how
    assert sum(other in best.how for other in expected) == len(expected)


def test_the_ratio_is_the_kernel_over_each_peer() -> None:
    assert ratios(150.0, {"one thread": 20.0, "16 threads": 100.0, "nt": 150.0}) == {
        "one thread": 7.5, "16 threads": 1.5, "nt": 1.0}
    assert ratios(1.0, {}) == {}
