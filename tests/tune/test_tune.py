"""`mcl tune` on PoCL with a small planted search space (issue 15): it finds the known
best, skips what the description and the kernel's rules rule out, never picks a fast
configuration with wrong outputs, caches, and `mcl run` / `mcl codegen` pick the tuned
file up."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir
from mcl.tune.tuned_file import read_tuned, tuned_path

pytest.importorskip("kernel_tuner")

PLANTED = """
const int WARP_SIZE = 32;
// Redundant passes over k: 1 is the known best.
// tune: 1, 8
const int PASSES = 8;
// Rows per block, one per warp: 64 warps (2048 work-items) are more than hopper's 1024.
// tune: 1, 64
const int NR_WARPS = 1;
// Steps of k: 2 skips half the products, fast but wrong.
// tune: 1, 2
// require: PASSES * STRIDE <= 8
const int STRIDE = 1;

hopper void matmul(int n, int m, int p,
    global float[n, m] c, global float[n, p] a, global float[p, m] b) {
  int nb = (n + NR_WARPS - 1) / NR_WARPS;
  int mb = (m + WARP_SIZE - 1) / WARP_SIZE;
  foreach (int bi in nb blocks) {
    foreach (int bj in mb blocks) {
      foreach (int w in NR_WARPS warps) {
        foreach (int t in WARP_SIZE threads) {
          int i = bi * NR_WARPS + w;
          int j = bj * WARP_SIZE + t;
          if (i < n && j < m) {
            float s = 0.0;
            for (int pass = 0; pass < PASSES; pass++) {
              for (int k = 0; k < p; k += STRIDE) {
                s += a[i, k] * b[k, j];
              }
            }
            c[i, j] = s / toFloat(PASSES);
          }
        }
      }
    }
  }
}
"""

SIZES = ["-D", "n=96", "-D", "m=96", "-D", "p=96"]


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    shutil.copy(kernels_dir() / "matmul" / "reference.py", tmp_path / "reference.py")
    path = tmp_path / "planted.mcpl"
    path.write_text(PLANTED, encoding="utf-8")
    return path


@pytest.mark.usefixtures("whole_lines")  # reads a line whole
def test_tune_finds_the_planted_best(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tune", str(planted), "--target", "hopper", *SIZES, "--iterations", "3"]) == 0
    out = capsys.readouterr().out
    # 8 configurations: 4 with 64 warps (description), 1 by the rule, 3 run, 1 wrong.
    assert "8 configurations, 5 ruled out, 3 run, 1 with wrong outputs" in out
    assert "2048 work-items per work-group; hopper allows 1024" in out
    assert "breaks `PASSES * STRIDE <= 8`" in out
    (entry,) = read_tuned(planted)
    assert entry.constants == {"PASSES": 1, "NR_WARPS": 1, "STRIDE": 1}
    assert entry.target == "hopper" and entry.sizes == {"n": 96, "m": 96, "p": 96}

    # A second run is answered from Kernel Tuner's cache: the very same times.
    cache = next((planted.parent / ".planted.tune-cache").glob("*.json"))
    # ... and the inputs and the reference's outputs are read back, not made again.
    assert len(list(cache.parent.glob("inputs-*.pickle"))) == 1
    before = json.loads(cache.read_text())["cache"]
    assert main(["tune", str(planted), "--target", "hopper", *SIZES, "--iterations", "3"]) == 0
    assert json.loads(cache.read_text())["cache"] == before
    (again,) = read_tuned(planted)
    assert again.time_ms == entry.time_ms

    # mcl run uses the tuned constants (and still verifies); --no-tuned does not.
    assert main(["run", str(planted), "--target", "hopper", *SIZES, "--verify"]) == 0
    assert "using the tuned constants of planted.tuned.toml" in capsys.readouterr().out
    assert main(["run", str(planted), "--target", "hopper", *SIZES, "--no-tuned"]) == 0
    assert "tuned" not in capsys.readouterr().out
    # mcl codegen writes the tuned value as the macros' default.
    out_dir = planted.parent / "gen"
    assert main(["codegen", str(planted), "--target", "hopper", "-o", str(out_dir)]) == 0
    assert "#define PASSES (1)" in (out_dir / "matmul.cl").read_text()


def test_tune_needs_values(planted: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = planted.with_name("plain.mcpl")
    plain.write_text(PLANTED.replace("// tune:", "// values:"), encoding="utf-8")
    assert main(["tune", str(plain), "--target", "hopper", *SIZES]) == 1
    assert "plain.mcpl:1:1: error: " in capsys.readouterr().err
    assert main(["tune", str(plain), "--target", "hopper", *SIZES, "--param", "TILE=1,2"]) == 1
    assert "no top-level constant 'TILE'" in " ".join(capsys.readouterr().err.split())
    assert not tuned_path(plain).exists()
