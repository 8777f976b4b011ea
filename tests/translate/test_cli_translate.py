"""`mcl translate FILE --to LEVEL [-o OUT]` and `mcl check FILE --level LEVEL`."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.cli import main
from mcl.mcpl.parse import parse_source
from mcl.resources import kernels_dir

MATMUL = str(kernels_dir() / "matmul" / "perfect.mcpl")
REDUCTION_GPU = str(kernels_dir() / "reduction" / "gpu_v1.mcpl")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, " ".join(err.split())  # rich wraps long lines; compare words


def test_prints_valid_mcpl_for_the_target_level(capsys):
    rc, out, err = run(capsys, "translate", MATMUL, "--to", "fermi")
    assert rc == 0 and err == ""
    (f,) = parse_source(out).functions
    assert f.hwd == "fermi" and f.name == "matmul"
    assert "int nrThreadsM = gpu.hierarchy.blocks.block.threads.max_nr_units;" in out


def test_output_file_passes_mcl_check(capsys, tmp_path: Path):
    out_file = tmp_path / "matmul_gpu.mcpl"
    rc, out, _ = run(capsys, "translate", MATMUL, "--to", "gpu", "-o", str(out_file))
    assert rc == 0 and out == f"wrote {out_file}\n"
    assert parse_source(out_file.read_text()).functions[0].hwd == "gpu"
    rc, out, err = run(capsys, "check", str(out_file))
    assert rc == 0 and "0 errors, 0 warnings" in out


def test_translating_up_names_the_function_and_the_path(capsys):
    rc, out, err = run(capsys, "translate", REDUCTION_GPU, "--to", "perfect")
    assert rc == 1 and out == ""
    # the error points at the function's declaration, wherever the file has it
    line = next(i for i, text in enumerate(Path(REDUCTION_GPU).read_text().splitlines(), 1)
                if text.startswith("gpu void reduction"))
    assert f"gpu_v1.mcpl:{line}:1: error" in err and "[translate-upward]" in err
    assert "gpu → accelerator → perfect" in err
    assert "Traceback" not in err


def test_translating_sideways_names_the_path_through_the_common_ancestor(capsys):
    rc, _, err = run(capsys, "translate", REDUCTION_GPU, "--to", "xeon_phi")
    assert rc == 1 and "[translate-sideways]" in err
    assert "gpu → accelerator" in err and "accelerator → mic → xeon_phi" in err
    assert "from gpu you can translate to nvidia, fermi, hopper" in err


def test_an_unknown_level_gets_a_did_you_mean_hint(capsys):
    rc, _, err = run(capsys, "translate", MATMUL, "--to", "fermy")
    assert rc == 1 and "unknown level 'fermy'" in err and "did you mean 'fermi'?" in err


@pytest.mark.parametrize(("level", "meant"), [("GPU", "gpu"), ("X86_AVX512", "x86_avx512")])
def test_a_level_in_the_wrong_case_gets_the_level_as_hint(capsys, level: str, meant: str):
    rc, _, err = run(capsys, "translate", MATMUL, "--to", level)
    assert rc == 1 and f"unknown level '{level}'" in err and f"did you mean '{meant}'?" in err


def test_functions_of_other_branches_are_kept_with_a_note(capsys, tmp_path: Path):
    src = Path(MATMUL).read_text() + "\nxeon_phi float twice(float x) {\n  return 2.0 * x;\n}\n"
    (tmp_path / "mixed.mcpl").write_text(src)
    rc, out, err = run(capsys, "translate", str(tmp_path / "mixed.mcpl"), "--to", "fermi")
    assert rc == 0
    assert [f.hwd for f in parse_source(out).functions] == ["fermi", "xeon_phi"]
    assert "note: function 'twice' is written for xeon_phi" in err
    assert "perfect → accelerator → gpu → nvidia → fermi; left unchanged" in err


def test_errors_in_the_input_are_reported_at_their_own_lines_before_translating(capsys, tmp_path):
    (tmp_path / "bad.mcpl").write_text(
        "perfect void f(int n, main float[n] x) {\n"
        "  foreach (int i in n threads) {\n"
        "    x[i] = y;\n"
        "  }\n"
        "}\n"
    )
    rc, out, err = run(capsys, "translate", str(tmp_path / "bad.mcpl"), "--to", "gpu")
    assert rc == 1 and out == "" and "bad.mcpl:3:" in err and "'y'" in err


def test_check_with_level_translates_first(capsys):
    rc, out, err = run(capsys, "check", REDUCTION_GPU, "--level", "fermi")
    assert rc == 0 and "0 errors" in out
    rc, out, err = run(capsys, "check", REDUCTION_GPU, "--level", "mic")
    assert rc == 1 and "[translate-sideways]" in err


@pytest.mark.parametrize("text", ["", "// only a comment\n", "const int N = 4;\n"])
def test_a_file_without_functions_is_an_error_not_an_empty_result(capsys, tmp_path: Path, text):
    empty = tmp_path / "empty.mcpl"
    empty.write_text(text)
    rc, out, err = run(capsys, "translate", str(empty), "--to", "gpu")
    assert rc == 1 and out == ""
    assert "defines no function, so there is nothing to translate" in err


@pytest.mark.parametrize("bad", ["missing.mcpl", "folder"])
def test_unreadable_inputs_are_diagnostics(capsys, tmp_path: Path, bad: str):
    (tmp_path / "folder").mkdir()
    rc, out, err = run(capsys, "translate", str(tmp_path / bad), "--to", "gpu")
    assert rc == 1 and out == "" and "cannot read" in err and "Traceback" not in err


def test_an_unwritable_output_is_a_diagnostic(capsys, tmp_path: Path):
    rc, out, err = run(capsys, "translate", MATMUL, "--to", "gpu", "-o", str(tmp_path))
    assert rc == 1 and out == ""
    assert "is a folder, not a file" in err and "Traceback" not in err
