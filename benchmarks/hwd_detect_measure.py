"""`mcl hwd detect --measure` as a user runs it, round by round, and the acceptance checks
of its figures against the peers it measures in the same run (docs/hdl.md, "Bring your
own machine"): the compute roof at least the vendor library's SGEMM (numpy/OpenBLAS on a
CPU, cuBLAS on an NVIDIA GPU) and, on a CPU, within 25% of it; the copy bandwidth within
10% of numpy's / PyTorch's copy; the whole command within 60 s.

    python benchmarks/hwd_detect_measure.py [--device SPEC] [--rounds 3] [--out FILE]

Each round is one fresh `python -m mcl hwd detect --measure --format json` (its wall time
includes starting Python and compiling the kernels). The raw log -- every figure with its
spread, the progress line, the warnings, the last round's description -- goes to stdout
and to --out (default benchmarks/results/DATE-detect-HOST.txt).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCALES = {"latency": (1e-9, "ns"), "launch": (1e-6, "us"), "flops": (1e9, "GFLOP/s"),
          "bytes": (1e9, "GB/s")}


def scale(key: str) -> tuple[float, str]:
    """The factor and unit a measurement's line is written in (hwd_detect_replay.py reads
    the lines back)."""
    if key.startswith("latency"):
        return SCALES["latency"]
    if key.startswith("launch"):
        return SCALES["launch"]
    return SCALES["flops"] if key in ("fma", "gemm") else SCALES["bytes"]


def one_round(device: str | None, folder: Path) -> tuple[float, dict[str, Any], str, str]:
    command = [sys.executable, "-m", "mcl", "hwd", "detect", "--measure", "--format", "json",
               "-o", str(folder), "--name", "measured", "--force"]
    if device:
        command += ["--device", device]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return seconds, json.loads(done.stdout), done.stderr, (folder / "measured.hdl").read_text()


def checks(seconds: float, document: dict[str, Any], cpu: bool) -> list[str]:
    m = document["measurements"]
    lines = [f"wall {seconds:.1f} s (limit 60): {'ok' if seconds < 60 else 'OVER'}"]
    roof = document["peak_flops"]["float"]
    if "gemm" in m:
        ratio = roof / m["gemm"]["value"]
        good = ratio >= 1 and (not cpu or ratio <= 1.25)
        lines.append(f"compute roof {roof / 1e9:,.1f} GFLOP/s / library SGEMM "
                     f"{m['gemm']['value'] / 1e9:,.1f} = {ratio:.2f} (kernel alone "
                     f"{m['fma']['value'] / m['gemm']['value']:.2f}): "
                     f"{'ok' if good else 'OUTSIDE [1, 1.25]' if cpu else 'BELOW 1'}")
    if "copy" in m and "library_copy" in m:
        ratio = m["copy"]["value"] / m["library_copy"]["value"]
        lines.append(f"copy {m['copy']['value'] / 1e9:,.1f} GB/s / library copy "
                     f"{m['library_copy']['value'] / 1e9:,.1f} = {ratio:.2f}: "
                     f"{'ok' if abs(ratio - 1) <= 0.10 else 'OUTSIDE 10%'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", help="as mcl hwd detect --device (default: mcl run's)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, help="the raw log (default: benchmarks/results/"
                    "DATE-detect-HOST.txt)")
    args = ap.parse_args(argv)
    out = args.out or (REPO / "benchmarks/results" /
                       f"{datetime.date.today()}-detect-{platform.node() or 'host'}.txt")
    log: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        log.append(line)

    say(f"# {' '.join(['hwd_detect_measure.py', *(argv if argv is not None else sys.argv[1:])])}")
    say(f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, host "
        f"{platform.node()}, {os.cpu_count()} CPUs, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    hdl = ""
    with tempfile.TemporaryDirectory() as folder:
        for r in range(args.rounds):
            seconds, document, stderr, hdl = one_round(args.device, Path(folder))
            cpu = document["parent"] == "cpu"
            say(f"\n## round {r + 1}: {document['name']} specializes {document['parent']}")
            say(stderr.strip())
            for key, rate in document["measurements"].items():
                factor, unit = scale(key)
                say(f"{key:15} {rate['value'] / factor:12,.2f} {unit:8} median "
                    f"{rate['median'] / factor:,.2f}, worst {rate['worst'] / factor:,.2f} "
                    f"({rate['runs']} runs) | {rate['how']}")
            for line in checks(seconds, document, cpu):
                say("check: " + line)
    say("\n## the description of the last round\n")
    say(hdl.rstrip())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(log) + "\n")
    print(f"\nwrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
