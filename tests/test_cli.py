"""The `mcl` entry point: version, help, and no tracebacks."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcl import __version__
from mcl.cli import COMMANDS, build_parser, main

ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert __version__ in capsys.readouterr().out


def test_no_command_prints_usage_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("usage: mcl") and "a command is required" in out.err


def test_packaging_metadata_has_one_version() -> None:
    from importlib.metadata import metadata

    meta = metadata("mcl")
    assert meta["Version"] == __version__
    assert any(c.startswith("Topic ::") for c in meta.get_all("Classifier") or [])


def test_module_entry_point_runs() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "mcl", "--help"], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0
    assert "stepwise" in out.stdout or "hardware descriptions" in out.stdout


def _command_parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_the_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    listed = capsys.readouterr().out
    assert all(f"    {name} " in listed for name in COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_alone_parses_as_with_every_command(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    # `mcl NAME ...` builds the parser of NAME alone (its module only is imported): its
    # help, and so its options, must be those it has among all the commands.
    alone = _command_parsers(build_parser(only=name))
    assert list(alone) == [name]
    assert alone[name].format_help() == _command_parsers(build_parser())[name].format_help()
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: mcl {name}")


def test_a_misspelt_command_is_answered_with_every_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["chekc", "x.mcpl"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'chekc'" in err and all(f"'{name}'" in err for name in COMMANDS)


def test_a_check_imports_no_other_command() -> None:
    code = ("import sys, io, contextlib; from mcl.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = main(['check', 'kernels/matmul/perfect.mcpl'])\n"
            "print(status, sorted(m for m in sys.modules if m.startswith('mcl.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split(maxsplit=1)
    assert out == ["0", "['mcl.commands.check', 'mcl.commands.options']\n"]


def test_a_warm_check_reads_no_metadata_and_compiles_no_dataclass(tmp_path: Path) -> None:
    """The start-up of a check whose files are cached (docs/feedback.md, "Start-up"): no
    textX, no package metadata (mcl.plugins), no TOML parser for the project's
    pyproject.toml (mcl.settings), no dataclass method compiled from source
    (mcl.dataclass_code); the first run fills the cache folder."""
    code = ("import sys, io, contextlib; from mcl.cli import main\n"
            "from mcl import dataclass_code, module_code\n"
            "module_code.install(); dataclass_code.install()  # as run_program does\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = main(['check', 'kernels/matmul/perfect.mcpl', '--level', 'fermi',\n"
            "                   '-D', 'n=64', '-D', 'm=64', '-D', 'p=64'])\n"
            "table = dataclass_code._installed\n"
            "print(status, table is not None and table.added,\n"
            "      sorted(m for m in ('textx', 'importlib.metadata', 'tomllib')\n"
            "             if m in sys.modules))")
    env = {**os.environ, "MCL_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, cwd=ROOT, env=env).stdout.split(maxsplit=2)
            for _ in range(2)]
    assert runs[0][:2] == ["0", "True"]  # the first run compiled and kept them
    assert runs[1] == ["0", "False", "[]\n"]


def test_the_program_ends_a_check_with_its_output_status_and_exit_handlers(
        tmp_path: Path) -> None:
    """`python -m mcl check` (mcl.cli.run_program: no teardown, the collector off) prints
    what `main` prints, with its exit status, and runs the exit handlers (the dataclass
    code table is written at exit); several files are checked as one at a time."""
    bad = tmp_path / "bad.mcpl"
    bad.write_text("perfect void f(int n, float[n] a) { a[0] = undefined_name; }\n")
    env = {**os.environ, "MCL_CACHE_DIR": str(tmp_path / "cache")}
    for args, status in ((["kernels/matmul/perfect.mcpl", "--level", "fermi", "-D", "n=64",
                           "-D", "m=64", "-D", "p=64"], 0),
                         ([str(bad)], 1),
                         (["kernels/vectoradd/perfect.mcpl", str(bad)], 1)):
        program = subprocess.run([sys.executable, "-m", "mcl", "check", *args],
                                 capture_output=True, text=True, cwd=ROOT, env=env)
        # the first run wrote it, through the exit handlers that run_program runs
        assert list((tmp_path / "cache").glob("dataclass-code-*.marshal"))
        code = ("import sys; from mcl.cli import main\n"
                f"sys.exit(main(['check', *{args!r}]))")
        in_process = subprocess.run([sys.executable, "-c", code], capture_output=True,
                                    text=True, cwd=ROOT, env=env)
        assert program.returncode == in_process.returncode == status
        assert program.stdout == in_process.stdout and program.stdout.strip()
        assert program.stderr == in_process.stderr


@pytest.mark.parametrize(("command", "option"), [("run", "--backend"), ("tune", "--backend"),
                                                  ("devices", "--backend"),
                                                  ("codegen", "--lang")])
def test_the_backend_choices_are_the_registry_s(command: str, option: str) -> None:
    """--backend and --lang offer every registered backend, the default first
    (docs/codegen.md, "Backends"), and refuse another name."""
    from mcl.backends import DEFAULT_BACKEND, backend_names

    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    assert tuple(action.choices or ()) == backend_names()
    assert action.default == DEFAULT_BACKEND
    with pytest.raises(SystemExit):
        parser.parse_args([command, "kernels/matmul/perfect.mcpl", option, "metal"])


def test_codegen_lang_cuda_writes_the_cuda_files(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["codegen", str(ROOT / "kernels/matmul/hopper_v1.mcpl"), "--target", "hopper",
                   "--lang", "cuda", "-o", str(tmp_path / "cu")])
    assert status == 0
    assert sorted(p.name for p in (tmp_path / "cu").iterdir()) == [
        "CMakeLists.txt", "main.cpp", "matmul.cpp", "matmul.cu", "matmul.h", "mcl_cuda.h"]
    assert "#line" in (tmp_path / "cu" / "matmul.cu").read_text()
