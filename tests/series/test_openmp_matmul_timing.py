"""benchmarks/openmp_matmul.py times each backend once the process's other threads rest:
run right after numpy's product, an OpenMP build used to share the cores with OpenBLAS's
spinning workers (on the 16-core host the first version of the table ran at half the
speed `mcl refine --measure` had measured for the same file; docs/refinements.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcl.quiet_threads import BUSY

REPO = Path(__file__).resolve().parents[2]

# In a process of its own (OpenBLAS reads its thread count at import): the table with
# each OpenMP run's start recorded with how busy the process's other threads were then.
_DRIVER = """
import importlib.util, sys
from mcl.backends.openmp.runner import OpenMPSession
from mcl.quiet_threads import others_busy
busy = []
run = OpenMPSession.run
def recorded(self, *args, **kwargs):
    busy.append(max(others_busy(0.01) for _ in range(3)))
    return run(self, *args, **kwargs)
OpenMPSession.run = recorded
spec = importlib.util.spec_from_file_location("openmp_matmul", sys.argv[1])
script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(script)
script.main(["--sizes", "512", "--repeat", "1", "--no-pocl", "--versions",
             "x86_avx512_v1", "x86_avx512_v4"])
print("busy", *busy)
"""


def test_no_openmp_run_starts_while_numpys_workers_spin() -> None:
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="1",
               PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _DRIVER,
                           str(REPO / "benchmarks" / "openmp_matmul.py")],
                          env=env, check=True, capture_output=True, text=True)
    line = done.stdout.splitlines()[-1].split()
    assert line[0] == "busy" and len(line) == 3, done.stdout
    assert all(float(x) < BUSY for x in line[1:]), done.stdout
