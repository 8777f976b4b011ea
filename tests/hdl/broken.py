"""Helpers to load deliberately broken descriptions next to the bundled library."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcl.diagnostics import Diagnostic, MclError, Severity
from mcl.hdl.library import HwdLibrary, load_library

# A small valid child of perfect that the tests break one fact at a time.
MINI = """\
hardware_description mini;
specializes perfect;

parallelism hierarchy {
  memory_space main { default; }
  par_group threads {
    max_nr_units = unlimited;
    par_unit thread {
      memory_space reg { default; }
    }
  }
}

device mini {
  mem;
  perfect.ic;
  cores;
}

memory mem {
  space(main);
  capacity = 48 kB;
}

execution_group cores {
  nr_units = 4;
  execution_unit core {
    slots(thread, 1);
    load_store_unit lsu { slots(thread, 1); }
  }
}
"""


def write(folder: Path, text: str, name: str = "mini") -> Path:
    path = folder / f"{name}.hdl"
    path.write_text(text, encoding="utf-8")
    return path


def load(folder: Path) -> HwdLibrary:
    return load_library([folder], use_env=False)


def errors_of(folder: Path) -> list[Diagnostic]:
    """Load the library with `folder`; it must fail; return its errors."""
    with pytest.raises(MclError) as info:
        load(folder)
    errors = [d for d in info.value.diagnostics if d.severity == Severity.ERROR]
    assert errors
    return errors


def broken(folder: Path, old: str, new: str, base: str = MINI,
           name: str = "mini") -> list[Diagnostic]:
    """Replace `old` by `new` in `base` (which must contain it), load, return the errors."""
    assert old in base, old
    write(folder, base.replace(old, new, 1), name)
    return errors_of(folder)


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)
