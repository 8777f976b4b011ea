"""Unsaved editor buffers (mcl/source_files.py): the language server's feedback worker
replaces the whole set for each job through `replace_overlays`, and the pipeline reads a
buffer instead of the file on disk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mcl import pipeline
from mcl.hdl.library import default_library
from mcl.source_files import overlays, read_source, replace_overlays, set_overlay

GOOD = """\
perfect void k(int n, float[n] a) {
  foreach (int i in n threads) {
    a[i] = 2.0 * a[i];
  }
}
"""


@pytest.fixture(autouse=True)
def no_buffers() -> Iterator[None]:
    replace_overlays(())
    yield
    replace_overlays(())


def test_replace_overlays_keeps_exactly_the_buffers_given(tmp_path: Path) -> None:
    a, b = tmp_path / "a.mcpl", tmp_path / "b.mcpl"
    a.write_text("on disk a")
    b.write_text("on disk b")
    set_overlay(a, "old buffer a")
    replace_overlays([(str(b), "buffer b\r\nline two")])
    assert overlays() == {str(b.resolve()): "buffer b\nline two"}
    assert read_source(a, "io") == "on disk a"  # the old buffer is gone
    assert read_source(b, "io") == "buffer b\nline two"
    overlays()[str(a.resolve())] = "not stored"  # a copy: the caller cannot change them
    assert read_source(a, "io") == "on disk a"


def test_the_pipeline_checks_the_buffer_not_the_file(tmp_path: Path) -> None:
    path = tmp_path / "k.mcpl"
    path.write_text(GOOD.replace("2.0 * a[i]", "undefined_name"))
    library = default_library()
    on_disk = pipeline.check_source(path, (), library)
    assert any("undefined_name" in d.message for d in on_disk.diagnostics)
    replace_overlays([(str(path), GOOD)])
    assert pipeline.check_source(path, (), library).diagnostics == []
