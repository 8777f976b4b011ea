"""The unseen corpus's manifest (corpus.toml beside this file; docs/validation.md): its
kernels, their families, the half of the split each belongs to, their levels and sizes.
Read by the count harness (benchmarks/unseen_counts.py), the profile driver
(benchmarks/unseen_profile.py) and the tests."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parent
MANIFEST = FOLDER / "corpus.toml"
CALIBRATION, HELD_OUT = "calibration", "held-out"


@dataclass(frozen=True)
class Kernel:
    """One kernel of the corpus: a folder with LEVEL.mcpl files and a reference.py."""

    name: str
    family: str
    half: str
    levels: tuple[str, ...]
    race: bool  # a planted race: its output is wrong by design, never verified
    check: tuple[dict[str, int], ...]  # two sizes: brute force and CPU verification
    profile: dict[str, int]  # the size `mcl profile` runs it at on an H100

    @property
    def folder(self) -> Path:
        return FOLDER / self.name

    def path(self, level: str) -> Path:
        return self.folder / f"{level}.mcpl"


def _toml(text: str) -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    return tomllib.loads(text)


def load_corpus(manifest: Path = MANIFEST) -> list[Kernel]:
    """Every kernel of the manifest, in name order."""
    table = _toml(manifest.read_text(encoding="utf-8"))
    return [Kernel(name, entry["family"], entry["half"], tuple(entry["levels"]),
                   bool(entry.get("race", False)), tuple(dict(s) for s in entry["check"]),
                   dict(entry["profile"]))
            for name, entry in sorted(table.items())]


def split_halves(families: Mapping[str, str]) -> dict[str, str]:
    """The split rule: within each family the kernels, in name order, alternate between
    the held-out half (first, third, ...) and the calibration half (second, fourth, ...).
    It depends on names and families only, so it was fixed before any figure was seen,
    and every family of two or more kernels has a kernel in each half."""
    halves: dict[str, str] = {}
    for family in sorted(set(families.values())):
        members = sorted(name for name, f in families.items() if f == family)
        for position, name in enumerate(members):
            halves[name] = HELD_OUT if position % 2 == 0 else CALIBRATION
    return halves
