"""The description `mcl hwd detect --measure` wrote, written again by this checkout from
what was recorded: a device query (`--save-query`, tests/detect/data/) and the figures of
one round of `benchmarks/hwd_detect_measure.py`'s raw log (each line a figure with its
spread and how it was measured). So the detected description of a machine that is not
here can be profiled against (`validate_feedback.py --analyse --hwd-path DIR --target
NAME`) with the generator of this checkout.

    PYTHONPATH=. python benchmarks/hwd_detect_replay.py LOG --query QUERY.json -o DIR \\
        [--name measured] [--round N]

The figures are read back as the log prints them (2 decimals of GB/s, GFLOP/s, ns, µs):
a description of the recorded machine to within those digits, not a new measurement.
Warnings the benchmarks raised during the run (a peak kernel below the library's SGEMM)
are not in the log's figure lines and are left out; the generator's own (a figure 20% off
its nominal one) are written as `mcl hwd detect` writes them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.hwd_detect_measure import scale  # noqa: E402
from mcl.detect.measurements import Measurements  # noqa: E402
from mcl.detect.timing import Rate  # noqa: E402

ROUND = re.compile(r"^## round (\d+):")
FIGURE = re.compile(r"^(\w+)\s+([\d,.]+) (\S+)\s+median ([\d,.]+), worst ([\d,.]+) "
                    r"\((\d+) runs\) \| (.*)$")


def rounds(log: str) -> list[dict[str, Rate]]:
    """The figures of each round of a hwd_detect_measure.py log, in base units."""
    found: list[dict[str, Rate]] = []
    for line in log.splitlines():
        if ROUND.match(line):
            found.append({})
            continue
        figure = FIGURE.match(line)
        if figure is None or not found:
            continue
        key, value, unit, median, worst, runs, how = figure.groups()
        factor, expected = scale(key)
        if unit != expected:
            raise ValueError(f"{key}: unit {unit}, expected {expected}")
        found[-1][key] = Rate(*(float(x.replace(",", "")) * factor
                                for x in (value, median, worst)), int(runs), how)
    return found


def measurements(rates: dict[str, Rate]) -> Measurements:
    """What mcl.detect.measure returns for these figures: the compute roof the larger of
    the peak kernel and the library's SGEMM, the copy the memory roof."""
    from mcl.detect.measure import _measurements

    return _measurements(dict(rates), {}, [])


def main(argv: list[str] | None = None) -> int:
    from mcl.detect.generate import generate

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("log", type=Path, help="a hwd_detect_measure.py raw log")
    ap.add_argument("--query", type=Path, required=True, help="the device's recorded query")
    ap.add_argument("-o", "--output", type=Path, required=True, help="folder for the files")
    ap.add_argument("--name", default="measured")
    ap.add_argument("--round", type=int, default=0, help="1, 2, ... (default: the last)")
    args = ap.parse_args(argv)
    found = rounds(args.log.read_text())
    if not found:
        raise SystemExit(f"{args.log}: no round of figures")
    chosen = found[args.round - 1] if args.round else found[-1]
    generated = generate(json.loads(args.query.read_text()), args.name,
                         measurements(chosen))
    args.output.mkdir(parents=True, exist_ok=True)
    for file, text in generated.files().items():
        (args.output / file).write_text(text)
    print(f"{args.log.name}: round {args.round or len(found)} of {len(found)}, "
          f"{len(chosen)} figures -> {args.output / (args.name + '.hdl')} "
          f"(specializes {generated.parent})")
    for warning in generated.warnings:
        print(f"warning: {warning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
