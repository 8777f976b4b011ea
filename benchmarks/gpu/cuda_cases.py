"""Every shipped version at every leaf with a CUDA mapping, run through the CUDA backend
(`mcl run --backend cuda` in one process) and verified against its numpy reference:

    PYTHONPATH=. python benchmarks/gpu/cuda_cases.py --sizes reference|prime|paper \\
        [--only SUBSTRING] [--planted] [--json FILE]

Sizes: `reference` the reference's small defaults; `prime` every data size (10 and more)
replaced by the next prime above ten times it (no tile divides it, and every kernel runs
many blocks); `paper` the sizes of Table IV (benchmarks/apps; 4096³ for matmul), for the
applications that have them. `--planted` adds the two planted defects of
benchmarks/gpu/planted (an out-of-bounds write, a shared-memory race), which run but are
not verified.

Each case prints `### case ID` before it runs and `### result ID STATUS` after, so that
benchmarks/gpu/sanitize.py can attribute compute-sanitizer's reports (printed on the same
stream) to cases. Exit status 1 when any output is wrong or a case fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PLANTED = REPO / "benchmarks" / "gpu" / "planted"


def next_prime(n: int) -> int:
    def prime(k: int) -> bool:
        return k > 1 and all(k % d for d in range(2, int(k**0.5) + 1))

    while not prime(n):
        n += 1
    return n


def case_sizes(kind: str, folder: Path, reference: Any) -> dict[str, int] | None:
    """The sizes of a case of `kind`, or None where the kind has none for this kernel."""
    if kind == "reference":
        return dict(reference.sizes)
    if kind == "prime":
        return {k: (next_prime(10 * v + 1) if v >= 10 else v) for k, v in reference.sizes.items()}
    from benchmarks.applications import app_modules

    module = next((m for m in app_modules() if m.NAME == folder.name), None)
    return dict(module.sizes("gpu")[0]) if module is not None else None


def cases(kind: str, only: str) -> list[dict[str, Any]]:
    from mcl.verify import load_reference
    from tests.codegen.support import versions_at_leaves

    out = []
    for path, leaf in versions_at_leaves("cuda"):
        name = f"{path.parent.name}/{path.stem}-{leaf}"
        if only and only not in name:
            continue
        reference = load_reference(path.parent / "reference.py")
        sizes = case_sizes(kind, path.parent, reference)
        if sizes is not None:
            out.append({"id": name, "file": str(path), "leaf": leaf, "sizes": sizes})
    return out


def run_case(case: dict[str, Any], device: Any) -> dict[str, Any]:
    from benchmarks.harness import prepared_inputs
    from mcl import pipeline
    from mcl.backends.cuda.runner import CudaSession
    from mcl.commands.codegen import load_checked
    from mcl.hdl.library import default_library
    from mcl.verify import load_reference, verify

    library = default_library()
    path = Path(case["file"])
    reference = load_reference(path.parent / "reference.py")
    # the inputs and the reference's outputs are kept for the next version of the kernel
    sizes, args, expected = prepared_inputs(reference, case["sizes"], 0, None)
    program = load_checked(path, [], library)
    generated = pipeline.generate(program, case["leaf"], library, language="cuda")
    result = CudaSession(generated, device).run(reference.function, dict(args))
    checks = verify(reference, expected, result.outputs, sizes)
    return {"status": "ok" if all(c.ok for c in checks) else "WRONG",
            "kernel_s": result.kernel_time_s,
            "worst": max((c.ratio for c in checks), default=0.0)}


def run_planted(path: Path, device: Any) -> dict[str, Any]:
    import numpy as np

    from mcl import pipeline
    from mcl.backends.cuda.runner import CudaSession
    from mcl.hdl.library import default_library
    from mcl.mcpl.loader import load_program

    library = default_library()
    program = pipeline.checked(load_program(path, library=library), library)
    generated = pipeline.generate(program, "hopper", library, language="cuda")
    n = 64
    CudaSession(generated, device).run(path.stem, {"n": n, "a": np.zeros(n, np.float32)})
    return {"status": "ran"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", choices=("reference", "prime", "paper"), default="reference")
    parser.add_argument("--only", default="", help="substring of the case ids to run")
    parser.add_argument("--planted", action="store_true", help="also run the planted defects")
    parser.add_argument("--device", default=None, help="CUDA device number or name")
    parser.add_argument("--json", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)

    from mcl.backends.cuda.runner import select_cuda_device
    from mcl.diagnostics import MclError

    device = select_cuda_device(args.device)
    print(f"device: {device.name} ({device.platform.name}, {device.arch})", flush=True)
    selected: list[tuple[dict[str, Any], Any]] = [
        (c, lambda c=c: run_case(c, device)) for c in cases(args.sizes, args.only)
    ]
    if args.planted:
        selected += [({"id": f"planted/{p.stem}", "file": str(p), "leaf": "hopper",
                       "sizes": {"n": 64}}, lambda p=p: run_planted(p, device))
                     for p in sorted(PLANTED.glob("*.mcpl"))]
    results = []
    for case, runner in selected:
        print(f"### case {case['id']} {case['sizes']}", flush=True)
        start = time.monotonic()
        try:
            outcome = runner()
        except MclError as exc:
            outcome = {"status": "error", "problem": exc.diagnostics[0].message.splitlines()[0]}
        except Exception as exc:  # noqa: BLE001 - reported per case, the others still run
            outcome = {"status": "crash", "problem": f"{type(exc).__name__}: {exc}",
                       "traceback": traceback.format_exc()}
        outcome["seconds"] = time.monotonic() - start
        results.append({**case, **outcome})
        print(f"### result {case['id']} {outcome['status']} "
              f"{outcome.get('problem', '')}".rstrip(), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    bad = [r for r in results if r["status"] not in ("ok", "ran")]
    print(f"{len(results) - len(bad)} of {len(results)} cases ok", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
