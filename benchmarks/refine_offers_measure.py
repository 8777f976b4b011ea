"""Every refinement `mcl apply --list` offers on the shipped kernels at one leaf, measured:
the original and the next version run on the device at the paper's sizes, and the
model's estimated gain set beside the measured one.

    PYTHONPATH=. python benchmarks/refine_offers_measure.py --leaf hopper --backend cuda \\
        --json benchmarks/results/DATE-h100-refine-offers.json
    PYTHONPATH=. python benchmarks/refine_offers_measure.py --small   # PoCL, small sizes

For each application (the sizes of benchmarks/paper_sizes.py, the first case of each), every
kernel file of its folder written at or above the leaf is opened at the leaf with the time
model at those sizes (mcl.refine.offers.open_kernel), and every offer of `list_offers` —
made, checked, verified in the interpreter at the reference's small sizes and weighed, as
`mcl apply --list` lists it — is written out beside a copy of the folder's reference and
run with the original on the same inputs (benchmarks/harness.py `run_version`: kernel time
from the runtime's events, transfers excluded, outputs verified against the numpy
reference). The measured gain is the original's median time over the next version's.

Printed at the end, the three figures the refinements are judged by: the share of offers
whose estimated gain has the measured one's direction, the share within 25% of it, and
every offer that measures more than 3% slower than its input.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: import mcl and benchmarks from the checkout
    sys.path.insert(0, str(REPO))

SLOWER = 0.97  # a next version below this measured gain is slower than its input
CLOSE = 0.25  # the estimated gain within this share of the measured one


def _measured_gain(before: Any, after: Any) -> float | None:
    if before.median is None or after.median is None or after.median <= 0:
        return None
    return float(before.median / after.median)


def _direction_right(estimated: float, measured: float) -> bool:
    """An estimate of 1.00x (the model sees no change) is right where the measured gain
    is within 3% of 1; otherwise both sides of 1 agree."""
    if abs(estimated - 1.0) < 0.005:
        return abs(measured - 1.0) <= 1.0 - SLOWER
    return (estimated > 1.0) == (measured > 1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaf", default="hopper")
    parser.add_argument("--backend", default="opencl", choices=["opencl", "cuda"])
    parser.add_argument("--device", default=None, help="OpenCL device (mcl devices)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--apps", nargs="*", default=None, help="applications (default all)")
    parser.add_argument("--json", default=None, help="write the rows here")
    parser.add_argument("--small", action="store_true",
                        help="the references' small sizes (a check of the script itself)")
    args = parser.parse_args(argv)

    from benchmarks.harness import open_device, run_version
    from benchmarks.paper_sizes import cases, versions
    from mcl.backends import register_count
    from mcl.feedback.compiler_registers import use_counter
    from mcl.hdl.library import default_library
    from mcl.refine.offers import list_offers, open_kernel

    # the model's occupancy from NVRTC's count, as `mcl apply --list` weighs the offers
    # (without it the register estimate gave matmul hopper_v1 64 warps per SM, not 16,
    # and the run measured other offers than the command lists)
    use_counter(register_count)
    library = default_library()
    opened = open_device(args.device)
    cuda_device = None
    if args.backend == "cuda":
        from mcl.backends.cuda.runner import select_cuda_device

        cuda_device = select_cuda_device(None)
    # the device the versions run on: the CUDA one with --backend cuda, else OpenCL's
    device_name = cuda_device.name if cuda_device is not None else opened.name
    device_type = "gpu" if args.leaf != "x86_avx512" else "cpu"
    rows: list[dict[str, Any]] = []
    seen_apps: set[str] = set()
    started = time.perf_counter()
    for app, sizes, kind in cases(device_type, small=args.small):
        if app in seen_apps or (args.apps and app not in args.apps):
            continue
        seen_apps.add(app)
        for path, leaf in versions(app, device_type, args.leaf, library):
            if leaf != args.leaf:
                continue
            print(f"{app} {path.name}: listing offers at {leaf}", file=sys.stderr, flush=True)
            try:
                kernel = open_kernel(path, leaf, library, values=sizes)
                offers, _ = list_offers(kernel)
            except Exception as exc:  # one kernel's failure is a row, not the end of the run
                rows.append({"app": app, "kernel": path.name, "problem": str(exc)})
                continue
            if not offers:
                continue
            before = run_version(path, leaf, opened.queue, sizes, args.rounds, inputs=kind,
                                 backend=args.backend, cuda_device=cuda_device)
            for offer in offers:
                with tempfile.TemporaryDirectory() as tmp:
                    for helper in path.parent.glob("*.py"):
                        shutil.copy(helper, tmp)
                    next_path = Path(tmp) / path.name
                    next_path.write_text(offer.text, encoding="utf-8")
                    after = run_version(next_path, leaf, opened.queue, sizes, args.rounds,
                                        inputs=kind, backend=args.backend,
                                        cuda_device=cuda_device)
                measured = _measured_gain(before, after)
                row = {"app": app, "kernel": path.name, "offer": offer.proposal.invocation,
                       "sizes": sizes, "estimated_gain": offer.gain,
                       "seconds_model": [offer.seconds_before, offer.seconds_after],
                       "seconds_measured": [before.median, after.median],
                       "measured_gain": measured,
                       "verified": [before.verified, after.verified],
                       "problem": before.problem or after.problem}
                rows.append(row)
                print(f"  {offer.proposal.invocation:<44} estimated "
                      f"{offer.gain or 0:.2f}x measured "
                      f"{measured if measured is not None else float('nan'):.2f}x "
                      f"verified {after.verified}", flush=True)
    judged = [r for r in rows if r.get("estimated_gain") and r.get("measured_gain")]
    right = [r for r in judged if _direction_right(r["estimated_gain"], r["measured_gain"])]
    close = [r for r in judged
             if abs(r["estimated_gain"] / r["measured_gain"] - 1.0) <= CLOSE]
    slower = [r for r in judged if r["measured_gain"] < SLOWER]
    wall = time.perf_counter() - started
    print(f"# {len(judged)} offers measured in {wall:.0f} s at {args.leaf} "
          f"({args.backend}, {device_name})")
    if judged:
        print(f"# direction right: {len(right)}/{len(judged)}; within {CLOSE:.0%}: "
              f"{len(close)}/{len(judged)}; slower than the input by more than "
              f"{1 - SLOWER:.0%}: {len(slower)}")
    for r in slower:
        print(f"#   slower: {r['app']} {r['kernel']} {r['offer']}: {r['measured_gain']:.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"leaf": args.leaf, "backend": args.backend,
                                               "device": device_name, "rows": rows},
                                              indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
