"""Reliability, round 8: the original programs' scalar between foreach levels used as a
count (docs/reliability.md, "Round 8")."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from tests.fuzz.checking import check_text, write_source

# The original MCL programs declare a scalar in a block and run that many threads; the
# split of `threads` into warps and threads at fermi and hopper put the warp count,
# computed from `k`, in host code, where `k` is not declared.
BETWEEN = """\
gpu void kern(int n, dev float[n] a) {
  foreach (int b in n / 4 blocks) {
    DECLS
    foreach (int t in k threads) {
      a[b * 4 + t] = 1.0;
    }
  }
}
"""


@pytest.mark.parametrize("decls", ["const int k = 4;", "int m = 2; int k = m * 2;",
                                   "const int k = n / 8;"])
@pytest.mark.parametrize("leaf", ["fermi", "hopper"])
def test_a_count_declared_between_foreach_levels_translates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], decls: str, leaf: str) -> None:
    source = BETWEEN.replace("DECLS", decls)
    assert "0 errors, 0 warnings" in check_text(tmp_path, source, capsys)
    code = main(["translate", "--to", leaf, str(write_source(tmp_path, source))])
    out, err = capsys.readouterr()
    assert code == 0, err
    # The warp count is computed on the host from the scalar's value, before the blocks.
    host = out.split("foreach (int b")[0]
    assert "nrWarpsT = (" in host and "k" not in host.split("nrWarpsT =")[1], out
    assert "if (t < k)" in out


def test_a_count_declared_between_foreach_levels_generates_code(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_source(tmp_path, BETWEEN.replace("DECLS", "const int k = 4;"))
    assert main(["codegen", "--target", "fermi", str(path), "-o", str(tmp_path / "out")]) == 0
    kernel = (tmp_path / "out" / "kern.cl").read_text(encoding="utf-8")
    assert "const int k = 4;" in kernel and "if (t < k)" in kernel


def test_a_host_variable_of_the_same_name_is_not_replaced(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `m` of the first nest is its block's 2; the second nest counts the host's 64.
    source = """\
gpu void kern(int n, dev float[n] a) {
  int m = 64;
  foreach (int b in n / 4 blocks) {
    int m = 2;
    foreach (int t in m threads) {
      a[b * 4 + t] = 1.0;
    }
  }
  foreach (int b in n / 64 blocks) {
    foreach (int t in m threads) {
      a[b * 64 + t] = 2.0;
    }
  }
}
"""
    assert main(["translate", "--to", "fermi", str(write_source(tmp_path, source))]) == 0
    out = capsys.readouterr().out
    assert "int nrWarpsT = (2 + nrThreadsT - 1) / nrThreadsT;" in out
    assert "int nrWarpsT2 = (m + nrThreadsT2 - 1) / nrThreadsT2;" in out


def test_code_at_the_leaf_launches_the_count_of_a_scalar_between_levels(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Written at fermi itself: code generation said "unknown name 'k'", with no place.
    source = """\
fermi void kern(int n, global float[n] a) {
  foreach (int b in n / 4 blocks) {
    const int k = 4;
    foreach (int w in 1 warps) {
      foreach (int t in k threads) {
        a[b * 4 + t] = 1.0;
      }
    }
  }
}
"""
    path = write_source(tmp_path, source)
    assert main(["codegen", "--target", "fermi", str(path), "-o", str(tmp_path / "out")]) == 0
    host = (tmp_path / "out" / "kern.cpp").read_text(encoding="utf-8")
    assert "const long long local[2] = {(long long)(4), (long long)(1)};" in host


KERNELS = Path(__file__).resolve().parents[2] / "kernels"


def test_roofline_of_a_kernel_without_arithmetic_says_so(
        capsys: pytest.CaptureFixture[str]) -> None:
    # fermi states a peak; transpose does no arithmetic (it said "fermi states no peak").
    main(["roofline", str(KERNELS / "transpose" / "perfect.mcpl"), "--level", "fermi"])
    out = capsys.readouterr().out
    assert "no arithmetic, data movement only" in out and "states no peak" not in out


def test_run_at_a_level_that_is_no_leaf_says_it_as_codegen_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    # It said "'gpu' has no OpenCL mapping: .../gpu.opencl.toml does not exist".
    assert main(["run", str(KERNELS / "matmul" / "perfect.mcpl"), "--target", "gpu"]) == 1
    assert "[codegen-not-leaf]" in capsys.readouterr().err


def test_code_for_a_leaf_on_another_branch_names_the_branches(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It said "has no function with foreach statements" (and `run`: "no kernel function").
    code = main(["codegen", "--target", "x86_avx512", str(KERNELS / "matmul" / "gpu_v1.mcpl"),
                 "-o", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and "[translate-sideways]" in err
    assert "from gpu you can translate to nvidia, fermi, hopper" in err


def test_a_plot_without_matplotlib_is_refused_before_any_version_runs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # It measured every version (437 s for matmul) and only then found no matplotlib.
    import sys

    import mcl.report

    def measured(*args: object, **kwargs: object) -> None:
        raise AssertionError("a version was analysed before the plot was refused")

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails
    monkeypatch.setattr(mcl.report, "load_series", measured)
    code = main(["report", "--run", "--plot", str(tmp_path / "plot.png"),
                 str(KERNELS / "matmul")])
    assert code == 1 and "[plot-matplotlib]" in capsys.readouterr().err


def test_the_fuzzer_generates_this_rounds_classes() -> None:
    import random

    from mcl.fuzz import generated_kernel

    rng = random.Random(8)
    kernels = [generated_kernel(rng) for _ in range(300)]
    at_gpu = [k for k in kernels if k.startswith("gpu")]
    assert at_gpu and all("foreach (int i in kk threads)" in k for k in at_gpu)
    assert any("float[2147483647] h" in k for k in kernels)


def test_feedback_at_sizes_that_make_a_value_undefined_is_no_internal_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Found by this round's campaign (seed 5119): at nrows = -1 a Min of a nan reached
    # SymPy, which raised ValueError ("The argument 'nan' is not comparable"), exit 2.
    code = main(["check", "--level", "hopper", "--format", "json", "-D", "ncols=31",
                 "-D", "nnz=-1", "-D", "nrows=-1", str(KERNELS / "spmv" / "hopper_v20.mcpl")])
    assert code in (0, 1) and "Traceback" not in capsys.readouterr().err
