"""The C host program of `mcl codegen --lang openmp` and the build cache of the runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from openmp_support import LIBRARY, generate

from mcl import pipeline
from mcl.backends.openmp import backend
from mcl.backends.openmp.build import CACHE_ENV
from mcl.resources import kernels_dir

MATMUL_V4 = kernels_dir() / "matmul" / "x86_avx512_v4.mcpl"


def test_the_harness_has_kernels_host_code_driver_and_cmake_project() -> None:
    g = generate(pipeline.checked_at(MATMUL_V4, [], LIBRARY))
    files = backend.harness(g).files()
    assert sorted(files) == ["CMakeLists.txt", "main.c", "matmul.c", "matmul.h",
                             "matmul_host.c"]
    assert files["matmul.c"] == g.source
    assert ("double matmul_matmul(int n, int m, int p, float* c, const float* a, "
            "const float* b);") in files["matmul.h"]
    host = files["matmul_host.c"]
    assert "int nrThreadsN = (n + ROWS - 1) / ROWS;" in host  # the host statements
    assert "matmul(n, m, p, c, a, b, nrThreadsN, nrThreadsM, nrBlocksK, mcl_sizes[0]" in host
    assert "find_package(OpenMP REQUIRED)" in files["CMakeLists.txt"]
    assert "OpenMP::OpenMP_C" in files["CMakeLists.txt"]


def _built_harness(folder: Path) -> Path:
    """matmul x86_avx512_v4's C harness written to `folder` and built; its build folder."""
    g = generate(pipeline.checked_at(MATMUL_V4, [], LIBRARY))
    for name, text in backend.harness(g).files().items():
        (folder / name).write_text(text, encoding="utf-8")
    build = folder / "build"
    subprocess.run(["cmake", "-S", str(folder), "-B", str(build)], check=True,
                   capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    return build


@pytest.mark.slow
def test_the_harness_builds_and_its_driver_matches_numpy(tmp_path: Path) -> None:
    build = _built_harness(tmp_path)
    n, m, p = 100, 77, 130
    rng = np.random.default_rng(0)
    a = rng.random((n, p), dtype=np.float32)
    b = rng.random((p, m), dtype=np.float32)
    a.tofile(tmp_path / "a.bin")
    b.tofile(tmp_path / "b.bin")
    done = subprocess.run([str(build / "matmul_main"), "matmul", str(tmp_path), f"n={n}",
                           f"m={m}", f"p={p}"], check=True, capture_output=True, text=True)
    assert "matmul: kernel time" in done.stdout
    c = np.fromfile(tmp_path / "c.out.bin", dtype=np.float32).reshape(n, m)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


@pytest.mark.slow  # builds the driver once: about 10 s
def test_the_c_driver_is_as_strict_as_mcl_run(tmp_path: Path) -> None:
    build = _built_harness(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    np.ones(5 * 7, np.float32).tofile(data / "a.bin")
    np.ones(7 * 3, np.float32).tofile(data / "b.bin")
    for arguments, status, message in [
        (["n=5.5", "m=3", "p=7"], 1, "error: n=5.5: not an integer"),
        (["n=abc", "m=3", "p=7"], 1, "error: n=abc: not an integer"),
        (["n=99999999999", "m=3", "p=7"], 1, "out of the range of its type"),
        (["n=-5", "m=3", "p=7"], 1, "error: c would have -15 elements"),
        (["n=5", "m=3", "p=7", "q=1"], 1, "error: unknown argument q=1: matmul takes n, m, p"),
        (["n=5", "m=3", "p=7", "--verbose"], 2, "error: unknown argument --verbose"),
        (["n=5", "m=3", "p=8"], 1, "a.bin does not hold exactly 40 elements of 4 bytes"),
    ]:
        done = subprocess.run([str(build / "matmul_main"), "matmul", str(data), *arguments],
                              capture_output=True, text=True, check=False)
        assert (done.returncode, done.stdout) == (status, ""), arguments
        assert message in done.stderr, (arguments, done.stderr)
    done = subprocess.run([str(build / "matmul_main"), "matmul", str(tmp_path / "none"),
                           "n=5", "m=3", "p=7"], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "cannot read" in done.stderr


def test_a_built_kernel_is_taken_from_the_cache(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    g = generate(pipeline.checked_at(kernels_dir() / "matmul" / "x86_avx512_v1.mcpl", [],
                                     LIBRARY))
    first = backend.session(g)
    assert first.compiled_now and len(list(tmp_path.glob("*.so"))) == 1
    second = backend.session(g)
    assert not second.compiled_now and len(list(tmp_path.glob("*.so"))) == 1


def test_a_session_times_its_kernels_by_its_clock() -> None:
    """benchmarks/openmp_matmul.py --clock thread gives a session the thread's CPU time;
    whatever clock it is given, a kernel's time is the clock's advance over the call."""
    g = generate(pipeline.checked_at(kernels_dir() / "matmul" / "x86_avx512_v1.mcpl", [],
                                     LIBRARY))
    session = backend.session(g)
    ticks = iter(range(1000))
    session.clock = lambda: 0.25 * next(ticks)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (20, 30)).astype(np.float32)
    b = rng.uniform(-1, 1, (30, 40)).astype(np.float32)
    result = session.run("matmul", {"n": 20, "m": 40, "p": 30,
                                    "c": np.zeros((20, 40), np.float32), "a": a, "b": b}, 3)
    assert result.kernel_times_s == [0.25, 0.25, 0.25]
    assert np.allclose(result.outputs["c"], a @ b, atol=1e-4)


# In a process of its own, bound to one CPU before libgomp loads (it counts its CPUs once):
# the thread count the device's name states against the one OpenMP's loops get.
_ONE_CPU = """
import ctypes, os
os.environ.pop("OMP_NUM_THREADS", None)
os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
from mcl.backends.openmp.build import build_library
from mcl.backends.openmp.runner import threads
source = "#include <omp.h>\\nint max_threads(void) { return omp_get_max_threads(); }\\n"
library = ctypes.CDLL(str(build_library(source).path))
print(threads(), library.max_threads())
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_the_thread_count_stated_is_the_one_openmp_uses() -> None:
    """`mcl refine --measure` names the device by `threads()`: bound to one CPU (a
    container's or taskset's CPU set), libgomp runs one thread, whatever the machine has."""
    done = subprocess.run([sys.executable, "-c", _ONE_CPU], check=True, text=True,
                          capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[3])})
    assert done.stdout.split() == ["1", "1"]
