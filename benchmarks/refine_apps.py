"""`mcl refine` from each application's perfect.mcpl at the paper's sizes: the search's
series, its gains and its wall time per application (docs/refinements.md, "mcl refine").

    python benchmarks/refine_apps.py --target hopper --out /tmp/refined        # model only
    python benchmarks/refine_apps.py --target hopper --measure --backend cuda \\
        --out /tmp/refined --json /tmp/refined/summary.json                      # on the GPU

For every module of benchmarks/apps (or `--apps a,b`), the first of its sizes on the
target's device type (`sizes("gpu")` for a GPU leaf, `sizes("cpu")` for a CPU one) is
given as `-D`, and `mcl refine kernels/APP/perfect.mcpl --target LEAF` runs as a
subprocess of its own, writing its series to OUT/APP and its JSON document beside it
(OUT/APP.json). The table gives each search's steps, estimated and measured gain from
the first version to the best and its wall time; exit status 1 when a search failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: import benchmarks from the checkout
    sys.path.insert(0, str(REPO))

from benchmarks.applications import app_modules  # noqa: E402

CPU_LEAVES = ("x86_avx512",)


def refine_app(app: str, sizes: dict[str, int], args: argparse.Namespace) -> dict[str, Any]:
    """One search as a subprocess: its JSON document, wall time and exit status."""
    out = Path(args.out) / app
    command = [sys.executable, "-m", "mcl", "refine", str(REPO / "kernels" / app / "perfect.mcpl"),
               "--target", args.target, "--steps", str(args.steps), "--beam", str(args.beam),
               "-o", str(out), "--force", "--format", "json"]
    command += [f"-D{k}={v}" for k, v in sizes.items()]
    if args.measure:
        command += ["--measure", "--backend", args.backend]
    if args.budget:
        command += ["--budget", str(args.budget)]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - began
    record: dict[str, Any] = {"app": app, "sizes": sizes, "wall_s": wall, "rc": done.returncode}
    if done.returncode == 0:
        record["document"] = json.loads(done.stdout)
        (Path(args.out) / f"{app}.json").write_text(done.stdout)
    else:
        record["error"] = done.stderr.strip().splitlines()[0] if done.stderr.strip() else ""
    return record


def summary_line(record: dict[str, Any]) -> str:
    if record["rc"] != 0:
        return f"{record['app']:<13} failed: {record['error']}  ({record['wall_s']:.1f} s)"
    doc = record["document"]
    series = [row for row in doc["series"] if row["estimated_seconds"] is not None
              or row["measured_seconds"] is not None]
    first, best = series[0], series[-1]
    return (f"{record['app']:<13} {len(series) - 1} steps  estimated "
            f"{_ratio(first['estimated_seconds'], best['estimated_seconds'])}  measured "
            f"{_ratio(first['measured_seconds'], best['measured_seconds'])}  "
            f"{doc['candidates']} candidates  {record['wall_s']:.1f} s  ({doc['stopped']})")


def _ratio(before: float | None, after: float | None) -> str:
    return f"{before / after:.2f}x" if before and after else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="hopper", help="the leaf (default hopper)")
    parser.add_argument("--apps", help="comma-separated applications (default: all)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--beam", type=int, default=2)
    parser.add_argument("--measure", action="store_true", help="time the candidates")
    parser.add_argument("--backend", default="opencl", help="with --measure: opencl or cuda")
    parser.add_argument("--out", required=True, help="folder for the series, one per app")
    parser.add_argument("--json", help="write every record here")
    parser.add_argument("--budget", type=float,
                        help="seconds per search (mcl refine --budget): a search past it "
                        "ends with the best found so far, instead of being cut off")
    args = parser.parse_args(argv)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    device_type = "cpu" if args.target in CPU_LEAVES else "gpu"
    names = [a.strip() for a in args.apps.split(",")] if args.apps else None
    records = []
    for module in app_modules(names):
        record = refine_app(module.NAME, module.sizes(device_type)[0], args)
        print(summary_line(record), flush=True)
        records.append(record)
        if args.json:  # after every search, so a run cut off by a time limit keeps the rest
            Path(args.json).write_text(json.dumps(records, indent=2))
    return 0 if all(r["rc"] == 0 for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
