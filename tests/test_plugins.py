"""mcl.plugins: the entry points of mcl's groups, kept on disk with what they came from."""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

import pytest

from mcl import plugins

GROUP = "mcl.feedback_analyses"


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of installed distributions, first on sys.path, a cache of its own and no
    entry points read yet in this process."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("MCL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(plugins, "_found", None)
    return folder


def install(site: Path, value: str) -> Path:
    info = site / "myplugin-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplugin\nVersion: 1.0\n")
    points = info / "entry_points.txt"
    points.write_text(f"[{GROUP}]\nmine = {value}\n")
    return points


def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "_found", None)


def test_entry_points_are_those_of_importlib_metadata(site: Path) -> None:
    install(site, "mypkg.analysis:mine")
    for group in plugins.GROUPS:
        assert plugins.entry_points(group) == list(importlib.metadata.entry_points(group=group))
    assert [ep.value for ep in plugins.entry_points(GROUP)] == ["mypkg.analysis:mine"]


def test_the_kept_entry_points_are_read_until_a_package_changes(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    points = install(site, "mypkg.analysis:mine")
    assert plugins.entry_points(GROUP)[0].value == "mypkg.analysis:mine"
    fresh_process(monkeypatch)
    reads: list[int] = []
    real = plugins._read_installed
    monkeypatch.setattr(plugins, "_read_installed", lambda: reads.append(1) or real())
    assert plugins.entry_points(GROUP)[0].value == "mypkg.analysis:mine"
    assert reads == []  # from the cache folder
    points.write_text(f"[{GROUP}]\nmine = mypkg.other:mine\n")
    stat = points.stat()
    os.utime(points, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    fresh_process(monkeypatch)
    assert plugins.entry_points(GROUP)[0].value == "mypkg.other:mine"
    assert reads == [1]
    for path in site.glob("*/*"):
        path.unlink()
    for path in site.glob("*"):
        path.rmdir()  # the package removed
    fresh_process(monkeypatch)
    assert plugins.entry_points(GROUP) == []
    assert reads == [1, 1]


def test_without_a_cache_folder_entry_points_are_read(
        site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install(site, "mypkg.analysis:mine")
    monkeypatch.setenv("MCL_CACHE_DIR", "")
    assert plugins.entry_points(GROUP)[0].value == "mypkg.analysis:mine"
    assert not (site.parent / "cache").exists()


def test_only_mcls_groups_are_kept() -> None:
    with pytest.raises(ValueError, match="not one of mcl's"):
        plugins.entry_points("console_scripts")


def test_two_environments_sharing_the_cache_keep_their_own_entries(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two virtual environments (or checkouts) run in turn with one cache folder: each
    finds its own kept entries, none reads the metadata again."""
    install(site, "mypkg.analysis:mine")
    other = tmp_path / "other-site"
    other.mkdir()
    install(other, "mypkg.other:mine")
    first = list(sys.path)
    second = [str(other), *(p for p in first if p != str(site))]
    reads: list[int] = []
    real = plugins._read_installed
    monkeypatch.setattr(plugins, "_read_installed", lambda: reads.append(1) or real())
    for path in (first, second):  # each environment once, and its entries kept
        monkeypatch.setattr(sys, "path", path)
        fresh_process(monkeypatch)
        plugins.entry_points(GROUP)
    assert reads == [1, 1]
    for path, value in ((first, "mypkg.analysis:mine"), (second, "mypkg.other:mine")) * 2:
        monkeypatch.setattr(sys, "path", path)
        fresh_process(monkeypatch)
        assert plugins.entry_points(GROUP)[0].value == value
    assert reads == [1, 1]
