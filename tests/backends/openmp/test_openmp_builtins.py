"""Every built-in function and atomic in C: the prelude defines OpenCL's spellings, which
the shared printer writes (mcl/backends/openmp/prelude.py), and they compute what numpy
does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from codegen.support import load
from openmp_support import generate, run

BUILTINS = """
import lib.atomic;
x86_avx512 void builtins(int n, main float[n] x, main int[n] k, main float[9, n] f,
                         main int[4, n] g, main float[2] total, main int[9] counts) {
  foreach (int i in n threads) {
    foreach (int v in 1 vectors) {
      float c = 0.0;
      f[0, i] = sincos(x[i], c);
      f[1, i] = c;
      f[2, i] = toFloat(k[i]) / 3.0;
      f[3, i] = min(x[i], 0.5) + max(x[i], toFloat(k[i]));
      f[4, i] = abs(x[i] - 0.25);
      f[5, i] = pow(fabs(x[i]), 1.5) + x[i] ^ 2;
      f[6, i] = sqrt(fabs(x[i])) + exp(x[i]) - log(1.0 + fabs(x[i])) + floor(x[i]) + ceil(x[i]);
      f[7, i] = toFloat(toInt(x[i] * 10.0));
      f[8, i] = fabs(x[i]) ^ k[i];
      g[0, i] = min(k[i], 3) + max(k[i], -2);
      g[1, i] = abs(k[i] - 5);
      g[2, i] = k[i] ^ 3;
      g[3, i] = k[i] % 4 + k[i] / 3;
      atomicAddFloat(total[0], x[i]);
      atomicAddFloat(total[1], 1.0);
      atomicAdd(counts[0], 1);
      atomicSub(counts[1], 2);
      atomicMin(counts[2], k[i]);
      atomicMax(counts[3], k[i]);
      atomicInc(counts[4]);
      atomicDec(counts[5]);
      atomicOr(counts[6], 4);
      atomicAnd(counts[7], 6);
      atomicXor(counts[8], 1);
    }
  }
}
"""


def test_builtins_and_atomics_match_numpy(tmp_path: Path) -> None:
    g = generate(load(tmp_path, BUILTINS))
    n = 77
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, n).astype(np.float32)
    k = rng.integers(-7, 8, n).astype(np.int32)
    counts = np.array([0, 0, 100, -100, 0, 0, 1, 7, 0], np.int32)
    out = run(g, "builtins", {"n": n, "x": x, "k": k, "f": np.zeros((9, n), np.float32),
                              "g": np.zeros((4, n), np.int32),
                              "total": np.zeros(2, np.float32), "counts": counts})
    xd, kd = x.astype(np.float64), k.astype(np.int64)
    expected_f = [
        np.sin(xd),
        np.cos(xd),
        kd / 3.0,
        np.minimum(xd, 0.5) + np.maximum(xd, kd),
        np.abs(xd - 0.25),
        np.abs(xd) ** 1.5 + xd**2,
        np.sqrt(np.abs(xd)) + np.exp(xd) - np.log(1 + np.abs(xd)) + np.floor(xd) + np.ceil(xd),
        np.trunc(x * np.float32(10.0)),
        np.abs(xd) ** kd.astype(np.float64),
    ]
    np.testing.assert_allclose(out["f"], np.array(expected_f), rtol=1e-5, atol=1e-5)
    expected_g = [
        np.minimum(kd, 3) + np.maximum(kd, -2),
        np.abs(kd - 5),
        kd**3,
        np.fmod(kd, 4) + np.trunc(kd / 3).astype(np.int64),
    ]  # C's % and /
    np.testing.assert_array_equal(out["g"], np.array(expected_g))
    np.testing.assert_allclose(out["total"], [xd.sum(), n], atol=1e-4)
    assert list(out["counts"]) == [n, -2 * n, min(k.min(), 100), max(k.max(), -100), n, -n,
                                   5, 6, n % 2]
