"""mcl.dataclass_code: the methods of dataclasses compiled once and kept on disk."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from mcl.dataclass_code import CodeTable, load


def make_class(table: CodeTable, monkeypatch: pytest.MonkeyPatch) -> type:
    monkeypatch.setattr(dataclasses, "exec", table.exec, raising=False)

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2
        tags: tuple[str, ...] = dataclasses.field(default=(), compare=False)

    monkeypatch.undo()
    return Point


def test_methods_from_the_table_behave_as_compiled_ones(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "table.marshal"
    first = CodeTable(path)
    made = make_class(first, monkeypatch)
    assert first.added and len(first.code) == 6  # init, repr, eq, hash, setattr, delattr
    first.save()
    second = CodeTable(path)
    assert set(second.code) == set(first.code)
    kept = make_class(second, monkeypatch)
    assert not second.added  # every method came from the file
    for cls in (made, kept):
        p = cls(1, tags=("a",))
        assert repr(p).endswith(".Point(x=1, y=2, tags=('a',))")
        assert p == cls(1, 2) and p != cls(1, 3) and hash(p) == hash(cls(1, 2))
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3  # type: ignore[misc]
        assert cls.__init__.__annotations__ == made.__init__.__annotations__


def test_a_table_others_may_write_or_another_python_wrote_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "table.marshal"
    table = CodeTable(path)
    make_class(table, monkeypatch)
    table.save()
    assert load(path)
    path.chmod(0o666)
    assert load(path) == {}
    path.chmod(0o600)
    path.write_bytes(b"\0\0\0\0" + path.read_bytes()[4:])  # another magic number
    assert load(path) == {}
    path.write_bytes(path.read_bytes()[:100])
    assert load(path) == {}


def test_an_unwritable_folder_means_no_table(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    table = CodeTable(folder / "table.marshal")
    make_class(table, monkeypatch)
    table.save()  # silently nothing
    assert not (folder / "table.marshal").exists()
