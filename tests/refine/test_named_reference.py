"""`--reference PATH` of `mcl apply` and `mcl refine`: the reference the user named gives
the sizes, the function and the verification of every next version, not a reference.py
that happens to lie beside the kernel (here a wrong one: its outputs are all zeros, its
sizes others)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.resources import kernels_dir

SIZES = ["-D", "n=8192", "-D", "m=8192"]

WRONG_REFERENCE = '''"""A wrong reference: b is all zeros, at sizes of its own."""
import numpy as np

FUNCTION = "transpose"
SIZES = {"n": 5, "m": 3}
OUTPUTS = ("b",)


def inputs(sizes, rng):
    n, m = sizes["n"], sizes["m"]
    return {"n": n, "m": m, "b": np.zeros((m, n), dtype=np.float32),
            "a": rng.uniform(-1.0, 1.0, (n, m)).astype(np.float32)}


def reference(args):
    return {"b": np.zeros_like(np.asarray(args["b"]))}


def error_terms(args):
    return 0
'''


@pytest.fixture
def named(tmp_path: Path) -> tuple[Path, Path]:
    """gpu_v1 of the transpose with a wrong reference.py beside it, and the right
    reference under another name in another folder."""
    kernel_dir, elsewhere = tmp_path / "kernel", tmp_path / "elsewhere"
    kernel_dir.mkdir()
    elsewhere.mkdir()
    kernel = kernel_dir / "gpu_v1.mcpl"
    shutil.copy(kernels_dir() / "transpose" / "gpu_v1.mcpl", kernel)
    (kernel_dir / "reference.py").write_text(WRONG_REFERENCE)
    right = elsewhere / "right_transpose.py"
    shutil.copy(kernels_dir() / "transpose" / "reference.py", right)
    return kernel, right


def test_apply_verifies_against_the_reference_named(
        named: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    kernel, right = named
    assert main(["apply", str(kernel), "--level", "hopper", *SIZES,
                 "--reference", str(right)]) == 0
    out = capsys.readouterr().out
    assert "pad-shared:array=tile,pad=1,banks=32" in out
    # the named reference's sizes (n=19 m=31), not the wrong one's (n=5 m=3)
    assert "verified against right_transpose.py (the numpy reference) at n=19 m=31;" in out
    # ... and applying one verifies against it too
    assert main(["apply", str(kernel), "--level", "hopper", *SIZES, "--reference",
                 str(right), "pad-shared:tile", "-o", str(kernel.with_name("next.mcpl"))]) == 0
    assert "TILE + 1" in kernel.with_name("next.mcpl").read_text()


def test_without_the_option_the_wrong_reference_beside_refuses(
        named: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    kernel, _ = named
    assert main(["apply", str(kernel), "--level", "hopper", *SIZES]) == 0
    out = capsys.readouterr().out
    assert "0 refinements apply" in out, out
    assert "the original does not match the reference" in out


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_named_reference_that_is_not_there_is_an_error(
        named: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    kernel, right = named
    missing = right.with_name("missing.py")
    assert main(["apply", str(kernel), "--level", "hopper", "--reference", str(missing)]) == 1
    assert f"no numpy reference at {missing}" in capsys.readouterr().err


def test_refine_verifies_against_and_copies_the_reference_named(
        named: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel, right = named
    out = tmp_path / "refined"
    assert main(["refine", str(kernel), "--target", "hopper", *SIZES, "--reference",
                 str(right), "-o", str(out)]) == 0
    captured = capsys.readouterr().out
    assert "hopper_v2: pad-shared:array=tile,pad=1,banks=32:" in captured
    assert "verified against right_transpose.py (the numpy reference) at n=19 m=31;" in captured
    # copied as the series folder's reference.py, where `mcl report DIR --run` looks
    assert (out / "reference.py").read_text() == right.read_text()
