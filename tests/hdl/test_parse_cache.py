"""The on-disk cache of parsed `.hdl` files (mcl.hdl.parse_cache): it must never change
what a load gives — an edited file is parsed again, a broken or foreign entry is ignored,
a folder that cannot be written only costs the speed-up, and errors stay the parser's."""

from __future__ import annotations

import dataclasses
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcl.diagnostics import MclError
from mcl.hdl import parse_cache
from mcl.hdl import syntax as S
from mcl.hdl.library import load_library, load_paths
from mcl.resources import hwdescs_dir


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache folder of this test, and no parse left over in this process."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(parse_cache.ENV_VAR, str(folder))
    S._parse_file_text.cache_clear()
    yield folder / "hdl"
    S._parse_file_text.cache_clear()


@pytest.fixture
def descriptions(tmp_path) -> Path:
    """A copy of the bundled descriptions that a test may edit."""
    folder = tmp_path / "hwdescs"
    folder.mkdir()
    for file in hwdescs_dir().glob("*.hdl"):
        shutil.copy(file, folder)
    return folder


def textx_forbidden(monkeypatch) -> None:
    """From now on, parsing with textX fails the test: every tree must come from the cache."""
    def refuse(text: str, file: str) -> S.HdlFile:
        raise AssertionError(f"{file} was parsed again")

    S._parse_file_text.cache_clear()
    monkeypatch.setattr(S, "parse_hdl", refuse)


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pickle")) if folder.is_dir() else []


def summary(hwd) -> list[tuple]:
    """What a built description says, node by node (the model's classes compare by
    identity)."""
    groups = [(g.name, g.nr_units, g.max_nr_units, [(s.name, s.default, s.read_only, s.span)
                                                  for s in g.spaces], g.span)
              for g in hwd.par_groups()]
    nodes = [(n.kind, n.path, n.values, sorted(n.flags), n.args, n.span)
             for n in hwd.device.walk()]
    return [hwd.name, hwd.parent, hwd.file, hwd.span, groups, nodes]


def blocks_limit(hwd) -> int:
    return hwd.value("hierarchy.blocks.max_nr_units").value


def fresh_parse(file: Path) -> S.HdlFile:
    return S._parse_cached.__wrapped__(file.read_text(), str(file))


def test_a_second_load_reads_every_file_from_the_cache_and_builds_the_same_library(
        cache, descriptions, monkeypatch):
    first = load_paths([descriptions])
    assert len(entries(cache)) == len(list(descriptions.glob("*.hdl"))) == 10
    textx_forbidden(monkeypatch)
    second = load_paths([descriptions])
    assert second.names() == first.names()
    for name in first.names():
        assert summary(second[name]) == summary(first[name])
        assert S.parse_hdl_file(descriptions / f"{name}.hdl") == \
            fresh_parse(descriptions / f"{name}.hdl")


def test_an_edited_file_is_parsed_again(cache, descriptions):
    fermi = descriptions / "fermi.hdl"
    before = S.parse_hdl_file(fermi)
    old = blocks_limit(load_paths([descriptions])["fermi"])
    text = fermi.read_text()
    assert "max_nr_units = 65535" in text
    fermi.write_text(text.replace("max_nr_units = 65535", "max_nr_units = 777"))
    S._parse_file_text.cache_clear()  # as a new process: only the disk cache knows fermi
    after = S.parse_hdl_file(fermi)
    assert after != before and after == fresh_parse(fermi)
    library = load_paths([descriptions])
    assert (old, blocks_limit(library["fermi"])) == (65535, 777)
    assert len(entries(cache)) == 10  # the entry of fermi.hdl was replaced, not added


def test_the_same_text_under_another_name_has_its_own_spans(cache, descriptions, tmp_path):
    S.parse_hdl_file(descriptions / "gpu.hdl")
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(descriptions / "gpu.hdl", other)
    S._parse_file_text.cache_clear()
    tree = S.parse_hdl_file(other / "gpu.hdl")
    assert tree.file == str(other / "gpu.hdl") == tree.name_span.file


