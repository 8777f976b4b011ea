"""Units of HDL quantities and their normalisation (hdl.md §1, mcl/hdl/model.py docstring).

Written units are a basic unit (`B`, `bit`, `bits`, `cycle`, `cycles`, `s`, `Hz`) with an
optional prefix `k`, `M`, `G`, optionally divided by a second basic unit (`GB/s`, `bit/s`).

Prefixes: a *storage size* on its own (`48 kB`, `1536 MB`, `80 GB`) uses binary prefixes
(k = 1024), as hardware documentation does for memories and caches (Fermi's 48 kB of
shared memory are 49152 bytes). Everything else — rates (`8 GB/s`), frequencies
(`3696 MHz`), times — uses decimal prefixes (k = 1000).

Normalised units (what `Quantity.unit` holds after loading):
  size -> "B" (or "bit" for `width`), rate -> "bit/s", cycles -> "cycles", time -> "s",
  frequency -> "Hz", plain numbers -> "".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BASIC_UNITS = ("B", "bit", "bits", "cycle", "cycles", "s", "Hz")
PREFIXES = {"k": 1, "M": 2, "G": 3}

# basic unit -> (dimension, factor to the dimension's base: bits, cycles, seconds, Hz)
_BASIC = {
    "B": ("size", 8),
    "bit": ("size", 1),
    "bits": ("size", 1),
    "cycle": ("cycles", 1),
    "cycles": ("cycles", 1),
    "s": ("time", 1),
    "Hz": ("frequency", 1),
}

# The dimension each valued property accepts, and its normalised unit. `None`: a plain count.
PROPERTY_DIMENSION: dict[str, tuple[str, ...] | None] = {
    "nr_units": None,
    "max_nr_units": None,
    "nr_banks": None,
    "capacity": ("size",),
    "cache_line_size": ("size",),
    "width": ("size",),
    "bandwidth": ("rate",),
    "latency": ("cycles", "time"),
    "atomic_interval": ("cycles", "time"),
    "partial_write_bandwidth": ("rate",),
    "latency_knee": None,  # an exponent, no unit
    "clock_frequency": ("frequency",),
    "addressable": None,  # a boolean, no unit
}

_UNIT_RE = re.compile(r"^([kMG]?)(B|bits|bit|cycles|cycle|s|Hz)$")


@dataclass(frozen=True)
class UnitInfo:
    """A parsed unit: multiply the written number by `factor` to get `unit`."""

    dimension: str  # size, rate, cycles, time, frequency, cycles-rate
    factor: float | int
    unit: str  # normalised unit name


class UnitError(ValueError):
    """An unknown unit; `.suggestions` are close valid spellings."""

    def __init__(self, unit: str, suggestions: list[str]):
        super().__init__(unit)
        self.unit = unit
        self.suggestions = suggestions


def _basic(text: str) -> tuple[str, str, str]:
    match = _UNIT_RE.match(text)
    if not match:
        raise UnitError(text, _suggest(text))
    prefix, basic = match.groups()
    return prefix, basic, _BASIC[basic][0]


def parse_unit(text: str, prop: str | None = None) -> UnitInfo:
    """Parse a written unit (`kB`, `GB/s`, `MHz`, `cycles`) into its normalised form.
    `prop` is the property it belongs to (only `width` normalises sizes to bits)."""
    num, _, den = text.partition("/")
    p1, b1, d1 = _basic(num)
    if den:
        p2, b2, d2 = _basic(den)
        if d2 != "time":
            raise UnitError(text, ["B/s", "bit/s"])
        # Rates: decimal prefixes; numerator in bits (or cycles -> Hz).
        factor = _BASIC[b1][1] * 1000 ** PREFIXES.get(p1, 0) / 1000 ** PREFIXES.get(p2, 0)
        if d1 == "size":
            return UnitInfo("rate", _tidy(factor), "bit/s")
        if d1 == "cycles":
            return UnitInfo("frequency", _tidy(factor), "Hz")
        raise UnitError(text, ["B/s", "bit/s"])
    if d1 == "size":
        bits = _BASIC[b1][1] * 1024 ** PREFIXES.get(p1, 0)
        if prop == "width":
            return UnitInfo("size", bits, "bit")
        return UnitInfo("size", _tidy(bits / 8), "B")
    factor = 1000 ** PREFIXES.get(p1, 0)
    return UnitInfo(d1, factor, {"cycles": "cycles", "time": "s", "frequency": "Hz"}[d1])


def _tidy(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x


def _suggest(text: str) -> list[str]:
    import difflib

    spelled = [p + b for p in ("", *PREFIXES) for b in BASIC_UNITS]
    spelled += [p + b + "/s" for p in ("", *PREFIXES) for b in ("B", "bit")]
    close = difflib.get_close_matches(text, spelled, n=3, cutoff=0.5)
    if not close:
        close = [u for u in spelled if u.lower() == text.lower()]
    return close


def default_unit(prop: str) -> str:
    """The normalised unit of a valued property stated without one (`latency = 20;`)."""
    dims = PROPERTY_DIMENSION.get(prop)
    if not dims:
        return ""
    return {"size": "bit" if prop == "width" else "B", "rate": "bit/s", "cycles": "cycles",
            "time": "s", "frequency": "Hz"}[dims[0]]


def format_quantity(value: float | int, unit: str) -> str:
    """A normalised quantity for people: 49152 B -> '48 kB', 1.4e12 bit/s -> '177.4 GB/s',
    3.696e9 Hz -> '3.696 GHz' (the inverse of the prefixes above)."""
    if value == float("inf"):
        return f"unlimited {unit}".strip()
    if unit == "B" or unit == "bit":
        step, scaled = 1024, value
        names = [unit, "k" + unit, "M" + unit, "G" + unit]
    elif unit == "bit/s":
        step, scaled = 1000, value / 8
        names = ["B/s", "kB/s", "MB/s", "GB/s"]
    elif unit in ("Hz", "s"):
        step, scaled = 1000, value
        names = [unit, "k" + unit, "M" + unit, "G" + unit]
    else:
        return f"{value:g} {unit}".strip()
    i = 0
    while i < len(names) - 1 and abs(scaled) >= step:
        scaled /= step
        i += 1
    text = f"{int(scaled)}" if float(scaled).is_integer() else f"{scaled:.4g}"
    return f"{text} {names[i]}"
