"""The inputs and expected outputs of `mcl tune`, kept between runs
(mcl.tune.inputs_cache): made once, read back, made again when the file is damaged,
and only the newest few kept."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mcl.tune.inputs_cache import KEEP, cached_data, inputs_file


def test_made_once_then_read_back(tmp_path: Path) -> None:
    reference = tmp_path / "reference.py"
    reference.write_text("SIZES = {'n': 4}\n", encoding="utf-8")
    made = []

    def make() -> tuple[dict[str, int], dict[str, object], dict[str, object]]:
        made.append(1)
        return {"n": 4}, {"a": np.arange(4.0)}, {"b": np.ones(4)}

    file = inputs_file(tmp_path / ".k.tune-cache", reference, {"n": 4}, 0)
    first = cached_data(file, make)
    again = cached_data(file, make)
    assert made == [1] and file.is_file()
    assert again[0] == first[0] and np.array_equal(again[1]["a"], first[1]["a"])
    # Other sizes, another seed or another reference source: another file.
    assert inputs_file(tmp_path / ".k.tune-cache", reference, {"n": 8}, 0) != file
    assert inputs_file(tmp_path / ".k.tune-cache", reference, {"n": 4}, 1) != file
    reference.write_text("SIZES = {'n': 5}\n", encoding="utf-8")
    assert inputs_file(tmp_path / ".k.tune-cache", reference, {"n": 4}, 0) != file
    # A damaged file is made again.
    file.write_bytes(b"not a pickle")
    cached_data(file, make)
    assert made == [1, 1]


def test_keeps_the_newest(tmp_path: Path) -> None:
    folder = tmp_path / ".k.tune-cache"
    files = [folder / f"inputs-{i}.pickle" for i in range(KEEP + 2)]
    for age, file in enumerate(files):
        cached_data(file, lambda: ({}, {}, {}))
        os.utime(file, (1000 + age, 1000 + age))
    cached_data(folder / "inputs-new.pickle", lambda: ({}, {}, {}))
    kept = sorted(p.name for p in folder.glob("inputs-*.pickle"))
    assert len(kept) == KEEP and "inputs-new.pickle" in kept
    assert f"inputs-{KEEP + 1}.pickle" in kept  # the newest of the others
