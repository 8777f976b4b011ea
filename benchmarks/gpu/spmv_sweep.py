"""A sweep of spmv versions and their constants through CUDA beside torch's cuSPARSE, in
one process on one GPU, every output verified (docs/performance-log.md, spmv round 7):

    PYTHONPATH=. python benchmarks/gpu/spmv_sweep.py --reps 3 --inputs powerlaw,uniform \
        hopper_v6 hopper_v12 hopper_v12:PER=13,NR_BLOCKS=2112 --json OUT.json

A spec is NAME[:CONSTANT=N,...], NAME a file of kernels/spmv. Each repetition times
torch's CSR mv (--rounds calls, CUDA events, benchmarks/harness.time_cuda) and then each
spec (--rounds runs of its generated CUDA, the kernels' own event times, as
benchmarks/applications.py takes them), so every ratio is within one process and one
card; --profile prints torch.profiler's kernel table of torch's mv (which cuSPARSE
kernels run), --registers each generated kernel's registers per thread (how many blocks an
SM holds). Sizes: the GPU size of benchmarks/apps/spmv.py."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks import harness  # noqa: E402
from benchmarks.apps import spmv as app  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("specs", nargs="*")
    p.add_argument("--inputs", default="powerlaw,uniform")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--opencl", action="store_true")
    p.add_argument("--json")
    p.add_argument("--profile", action="store_true", help="torch.profiler of torch.mv")
    p.add_argument("--notorch", action="store_true")
    p.add_argument("--registers", action="store_true",
                   help="print each kernel's registers per thread (CUDA) after its first run")
    a = p.parse_args()

    from mcl.backends.cuda.runner import select_cuda_device
    from mcl.hdl.library import default_library
    from mcl.mcpl.loader import load_program
    from mcl.report.measure import prepare_session
    from mcl.verify import load_reference, verify

    library = default_library()
    cuda = select_cuda_device(None)
    print("CUDA device:", cuda.name, flush=True)
    defines = app.sizes("gpu")[0]
    reference = load_reference(REPO / "kernels/spmv/reference.py")
    work = app.work(defines)
    results = []
    sessions: dict[tuple[str, str], object] = {}
    queue = None
    if a.opencl:
        queue = harness.open_device("nvidia").queue
    for kind in a.inputs.split(","):
        inputs = None if kind == "uniform" else kind
        sizes, args, expected = harness.prepared_inputs(reference, defines, 0, inputs)
        if a.profile:
            import torch
            from torch.profiler import ProfilerActivity, profile
            run = app._torch_csr(dict(args))
            run()
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                for _ in range(5):
                    run()
                torch.cuda.synchronize()
            print(f"--- torch.profiler {kind}")
            print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=15,
                                            max_name_column_width=110), flush=True)
        for rep in range(a.reps):
            if not a.notorch:
                run = app._torch_csr(dict(args))
                times = harness.time_cuda(run, a.rounds)
                b, m = min(times), sorted(times)[len(times) // 2]
                print(f"{kind} torch rep{rep}: best {b*1e6:.1f} us median {m*1e6:.1f} "
                      f"{work['flop']/b*1e-9:.1f} GFLOP/s", flush=True)
                results.append({"inputs": kind, "name": "torch", "rep": rep, "times": times})
            for spec in a.specs:
                name, _, rest = spec.partition(":")
                over = {k: int(v) for k, v in (x.split("=") for x in rest.split(",") if x)}
                for backend in (("cuda", "opencl") if a.opencl else ("cuda",)):
                    key = (spec, backend)
                    t0 = time.perf_counter()
                    if key not in sessions:
                        program = load_program(REPO / f"kernels/spmv/{name}.mcpl", (), library)
                        dev = cuda if backend == "cuda" else queue.device
                        session, problem = prepare_session(program, "spmv", "hopper", library,
                                                           dev, over or None, queue=queue,
                                                           backend=backend)
                        if session is None:
                            print(f"{kind} {name} {over} {backend}: {problem}", flush=True)
                            sessions[key] = None
                            continue
                        sessions[key] = session
                    session = sessions[key]
                    if session is None:
                        continue
                    try:
                        r = session.run("spmv", dict(args), a.rounds)
                    except Exception as exc:  # noqa: BLE001
                        print(f"{kind} {name} {over} {backend}: FAILED {exc}", flush=True)
                        continue
                    times = list(r.kernel_times_s)
                    if a.registers and rep == 0 and backend == "cuda":
                        regs = {n: getattr(k, "registers", None)
                                for (_, n), k in getattr(session, "kernels", {}).items()}
                        print(f"{kind} {name} {over} registers: {regs}", flush=True)
                    checks = verify(reference, expected, r.outputs, sizes)
                    ok = all(c.ok for c in checks)
                    b, m = min(times), sorted(times)[len(times) // 2]
                    print(f"{kind} {name} {over} {backend} rep{rep}: best {b*1e6:.1f} us "
                          f"median {m*1e6:.1f} {work['flop']/b*1e-9:.1f} GFLOP/s verified={ok} "
                          f"({time.perf_counter()-t0:.1f}s)", flush=True)
                    results.append({"inputs": kind, "name": name, "constants": over,
                                    "backend": backend, "rep": rep, "times": times,
                                    "verified": ok})
    if a.json:
        Path(a.json).write_text(json.dumps({"device": cuda.name, "defines": defines,
                                            "rounds": a.rounds, "results": results},
                                           indent=1))


if __name__ == "__main__":
    main()
