"""Written scalar parameters are results (the original MCL passes them by pointer, paper
4.3): a one-element __global buffer in the generated code, returned by `mcl run` (the
interpreter and the OpenCL path, from one reference) and by the C++ harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from mcl import pipeline
from tests.codegen.support import library, load, run
from tests.codegen.test_codegen_harness import _build, _run

PEAK = """
gpu void peak(int n, float best, int where, float[n] x) {
  foreach (int b in 1 blocks) {
    local float[64] vals;
    local int[64] idx;
    foreach (int t in 64 threads) {
      float m = -1.0;
      int at = -1;
      for (int i = t; i < n; i += 64) {
        if (fabs(x[i]) > m) {
          m = fabs(x[i]);
          at = i;
        }
      }
      vals[t] = m;
      idx[t] = at;
      barrier(local);
      if (t == 0) {
        float bm = -1.0;
        int bi = -1;
        for (int k = 0; k < 64; k++) {
          if (vals[k] > bm) {
            bm = vals[k];
            bi = idx[k];
          }
        }
        best = bm;
        where = bi;
      }
    }
  }
}
"""

PEAK_REFERENCE = '''
import numpy as np

FUNCTION = "peak"
SIZES = {"n": 1000}
OUTPUTS = ("best", "where")


def inputs(sizes, rng):
    n = sizes["n"]
    return {"n": n, "best": np.float32(0), "where": np.int32(-7),
            "x": rng.uniform(-1, 1, n).astype(np.float32)}


def reference(args):
    x = np.abs(np.asarray(args["x"]))
    return {"best": np.float32(x.max()), "where": np.int32(np.argmax(x))}


def error_terms(args):
    return 0
'''

REDUCE = """
perfect void addTo(float acc, float v) {
  acc = acc + v;
}

perfect void reduce(int n, float sum, int count, float[n] input) {
  foreach (int i in n threads) {
    atomicAdd(sum, input[i]);
    if (i == 0) {
      count = n;
    }
  }
}

perfect void bump(float total) {
  foreach (int i in 1 threads) {
    addTo(total, 0.5);
  }
}
"""


def mcl_run(folder: Path, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "mcl", "run", "--format", "json", *args,
                           "peak.mcl"], cwd=folder, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_one_reference_checks_written_scalars_in_the_interpreter_and_on_the_device(tmp_path):
    (tmp_path / "peak.mcl").write_text(PEAK, encoding="utf-8")
    (tmp_path / "reference.py").write_text(PEAK_REFERENCE, encoding="utf-8")
    for how in (["--interp"], ["--target", "fermi", "--verify"]):
        document = mcl_run(tmp_path, *how, "-D", "n=777")
        assert document["verified"] is True, how
        assert [(o["name"], o["shape"], o["ok"]) for o in document["outputs"]] == [
            ("best", [], True), ("where", [], True)]


def test_the_kernel_writes_through_a_pointer(tmp_path):
    checked = pipeline.checked(load(tmp_path, PEAK), library())
    generated = pipeline.generate(checked, "fermi", library())
    assert "__global float* restrict best," in generated.source
    assert "(*best) = bm;" in generated.source and "(*where) = bi;" in generated.source
    x = np.linspace(-3, 2, 100, dtype=np.float32)[::-1].copy()
    out = run(generated, "peak", {"n": 100, "best": np.float32(0), "where": np.int32(0),
                                  "x": x})
    assert out["best"].shape == () and out["best"] == np.float32(3.0)
    assert out["where"] == 99


def test_atomics_and_helper_calls_write_a_scalar_result(tmp_path):
    checked = pipeline.checked(load(tmp_path, REDUCE), library())
    generated = pipeline.generate(checked, "x86_avx512", library())
    x = np.random.default_rng(1).uniform(0, 1, 333).astype(np.float32)
    out = run(generated, "reduce", {"n": 333, "sum": np.float32(1.0), "count": np.int32(0),
                                    "input": x})
    assert abs(float(out["sum"]) - (1.0 + x.astype(np.float64).sum())) < 1e-3
    assert out["count"] == 333
    # A helper function that writes its parameter gets the __global pointer.
    assert "void addTo_g(__global float* acc, float v)" in generated.source
    assert run(generated, "bump", {"total": np.float32(2.0)})["total"] == np.float32(2.5)


def test_the_harness_returns_written_scalars(tmp_path):
    checked = pipeline.checked(load(tmp_path, PEAK), library())
    generated = pipeline.generate(checked, "fermi", library())
    header = dict(generated_harness_files(generated))["peak.h"]
    assert "double peak(Module& module, int n, float* best, int* where, const float* x);" \
        in header
    driver = _build(generated, tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    x = np.zeros(50, dtype=np.float32)
    x[37] = -4.0
    x.tofile(data / "x.bin")
    _run(driver, "peak", data, {"n": 50})
    assert np.fromfile(data / "best.out.bin", np.float32).tolist() == [4.0]
    assert np.fromfile(data / "where.out.bin", np.int32).tolist() == [37]


def generated_harness_files(generated):
    from mcl.backends import emit_harness

    return emit_harness(generated).files().items()
