"""Compare two hardware descriptions figure by figure: every value and slot of the
device blocks the two share (by path), then the peaks mcl.hdl.peak derives. Used to hold
a description written by `mcl hwd detect` against a bundled one (hopper, x86_avx512).

    PYTHONPATH=. python benchmarks/hwd_compare.py hopper nvidia_h100_80gb_hbm3 --hwd-path DIR

Prints a Markdown table: figure, first, second, second/first.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def figures(hwd) -> dict[str, tuple[float, str]]:
    """path.property -> (value, unit) of every number a description states, plus its
    peaks, bandwidths and par_group counts."""
    from mcl.hdl.model import Quantity
    from mcl.hdl.peak import bandwidths, peak_flops

    found: dict[str, tuple[float, str]] = {}
    for group in hwd.par_groups():
        found[f"hierarchy {group.name} count"] = (group.count, "")
    for node in hwd.device.walk():
        for prop, value in node.values.items():
            if isinstance(value, Quantity):
                found[f"{node.path}.{prop}"] = (value.value, value.unit)
        for unit, count in (a for a in node.args.get("slots", []) if len(a) == 2):
            found[f"{node.path} slots({unit})"] = (count, "")
        for name, cost in (a for a in node.args.get("op", []) if len(a) == 2):
            cost = cost.value if isinstance(cost, Quantity) else cost
            found[f"{node.path} op {name} cost"] = (cost, "cycles")
    for dtype in ("float", "double"):
        peak = peak_flops(hwd, dtype)
        if peak:
            found[f"peak {dtype}"] = (peak, "flop/s")
    for b in bandwidths(hwd):
        found[f"bandwidth of {b.space}"] = (b.bytes_per_s, "B/s")
    return found


def _show(value: float, unit: str) -> str:
    from mcl.hdl.units import format_quantity

    if value == float("inf"):
        return "unlimited"
    if unit in ("B", "bit"):
        return format_quantity(value, unit)
    if unit == "bit/s":
        return f"{value / 8e9:,.1f} GB/s"
    if unit in ("flop/s", "B/s", "Hz"):
        return f"{value / 1e9:,.1f} G{unit}"
    return f"{value:g}"


def main(argv: list[str] | None = None) -> int:
    from mcl.hdl.library import library_with

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first")
    ap.add_argument("second")
    ap.add_argument("--hwd-path", action="append", default=[])
    args = ap.parse_args(argv)
    library = library_with(args.hwd_path)
    a, b = figures(library.get(args.first)), figures(library.get(args.second))
    print(f"| figure | {args.first} | {args.second} | ratio |")
    print("|---|---:|---:|---:|")
    for key in [k for k in a if k in b] + [k for k in a if k not in b] + [
            k for k in b if k not in a]:
        left = _show(*a[key]) if key in a else "-"
        right = _show(*b[key]) if key in b else "-"
        ratio = ""
        if key in a and key in b and a[key][0] not in (0, float("inf")):
            ratio = f"{b[key][0] / a[key][0]:.3g}"
        print(f"| {key} | {left} | {right} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