def test_a_read_only_cache_is_used_and_an_unwritable_one_changes_nothing(
        cache, descriptions, monkeypatch, tmp_path):
    expected = load_paths([descriptions])
    cache.chmod(0o555)
    try:
        S._parse_file_text.cache_clear()
        with monkeypatch.context() as m:
            textx_forbidden(m)
            assert summary(load_paths([descriptions])["fermi"]) == summary(expected["fermi"])
        (descriptions / "gpu.hdl").write_text(
            (descriptions / "gpu.hdl").read_text() + "\n// edited\n")
        S._parse_file_text.cache_clear()
        assert summary(load_paths([descriptions])["fermi"]) == summary(expected["fermi"])
    finally:
        cache.chmod(0o755)
    # A cache folder that cannot even be created (it would lie inside a plain file).
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(parse_cache.ENV_VAR, str(blocker / "cache"))
    S._parse_file_text.cache_clear()
    assert summary(load_paths([descriptions])["fermi"]) == summary(expected["fermi"])
    assert blocker.read_text() == ""


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other key", "not a tree",
                                    "runs code"])
def test_a_damaged_or_foreign_entry_is_ignored_and_replaced(
        cache, descriptions, damage, tmp_path):
    gpu = descriptions / "gpu.hdl"
    good = S.parse_hdl_file(gpu)
    (entry,) = entries(cache)
    data = entry.read_bytes()
    marker = tmp_path / "ran"
    entry.write_bytes({
        "truncated": data[: len(data) // 2],
        "garbage": b"\x00not a pickle at all",
        "other key": pickle.dumps((b"0" * 32, dataclasses.replace(good, blocks=()))),
        "not a tree": pickle.dumps((parse_cache._key(gpu.read_text(), str(gpu)), ("gpu",))),
        "runs code": pickle.dumps(_RunsCode(str(marker))),
    }[damage])
    S._parse_file_text.cache_clear()
    assert S.parse_hdl_file(gpu) == good
    assert not marker.exists()
    assert entries(cache) == [entry]
    assert parse_cache.load(gpu.read_text(), str(gpu)) == good  # replaced by a good entry


class _RunsCode:
    """An entry that would create a file when unpickled by a plain `pickle.load`."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_syntax_errors_are_never_cached_and_read_as_without_a_cache(
        cache, tmp_path, monkeypatch):
    broken = tmp_path / "broken.hdl"
    broken.write_text("hardware_description broken;\nmemory m {\n  capacity = ;\n}\n")
    messages = []
    for value in (str(cache.parent), ""):
        monkeypatch.setenv(parse_cache.ENV_VAR, value)
        for _ in range(2):
            S._parse_file_text.cache_clear()
            with pytest.raises(MclError) as info:
                S.parse_hdl_file(broken)
            messages.append([str(d) for d in info.value.diagnostics])
    assert all(m == messages[0] for m in messages) and "syntax error" in messages[0][0]
    assert entries(cache) == []


def test_an_empty_cache_variable_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv(parse_cache.ENV_VAR, "")
    assert parse_cache.cache_dir() is None
    monkeypatch.delenv(parse_cache.ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert parse_cache.cache_dir() == tmp_path / "mcl" / "hdl"
    S._parse_file_text.cache_clear()
    assert load_library(use_env=False).names()  # the bundled library, through the cache
    assert len(entries(tmp_path / "mcl" / "hdl")) == 10
    S._parse_file_text.cache_clear()


def test_a_later_process_loads_the_library_without_textx(tmp_path):
    code = ("import sys; from mcl.hdl.library import load_library; "
            "print(len(load_library(use_env=False)), 'textx' in sys.modules)")
    env = {**os.environ, parse_cache.ENV_VAR: str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env=env).stdout.split() for _ in range(2)]
    assert runs == [["10", "True"], ["10", "False"]]


def test_without_a_home_directory_there_is_no_cache_and_no_error(monkeypatch):
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv(parse_cache.ENV_VAR)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert parse_cache.cache_dir() is None
    S._parse_file_text.cache_clear()
    assert load_library(use_env=False).names()
    S._parse_file_text.cache_clear()


# ----------------------------------------------------------- the loaded library on disk


def library_entries(cache: Path) -> list[Path]:
    return entries(cache.parent / "library")


def builder_forbidden(monkeypatch) -> None:
    """From now on, building a description fails the test: the library must come whole
    from the cache."""
    from mcl.hdl import build

    def refuse(*args, **kwargs):
        raise AssertionError("the library was built again")

    textx_forbidden(monkeypatch)
    monkeypatch.setattr(build, "Builder", refuse)


def everything(library) -> list:
    return [library.names(), [summary(h) for h in library], library.hierarchy.edges,
            [str(d) for d in library.warnings], library.sources,
            {n: [str(d) for d in ds] for n, ds in library.failed.items()}]


def test_a_loaded_library_is_read_back_whole_without_building(
        cache, descriptions, monkeypatch):
    first = load_paths([descriptions], partial=True)
    assert len(library_entries(cache)) == 1
    builder_forbidden(monkeypatch)
    second = load_paths([descriptions], partial=True)
    assert second is not first and everything(second) == everything(first)
    # Identities within the library survive: each description's lineage holds the very
    # descriptions above it.
    fermi = second["fermi"]
    assert fermi.lineage["nvidia"] is second["nvidia"]


def test_an_edited_description_or_other_paths_build_the_library_again(
        cache, descriptions, monkeypatch, tmp_path):
    load_paths([descriptions], partial=True)
    fermi = descriptions / "fermi.hdl"
    fermi.write_text(fermi.read_text().replace("max_nr_units = 65535", "max_nr_units = 777"))
    assert blocks_limit(load_paths([descriptions], partial=True)["fermi"]) == 777
    extra = tmp_path / "mine"
    extra.mkdir()
    shutil.copy(fermi, extra / "fermi.hdl")
    fermi.write_text(fermi.read_text().replace("max_nr_units = 777", "max_nr_units = 65535"))
    assert blocks_limit(load_paths([descriptions], partial=True)["fermi"]) == 65535
    both = load_paths([descriptions, extra], partial=True)
    assert blocks_limit(both["fermi"]) == 777 and "hdl-shadowed" in str(both.warnings)
    assert len(library_entries(cache)) == 2  # one per list of paths


def test_a_library_with_failed_descriptions_is_kept_with_its_errors_and_errors_never(
        cache, descriptions, monkeypatch):
    gpu = descriptions / "gpu.hdl"
    gpu.write_text(gpu.read_text().replace("hardware_description gpu;",
                                           "hardware_description gpu;\nspecializes nowhere;"))
    with pytest.raises(MclError):
        load_paths([descriptions])  # not partial: the errors are raised, nothing kept
    assert library_entries(cache) == []
    first = load_paths([descriptions], partial=True)
    assert "gpu" in first.failed and "fermi" in first.failed
    builder_forbidden(monkeypatch)
    assert everything(load_paths([descriptions], partial=True)) == everything(first)


def test_a_damaged_library_entry_is_ignored(cache, descriptions):
    expected = everything(load_paths([descriptions], partial=True))
    (entry,) = library_entries(cache)
    entry.write_bytes(entry.read_bytes()[:100])
    assert everything(load_paths([descriptions], partial=True)) == expected
    entry.write_bytes(pickle.dumps(_RunsCode(str(cache / "ran"))))
    assert everything(load_paths([descriptions], partial=True)) == expected
    assert not (cache / "ran").exists()


class _CallsAMethod:
    """An entry that would delete a file through a method of an allowed module's class
    (`pathlib.Path.unlink`, reached by a dotted name)."""

    def __init__(self, path: Path):
        self.path = path

    def __reduce__(self):
        return (Path.unlink, (self.path,))


def test_an_entry_cannot_call_a_method_of_an_allowed_class(cache, descriptions, tmp_path):
    expected = everything(load_paths([descriptions], partial=True))
    (entry,) = library_entries(cache)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    entry.write_bytes(pickle.dumps(_CallsAMethod(victim), protocol=pickle.HIGHEST_PROTOCOL))
    assert everything(load_paths([descriptions], partial=True)) == expected
    assert victim.read_text() == "keep me"
