"""The on-disk cache of parsed MCPL modules (mcl.parse_cache, used by
mcl.mcpl.parse.parse_file): it must never change what a parse or a check gives — an edited
file or other description names parse again, a broken or foreign entry is ignored, syntax
errors stay the parser's, and the language server's reuse of definitions is left alone."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.diagnostics import MclError
from mcl.mcpl import parse as P
from mcl.parse_cache import ENV_VAR, ParseCache

ROOT = Path(__file__).resolve().parents[2]
KERNEL = ROOT / "kernels" / "matmul" / "perfect.mcpl"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder of this test; the folder of its MCPL entries."""
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    return tmp_path / "cache" / "mcpl"


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    copy = tmp_path / "matmul.mcpl"
    copy.write_text(KERNEL.read_text())
    return copy


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle")) if folder.is_dir() else []


def parser_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, parsing a text fails the test: every module must come from the cache."""
    def refuse(text: str, file: str = "", hwd_names: object = None) -> P.Module:
        raise AssertionError(f"{file} was parsed again")

    monkeypatch.setattr(P, "parse_source", refuse)


def fresh(path: Path) -> P.Module:
    return P.parse_source(path.read_text(), str(path))


def test_a_second_parse_comes_from_the_cache_with_the_same_tree(
        cache: Path, kernel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = P.parse_file(kernel)
    assert len(entries(cache)) == 1
    expected = repr(fresh(kernel))  # repr: every field, spans and file names included
    parser_forbidden(monkeypatch)
    second = P.parse_file(kernel)
    assert second == first and repr(second) == repr(first) == expected
    assert second.file == str(kernel)


def test_an_edited_file_or_other_description_names_parse_again(
        cache: Path, kernel: Path) -> None:
    before = P.parse_file(kernel)
    kernel.write_text(kernel.read_text().replace("sum += a[i, k] * b[k, j];",
                                                 "sum += 2 * a[i, k] * b[k, j];"))
    after = P.parse_file(kernel)
    assert after != before and repr(after) == repr(fresh(kernel))
    assert len(entries(cache)) == 1  # the file's entry was replaced, not added
    # `gpu.x` is a description constant only where `gpu` is a description name.
    named = P.parse_file(kernel, hwd_names={"perfect"})
    assert repr(named) == repr(P.parse_source(kernel.read_text(), str(kernel), {"perfect"}))
    assert repr(P.parse_file(kernel)) == repr(after)


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other key", "not a module",
                                    "runs code"])
def test_a_damaged_or_foreign_entry_is_ignored_and_replaced(
        cache: Path, kernel: Path, damage: str, tmp_path: Path) -> None:
    good = P.parse_file(kernel)
    (entry,) = entries(cache)
    data = entry.read_bytes()
    marker = tmp_path / "ran"
    names = "\0".join(sorted(P.library_hwd_names()))
    entry.write_bytes({
        "truncated": data[: len(data) // 2],
        "garbage": b"\x00not a pickle at all",
        "other key": pickle.dumps((b"0" * 32, dataclasses.replace(good, functions=()))),
        "not a module": pickle.dumps((P.CACHE.key(kernel.read_text(), str(kernel), names),
                                      ("matmul",))),
        "runs code": pickle.dumps(_RunsCode(str(marker))),
    }[damage])
    assert repr(P.parse_file(kernel)) == repr(good)
    assert not marker.exists()
    assert entries(cache) == [entry]
    assert repr(P.CACHE.load(kernel.read_text(), str(kernel), names)) == repr(good)


class _RunsCode:
    """An entry that would create a folder when unpickled by a plain `pickle.load`."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.path,))


def test_syntax_errors_are_never_cached_and_read_as_without_a_cache(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "broken.mcpl"
    broken.write_text("perfect void f( {\n")
    messages = []
    for value in (str(cache.parent), ""):
        monkeypatch.setenv(ENV_VAR, value)
        for _ in range(2):
            with pytest.raises(MclError) as info:
                P.parse_file(broken)
            messages.append([str(d) for d in info.value.diagnostics])
    assert all(m == messages[0] for m in messages) and "expected" in messages[0][0]
    assert entries(cache) == []


def test_reused_definitions_do_not_go_through_the_cache(
        cache: Path, kernel: Path) -> None:
    P.reuse_definitions(True)
    try:
        P.parse_file(kernel)
    finally:
        P.reuse_definitions(False)
    assert entries(cache) == []


@pytest.mark.slow
def test_a_warm_check_skips_textx_and_prints_what_a_check_without_cache_prints(
        tmp_path: Path) -> None:
    args = [sys.executable, "-c",
            "import sys; from mcl.cli import main; status = main(sys.argv[1:]); "
            "print('textx' in sys.modules); sys.exit(status)",
            "check", str(KERNEL.relative_to(ROOT)), "--level", "fermi", "-D", "n=2048",
            "-D", "m=1024", "-D", "p=512", "-v"]
    runs = []
    for folder in ("", str(tmp_path), str(tmp_path)):  # no cache, cold, warm
        out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT,
                             env={**os.environ, ENV_VAR: folder})
        runs.append((out.returncode, out.stdout, out.stderr))
    assert [r[1].splitlines()[-1] for r in runs] == ["True", "True", "False"]
    assert runs[0][0] == 0 and "time estimate" in runs[0][1]
    assert len({(code, out.rsplit("\n", 2)[0], err) for code, out, err in runs}) == 1


def test_two_parsers_that_share_the_folder_keep_their_own_entries(
        cache: Path, kernel: Path) -> None:
    # Another installation of mcl (another checkout) with an edited parser: its entry of
    # the same file must not replace this one's, or alternating between them parses anew.
    other = ParseCache("mcpl", P.Module, (*P.CACHE.sources, "mcpl/printer.py"),
                       P.CACHE.modules)
    mine = P.parse_file(kernel)
    names = "\0".join(sorted(P.library_hwd_names()))
    other.store(kernel.read_text(), str(kernel), mine, names)
    assert len(entries(cache)) == 2
    assert repr(P.CACHE.load(kernel.read_text(), str(kernel), names)) == repr(mine)
