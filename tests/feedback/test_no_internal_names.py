"""No internal name in any message, and no `-D` request for a name that was given or that
the user did not write (docs/feedback.md, "Values"): `mcl check --level L -v` on every
shipped kernel at its own level and at every level below it, once without sizes and
once with its reference's sizes given."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import KERNELS

from mcl.cli import main
from mcl.hdl.library import default_library
from mcl.verify import load_reference

# The analyses' own symbols: loop counters (`_t_t`), opaque values (`_data`, `_r`); a
# name of the user's never starts with an underscore in the shipped kernels.
INTERNAL = re.compile(r"(?<![A-Za-z0-9_.])_[A-Za-z][A-Za-z0-9_]*")
REQUEST = re.compile(r"-D ([^\s=]+)=")
EXCERPT = re.compile(r"^\s*\d+ \| |^\s*\| ")  # source lines quoted under a message


def _levels(level: str) -> list[str]:
    """`level` and every level below it in the description library."""
    library = default_library()
    out = [level]
    for name in library.descriptions:
        parent = library.get(name).parent
        while parent is not None and parent != level:
            parent = library.get(parent).parent
        if parent == level:
            out.append(name)
    return out


def _cases() -> list[tuple[Path, str]]:
    out = []
    for path in sorted(KERNELS.glob("*/*.mcpl")):
        level = path.stem.split("_v")[0]
        if level in default_library().descriptions:
            out += [(path, lv) for lv in _levels(level)]
    return out


def _user_names(path: Path) -> set[str]:
    """The names a request may ask for: every identifier of the source (parameters,
    constants, loop variables), and `iters_`/`max_iters_` of each."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text()))
    return words | {f"{p}{w}" for w in words for p in ("iters_", "max_iters_")}


def _check(capsys: pytest.CaptureFixture[str], path: Path, level: str,
           sizes: dict[str, int]) -> str:
    defines = [x for k, v in sizes.items() for x in ("-D", f"{k}={v}")]
    main(["check", str(path), "--level", level, "-v", *defines])
    out = capsys.readouterr()
    return out.out + out.err


@pytest.mark.slow
@pytest.mark.parametrize(("path", "level"), _cases(),
                         ids=lambda x: x.parent.name + "/" + x.stem if isinstance(x, Path)
                         else x)
def test_no_internal_name_and_no_request_for_a_given_name(
        capsys: pytest.CaptureFixture[str], path: Path, level: str) -> None:
    sizes = dict(load_reference(path.parent / "reference.py").module.SIZES)
    names = _user_names(path)
    for given in ({}, sizes):
        text = _check(capsys, path, level, given)
        assert "feedback for" in text, text[-2000:]
        lines = [line for line in text.splitlines() if not EXCERPT.match(line)]
        internal = sorted({m for line in lines for m in INTERNAL.findall(line)})
        assert not internal, (given, internal)
        # the evaluator's marker for a value read from an array is no name either
        assert "(data)" not in text, given
        asked = set(REQUEST.findall(text))
        assert not asked & set(given), (given, asked & set(given))
        assert asked <= names, (given, asked - names)
