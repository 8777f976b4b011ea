"""Every shipped kernel at the paper's problem sizes on one OpenCL device, verified.

    PYTHONPATH=. python benchmarks/paper_sizes.py                       # PoCL CPU device
    PYTHONPATH=. python benchmarks/paper_sizes.py --device nvidia \\
        --json benchmarks/results/DATE-h100-paper-sizes.json

For each application in kernels/, the versions that run on this device type — those of
its series.toml on the device type's branch (as benchmarks/applications.py picks them), else
perfect.mcpl on the default leaf of the device type (`--leaf`) and every other version
written at or above that leaf — are translated to their leaf, generated as OpenCL and
run `--rounds` times through pyopencl (benchmarks/harness.py: kernel time from OpenCL
profiling, transfers excluded); every output is verified against the numpy reference
within its forward error bound (docs/kernels.md), and the worst error/bound is shown.
Rates are the reference's: GFLOP/s (`flops`) or GB/s (`bytes_moved`, 10⁹ B/s). For
kernels whose reference knows the bytes they must move, `% copy` is that traffic per
second as a share of the device's copy bandwidth, measured in the same run (an OpenCL
buffer-to-buffer copy, read + write counted): the peer of a bandwidth-bound kernel.

Sizes: an application with a module in benchmarks/apps takes its sizes from there (the
paper's Table II and section 7, the same ones as Table IV); the others, and the power-law
spmv, are in PAPER_SIZES. `--small` runs every case at the
reference's small default sizes instead (a quick check of the script itself). Exit status
1 when any output is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: import mcl and benchmarks from the checkout
    sys.path.insert(0, str(REPO))

from benchmarks.harness import (  # noqa: E402
    RunResult,
    copy_bandwidth,
    open_device,
    run_version,
)

# (application, sizes, input generator) per case, for the kernels that have no module in
# benchmarks/apps (whose `sizes()` are the one record of an application's paper sizes),
# and the power-law banded spmv of the size of the paper's Mip1 (66,463 rows, 10,352,819
# non-zeros), an input kind benchmarks/apps cannot ask for. Sizes of the same order as the
# paper's section 7 where the repository does not record the paper's own.
PAPER_SIZES: list[tuple[str, dict[str, int], str | None]] = [
    ("vectoradd", {"n": 1 << 26}, None),
    ("transpose", {"n": 8192, "m": 8192}, None),
    ("reduction", {"n": 1 << 24, "chunk": 4096}, None),
    ("spmv", {"nrows": 66_463, "ncols": 66_463, "nnz": 10_352_819}, "powerlaw"),
]
DEFAULT_LEAF = {"gpu": "hopper", "cpu": "x86_avx512"}


def cases(device_type: str, small: bool) -> list[tuple[str, dict[str, int], str | None]]:
    """Every application: the sizes of its benchmarks/apps module when it has one."""
    from benchmarks.applications import app_modules

    found = list(PAPER_SIZES)
    for module in app_modules():
        found += [(module.NAME, sizes, None) for sizes in module.sizes(device_type)]
    if small:
        found = [(app, {}, kind) for app, _, kind in found]
    return found


def versions(app: str, device_type: str, leaf: str, library: Any) -> list[tuple[Path, str]]:
    """(kernel file, leaf) of each version of `app` that runs on this device type."""
    from benchmarks.applications import branch_versions
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import can_reach
    from mcl.report.series import load_series

    folder = REPO / "kernels" / app
    if (folder / "series.toml").is_file():
        series = load_series(folder, library)
        return [(v.path, v.leaf_for(device_type))
                for v in branch_versions(series, device_type, library, every=False)]
    found = [(folder / "perfect.mcpl", leaf)]
    for path in sorted(folder.glob("*.mcpl")):
        if path.name == "perfect.mcpl":
            continue
        functions = load_program(path, (), library).main.functions
        if functions and can_reach(library, functions[-1].hwd, leaf):
            found.append((path, leaf))
    return found


def main(argv: list[str] | None = None) -> int:
    from mcl.commands.options import add_device_argument
    from mcl.hdl.library import default_library

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_device_argument(parser)
    parser.add_argument("--rounds", type=int, default=3, help="runs per version (default 3)")
    parser.add_argument("--leaf", help="leaf for folders without a series (default: hopper "
                        "on a GPU, x86_avx512 on a CPU)")
    parser.add_argument("--only", help="comma-separated applications (default: all)")
    parser.add_argument("--small", action="store_true",
                        help="the references' small default sizes instead of the paper's")
    parser.add_argument("--tuned", action="store_true",
                        help="use each kernel's .tuned.toml constants for this device")
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = parser.parse_args(argv)

    opened = open_device(args.device)
    kind = opened.kind if opened.kind in DEFAULT_LEAF else "cpu"
    leaf = args.leaf or DEFAULT_LEAF[kind]
    library = default_library()
    copy = copy_bandwidth(opened.queue)
    print(f"device: {opened.name} ({opened.kind}); copy bandwidth {copy:.1f} GB/s "
          f"(buffer copy, read + write); best of {args.rounds} rounds", flush=True)
    only = set(args.only.split(",")) if args.only else None
    rows: list[dict[str, Any]] = []
    header = (f"{'application':<22}{'version':<16}{'leaf':<12}{'ms best':>12}{'median':>12}"
              f"{'rate':>12}{'':<8}{'% copy':>7}  {'err/bound':>9}  check")
    print(header, flush=True)
    for app, sizes, inputs in cases(kind, args.small):
        if only and app not in only:
            continue
        from mcl.verify import load_reference

        reference = load_reference(REPO / "kernels" / app / "reference.py")
        label = app + (f" ({inputs})" if inputs else "")
        start = time.perf_counter()
        for path, version_leaf in versions(app, kind, leaf, library):
            result = run_version(path, version_leaf, opened.queue, sizes, args.rounds,
                                 tuned=args.tuned, inputs=inputs)
            traffic = reference.traffic(result.sizes) if result.sizes else None
            share = traffic / result.best / 1e9 / copy * 100 \
                if traffic and result.best else None
            rows.append(_row(label, path, result, share, copy))
            print(_line(label, path.stem, result, share), flush=True)
        sizes_text = " ".join(f"{k}={v}" for k, v in (result.sizes or sizes).items())
        print(f"{'':<22}({sizes_text}; {time.perf_counter() - start:.0f} s with inputs "
              "and reference)", flush=True)
    wrong = [r for r in rows if r["verified"] is False]
    for r in wrong:
        print(f"WRONG: {r['application']} {r['version']} on {r['leaf']}")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "device": opened.name, "kind": opened.kind, "rounds": args.rounds,
            "copy_bandwidth_gb_s": copy, "small": args.small, "rows": rows}, indent=2),
            encoding="utf-8")
    return 1 if wrong else 0


def _row(label: str, path: Path, result: RunResult, share: float | None,
         copy: float) -> dict[str, Any]:
    return {"application": label, "version": path.stem, **asdict(result),
            "best_s": result.best, "median_s": result.median, "rate": result.rate,
            "unit": result.unit, "percent_of_copy": share, "copy_bandwidth_gb_s": copy}


def _line(label: str, version: str, result: RunResult, share: float | None) -> str:
    start = f"{label:<22}{version:<16}{result.leaf:<12}"
    if result.problem:
        return f"{start}  ({result.problem})"
    best, median = result.best or 0.0, result.median or 0.0
    rate = f"{result.rate:>12.1f}{' ' + result.unit:<8}" if result.rate else f"{'':>20}"
    percent = f"{share:>6.0f}%" if share is not None else f"{'':>7}"
    check = {True: "ok", False: "WRONG", None: ""}[result.verified]
    ratio = f"{result.ratio:>9.2g}" if result.ratio is not None else f"{'':>9}"
    return (f"{start}{best * 1e3:>12.3f}{median * 1e3:>12.3f}{rate}{percent}  {ratio}  "
            f"{check}")


if __name__ == "__main__":
    sys.exit(main())
