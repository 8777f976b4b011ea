"""CPU time of what `mcl lsp` does after an edit, in one process: the check behind the
diagnostics (mcl.lsp.analysis.check_document) and the feedback worker's job
(mcl.lsp.worker._run), each as the server runs it (a warm library, the buffer as an
overlay, the definitions of the last parse kept where this mcl keeps them).

    python benchmarks/bench_lsp_cpu.py [KERNEL ...] [--repeat N] [--peer DIR] [--out FILE]

Two edits of each KERNEL (default: the kernels that missed a goal of docs/editor.md,
"Latency"), each made N times after one warm-up: a comment appended (what
benchmarks/bench_lsp.py types, so that the kernel stays the same program) and a change
inside the last definition on one line (the program changes: its analyses run again).
Figures: the median of `time.process_time` around each call, which a loaded machine
disturbs far less than the wall time that bench_lsp.py measures.

`--peer DIR`: the same measurement with the mcl of the checkout DIR (e.g. the main branch),
in its own process, alternated kernel by kernel with this checkout's, and the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT = ["matmul/hopper_v2", "matmul/hopper_v3", "convolution/hopper_v1",
           "convolution/hopper_v2", "gesummv/fermi_v1", "gesummv/hopper_v1",
           "gesummv/hopper_v2", "gesummv/hopper_v3"]
VALUES = (("n", 2048), ("m", 2048), ("p", 2048))


def edits(text: str, count: int) -> dict[str, list[str]]:
    """`count` texts of each kind of edit, all different from one another and from `text`."""
    last = text.rfind(";", 0, text.rfind("}"))
    return {"comment": [f"{text}// edit {k}\n" for k in range(count)],
            "code": [text[:last] + " " * (k + 1) + text[last:] for k in range(count)]}


def measure(path: Path, repeat: int) -> dict[str, float]:
    """Median CPU milliseconds of the check and of the feedback job, per kind of edit."""
    sys.setrecursionlimit(100_000)
    from mcl.lsp import worker
    from mcl.lsp.analysis import Libraries, check_document
    from mcl.lsp.config import Effective
    from mcl.mcpl import parse
    from mcl.source_files import set_overlay

    reuse = getattr(parse, "reuse_definitions", None)  # a peer may predate it
    if reuse is not None:
        reuse()
    libraries = Libraries()
    path = path.resolve()
    text = path.read_text(encoding="utf-8")

    def check(buffer: str) -> None:
        set_overlay(path, buffer)
        check_document(path, Effective(), libraries)

    def feedback(buffer: str) -> None:
        job = worker.FeedbackJob(str(path), ((str(path), buffer),), (), (), None, VALUES)
        result = worker.FeedbackResult()
        # as the worker runs a job (a peer may predate `run_job`)
        getattr(worker, "run_job", worker._run)(job, libraries, result)
        if result.failure or not result.messages:
            raise SystemExit(f"{path}: no feedback ({result.failure or result.diagnostics})")

    out: dict[str, float] = {}
    check(text)
    feedback(text)
    try:  # what the server and the worker load for good, out of the collector's way
        from mcl.lsp.heap import settle
    except ImportError:  # a peer that predates it
        pass
    else:
        settle()
    for kind, texts in edits(text, repeat).items():
        for name, step in (("check", check), ("feedback", feedback)):
            step(text)  # warm, and the state an edit starts from
            seconds = []
            for edited in texts:
                start = time.process_time()
                step(edited)
                seconds.append(time.process_time() - start)
                step(text)
            out[f"{name} {kind}"] = statistics.median(seconds) * 1000
    return out


def in_process(checkout: Path, path: Path, repeat: int) -> dict[str, float]:
    """`measure` with the mcl of `checkout`, in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, __file__, "--one", str(path), "--repeat",
                           str(repeat)], env=env, cwd=checkout, capture_output=True,
                          text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kernels", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--peer", type=Path, help="another checkout of mcl to compare with")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(measure(args.one, args.repeat)))
        return 0
    paths = args.kernels or [REPO / "kernels" / f"{k}.mcpl" for k in DEFAULT]
    lines = [f"CPU ms (time.process_time, median of {args.repeat}) per edit: the check "
             "behind the diagnostics and the feedback worker's job, -D "
             + " ".join(f"{k}={v}" for k, v in VALUES)]
    rows: list[tuple[str, dict[str, float], dict[str, Any]]] = []
    for path in paths:
        ours = in_process(REPO, path.resolve(), args.repeat)
        peer = in_process(args.peer, path.resolve(), args.repeat) if args.peer else {}
        name = str(path.resolve().relative_to(REPO))
        rows.append((name, ours, peer))
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
        cells = []
        for key, ms in ours.items():
            cell = f"{key} {ms:6.1f}"
            if key in peer:
                cell += f" (peer {peer[key]:6.1f}, ratio {ms / peer[key]:4.2f})"
            cells.append(cell)
        lines.append(f"{name:<34} load {load:5.2f}  " + "; ".join(cells))
        print(lines[-1], flush=True)
    if args.peer:
        for key in rows[0][1]:
            ratios = [ours[key] / peer[key] for _, ours, peer in rows]
            lines.append(f"{key}: median ratio to the peer {statistics.median(ratios):.2f} "
                         f"(range {min(ratios):.2f}-{max(ratios):.2f})")
            print(lines[-1])
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
