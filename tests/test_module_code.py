"""mcl.module_code: the bytecode of a package's modules kept in mcl's cache folder where
Python writes none."""

from __future__ import annotations

import importlib
import marshal
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcl.module_code import CachedModuleFinder, CachedSourceLoader

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `cachedpkg` with a module `mod`, found through a CachedModuleFinder whose
    folder is `tmp_path / "bytecode"`, imported with no bytecode written by Python."""
    source = tmp_path / "src" / "cachedpkg"
    source.mkdir(parents=True)
    (source / "__init__.py").write_text("")
    (source / "mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(source.parent))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    finder = CachedModuleFinder(tmp_path / "bytecode", "cachedpkg")
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    yield source
    for name in ("cachedpkg.mod", "cachedpkg"):
        sys.modules.pop(name, None)


def fresh_import() -> object:
    sys.modules.pop("cachedpkg.mod", None)
    return importlib.import_module("cachedpkg.mod")


def test_bytecode_is_kept_and_used_until_the_source_changes(package: Path,
                                                            tmp_path: Path) -> None:
    module = fresh_import()
    assert isinstance(module.__spec__.loader, CachedSourceLoader)  # type: ignore[attr-defined]
    assert module.VALUE == 1  # type: ignore[attr-defined]
    (kept,) = (tmp_path / "bytecode").rglob("mod.*.pyc")
    assert not list(package.rglob("__pycache__"))
    # The kept code is what runs: a file with the right header and other code is used.
    header = kept.read_bytes()[:16]
    kept.write_bytes(header + marshal.dumps(compile("VALUE = 'kept'", "mod", "exec")))
    assert fresh_import().VALUE == "kept"  # type: ignore[attr-defined]
    # An edited source (another size, another time) is compiled again.
    (package / "mod.py").write_text("VALUE = 22\n")
    stat = kept.stat()
    os.utime(package / "mod.py", (stat.st_atime + 5, stat.st_mtime + 5))
    assert fresh_import().VALUE == 22  # type: ignore[attr-defined]
    assert kept.read_bytes()[:16] != header


def test_a_file_others_may_write_or_a_broken_one_is_compiled_again(package: Path,
                                                                    tmp_path: Path) -> None:
    fresh_import()
    (kept,) = (tmp_path / "bytecode").rglob("mod.*.pyc")
    header = kept.read_bytes()[:16]
    kept.write_bytes(header + marshal.dumps(compile("VALUE = 'other'", "mod", "exec")))
    kept.chmod(0o666)
    assert fresh_import().VALUE == 1  # type: ignore[attr-defined]
    kept.write_bytes(header + b"\xff\xff")
    kept.chmod(0o600)
    assert fresh_import().VALUE == 1  # type: ignore[attr-defined]


def test_a_check_without_bytecode_keeps_mcls_in_the_cache_folder(tmp_path: Path) -> None:
    """`mcl check` where Python writes no bytecode: mcl's modules are loaded through the
    cache folder, the first run writing what the second reads."""
    code = ("import sys, io, contextlib; from mcl.cli import main\n"
            "from mcl import module_code\n"
            "module_code.install()  # as mcl.cli.run_program does\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    status = main(['check', 'kernels/vectoradd/perfect.mcpl'])\n"
            "loaders = [type(sys.modules[n].__spec__.loader).__name__\n"
            "           for n in ('mcl.pipeline', 'mcl.mcpl.ast')]\n"
            "print(status, *loaders)")
    env = {**os.environ, "MCL_CACHE_DIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True, cwd=ROOT, env=env).stdout.split()
        assert out == ["0", "CachedSourceLoader", "CachedSourceLoader"]
    kept = {p.name.split(".")[0] for p in (tmp_path / "bytecode").rglob("*.pyc")}
    assert {"pipeline", "ast", "check"} <= kept


def test_the_program_keeps_the_bytecode_and_main_alone_does_not(tmp_path: Path) -> None:
    env = {**os.environ, "MCL_CACHE_DIR": str(tmp_path / "program"),
           "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "-m", "mcl", "check", "kernels/vectoradd/perfect.mcpl"],
                   capture_output=True, check=True, cwd=ROOT, env=env)
    assert list((tmp_path / "program" / "bytecode").rglob("pipeline.*.pyc"))
    env["MCL_CACHE_DIR"] = str(tmp_path / "main")
    code = "from mcl.cli import main; main(['check', 'kernels/vectoradd/perfect.mcpl'])"
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, cwd=ROOT,
                   env=env)
    assert not (tmp_path / "main" / "bytecode").exists()
