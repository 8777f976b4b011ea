"""Every option that names an output path is checked before the work starts, and every
write error after it is one diagnostic with exit status 1 (mcl.output_files); `mcl
codegen` writes its set whole or not at all and never replaces what it did not write."""

from __future__ import annotations

import errno
import os
import shlex
from pathlib import Path

import pytest

from mcl.cli import main
from mcl.output_files import GENERATED_MARKER, is_generated, write_generated_folder
from mcl.resources import kernels_dir

MATMUL_DIR = kernels_dir() / "matmul"
KERNEL = str(MATMUL_DIR / "x86_avx512_v3.mcpl")
SIZES = ["-D", "n=40", "-D", "m=40", "-D", "p=40"]


def _one_error(err: str) -> str:
    """The stderr of a failed command: exactly one `error:` line, no traceback."""
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


def _blocked(tmp_path: Path, name: str) -> str:
    """An output path whose folder cannot exist: its parent is a regular file (so the check
    fails for root too, where permissions do not)."""
    plain = tmp_path / "plain-file"
    plain.write_text("not a folder\n")
    return str(plain / name)


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every analysis fail loudly: a path error must come before any of them."""
    import mcl.commands.codegen as codegen
    import mcl.mcpl.loader as loader
    import mcl.pipeline  # noqa: F401
    import mcl.report  # noqa: F401

    # Modules that bind `load_program` by name must be imported before it is replaced:
    # imported while it is, they would keep the failing stand-in after this test.

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("the work started before the output path was checked")

    monkeypatch.setattr(loader, "load_program", started)
    monkeypatch.setattr(codegen, "load_checked", started)
    monkeypatch.setattr("mcl.report.load_series", started)


BEFORE_WORK = {
    "translate -o": lambda out: ["translate", KERNEL, "--to", "x86_avx512", "-o", out],
    "report -o": lambda out: ["report", str(MATMUL_DIR), "-o", out],
    "report --format markdown -o": lambda out: ["report", str(MATMUL_DIR), "--format",
                                                "markdown", "-o", out],
    "report --run --plot": lambda out: ["report", str(MATMUL_DIR), "--run", "--plot", out],
    "roofline --plot": lambda out: ["roofline", KERNEL, "--plot", out, *SIZES],
    "codegen -o": lambda out: ["codegen", KERNEL, "--target", "x86_avx512", "-o", out],
}


@pytest.mark.parametrize("option", list(BEFORE_WORK))
@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_an_impossible_output_path_fails_before_the_work(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_work(monkeypatch)
    name = "out.png" if "plot" in option else "out"
    out = _blocked(tmp_path, name)
    assert main(BEFORE_WORK[option](out)) == 1
    line = _one_error(capsys.readouterr().err)
    assert "plain-file is not a folder" in line and "[output-path]" in line


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_an_unwritable_folder_fails_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_work(monkeypatch)
    real_access = os.access
    locked = tmp_path / "locked"
    locked.mkdir()
    # Root may write anywhere, so a read-only folder is simulated at the permission check.
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p) != locked
                        and real_access(p, mode, **kw))
    assert main(["report", str(MATMUL_DIR), "-o", str(locked / "sub" / "r.md")]) == 1
    assert f"the folder {locked} is not writable" in _one_error(capsys.readouterr().err)


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_an_output_file_that_is_a_folder_fails_before_the_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_work(monkeypatch)
    assert main(["translate", KERNEL, "--to", "x86_avx512", "-o", str(tmp_path)]) == 1
    assert "is a folder, not a file" in _one_error(capsys.readouterr().err)


@pytest.mark.parametrize(("blocker", "extra", "named"), [
    ("k.tuned.toml", [], "the tuned file"),  # the file it would write is a folder
    (".k.tune-cache", ["--no-write"], "the tuning cache"),  # the cache folder is a file
])
def test_tune_checks_its_outputs_before_the_work(
    blocker: str, extra: list[str], named: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _no_work(monkeypatch)
    kernel = tmp_path / "k.mcpl"
    kernel.write_text((MATMUL_DIR / "x86_avx512_v3.mcpl").read_text())
    if blocker.endswith(".toml"):
        (tmp_path / blocker).mkdir()
    else:
        (tmp_path / blocker).write_text("a file where a folder goes\n")
    assert main(["tune", str(kernel), "--target", "x86_avx512", *extra]) == 1
    assert named in _one_error(capsys.readouterr().err)


def _disk_full(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "replace", full)


@pytest.mark.parametrize("argv", [
    ["translate", KERNEL, "--to", "x86_avx512", "-o", "{out}"],
    ["report", str(MATMUL_DIR), "--versions", "perfect", "-o", "{out}"],
])
@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_write_error_after_the_work_is_one_diagnostic_and_keeps_the_old_file(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "out.txt"
    out.write_text("the old contents\n")
    _disk_full(monkeypatch)
    assert main([a.replace("{out}", str(out)) for a in argv]) == 1
    line = _one_error(capsys.readouterr().err)
    assert f"cannot write {out}" in line and "No space left" in line
    assert out.read_text() == "the old contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]  # no temporary left


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_a_plot_write_error_is_one_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _disk_full(monkeypatch)
    out = tmp_path / "r.svg"
    assert main(["roofline", KERNEL, "--plot", str(out), *SIZES]) == 1
    assert f"cannot write {out}" in _one_error(capsys.readouterr().err)
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_translate_and_report_say_what_they_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "t.mcpl"  # a missing folder is made
    assert main(["translate", KERNEL, "--to", "x86_avx512", "-o", str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out}\n"
    assert "x86_avx512 void matmul" in out.read_text()
    report = tmp_path / "r.md"
    assert main(["report", str(MATMUL_DIR), "--versions", "perfect", "-o", str(report)]) == 0
    assert f"wrote {report}" in capsys.readouterr().out
    assert "perfect" in report.read_text()


# ------------------------------------------------------------------------------ codegen


def _codegen(out: Path, *extra: str) -> int:
    return main(["codegen", KERNEL, "--target", "x86_avx512", "-o", str(out), *extra])


def test_codegen_marks_every_file_and_replaces_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    assert _codegen(out) == 0
    files = sorted(out.iterdir())
    assert files and all(is_generated(f) for f in files)
    assert all(GENERATED_MARKER in f.read_text().splitlines()[0] for f in files)
    assert (out / "CMakeLists.txt").read_text().startswith("# ")
    before = {f.name: f.read_text() for f in files}
    assert _codegen(out) == 0  # a second run replaces its own files without --force
    assert {f.name: f.read_text() for f in out.iterdir()} == before


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_codegen_refuses_to_replace_a_users_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "gen"
    out.mkdir()
    (out / "main.cpp").write_text("int main() { return 42; }\n")
    assert _codegen(out) == 1
    line = _one_error(capsys.readouterr().err)
    assert "main.cpp" in line and "[output-not-generated]" in line
    assert sorted(p.name for p in out.iterdir()) == ["main.cpp"]  # nothing written
    assert (out / "main.cpp").read_text() == "int main() { return 42; }\n"
    assert _codegen(out, "--force") == 0
    assert is_generated(out / "main.cpp")


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_codegen_never_writes_through_a_symbolic_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("outside the output folder\n")
    out = tmp_path / "gen"
    assert _codegen(out) == 0
    (out / "CMakeLists.txt").unlink()
    (out / "CMakeLists.txt").symlink_to(victim)
    assert _codegen(out) == 1
    assert "CMakeLists.txt" in _one_error(capsys.readouterr().err)
    assert _codegen(out, "--force") == 0  # replaces the link, not its target
    assert victim.read_text() == "outside the output folder\n"
    assert not (out / "CMakeLists.txt").is_symlink() and is_generated(out / "CMakeLists.txt")


@pytest.mark.usefixtures("whole_lines")  # reads a message from one line
def test_codegen_on_a_full_disk_leaves_the_old_set_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "gen"
    assert _codegen(out) == 0
    old = {f.name: f.read_text() for f in out.iterdir()}
    real_write = Path.write_text
    written = []

    def fill_up(self: Path, text: str, *args: object, **kwargs: object) -> int:
        written.append(self.name)
        if len(written) == 3:  # the disk fills up during the third file
            real_write(self, text[: len(text) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(self, text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "write_text", fill_up)
    assert _codegen(out) == 1
    assert "No space left on device" in _one_error(capsys.readouterr().err)
    assert {f.name: f.read_text() for f in out.iterdir()} == old  # no staging folder left


def test_write_generated_folder_writes_nothing_when_one_file_is_not_ours(tmp_path: Path) -> None:
    (tmp_path / "b.h").write_text("mine\n")
    with pytest.raises(Exception, match="b.h"):
        write_generated_folder(tmp_path, {"a.cl": "x\n", "b.h": "y\n"}, force=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.h"]


def test_codegen_prints_a_shell_quoted_build_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "my gen; $(x)"
    assert _codegen(out) == 0
    build = capsys.readouterr().out.splitlines()[-1]
    assert build.startswith("build: ")
    words = shlex.split(build.removeprefix("build: "))
    assert words[:5] == ["cmake", "-S", str(out), "-B", str(out / "build")]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
def test_standard_output_on_a_full_disk_is_one_line_and_exit_1() -> None:
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "mcl", "hwd", "list"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "mcl: error: could not write the output: No space left on device"]
