"""`mcl check` as a whole process against `python -c "import sympy"` (docs/feedback.md,
"Speed": the editor runs the check on every save, so start-up counts as much as the
analyses).

    python benchmarks/bench_check_startup.py [--rounds N] [--cache warm,cold,off]
                                             [--repo DIR ...] [ARG ...]

Each round runs, in a fresh process each and interleaved, `python -c "import sympy"` and
`python -m mcl check ARG...` (default: kernels/matmul/perfect.mcpl --level fermi -D
n=2048 -D m=2048 -D p=2048) from every `--repo` (default: this checkout; give another
checkout, e.g. main, to compare the two in the same rounds) in every cache state:

  warm: a cache folder of the run's own (MCL_CACHE_DIR), filled before the first round;
  cold: an empty cache folder for every run (the first check after an edit of every
        file, or after an upgrade of mcl);
  off:  MCL_CACHE_DIR= (no cache at all);
  edited: the warm cache folder, and the kernel (the first .mcpl/.mcl argument) a copy
        whose text no run has seen (a comment with the round appended): the check after
        an edit, as an editor or a build runs it, where only the edited file is new.

Each check is `python -c` running mcl's `__main__` as `-m mcl` does, with the editable
install's finder left out: it maps mcl's bundled data to the folder of the checkout it
was installed from, so an older checkout given with `--repo` would read today's
descriptions and feedback functions (scripts/golden.py does the same).

Reports the median wall-clock and CPU time (user + system of the child, from
getrusage) of each, and each one's ratio to the SymPy import of the same rounds. On a
shared machine the CPU figure is the steadier one; the load average is printed.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_ARGS = ["kernels/matmul/perfect.mcpl", "--level", "fermi", "-D", "n=2048",
                "-D", "m=2048", "-D", "p=2048"]
CACHE_STATES = ("warm", "cold", "off", "edited")
# `python -m mcl` without the editable install's finder (see the module).
OWN_TREE = ("import runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path "
            "if 'Editable' not in getattr(f, '__name__', '')]; "
            "sys.argv[0] = 'mcl'; runpy.run_module('mcl', run_name='__main__', alter_sys=True)")


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one run of `command` (its output is discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def edited(check: list[str], repo: Path, folder: Path, n: int) -> list[str]:
    """`check` with its kernel replaced by a copy in `folder` with a comment appended that
    no earlier run has seen (its imports still found beside the original: `-I`)."""
    at = next(k for k, arg in enumerate(check) if arg.endswith((".mcpl", ".mcl")))
    original = (repo / check[at]).resolve()
    folder.mkdir(parents=True)
    copy = folder / original.name
    copy.write_text(original.read_text() + f"\n// edited in round {n}\n")
    return [*check[:at], str(copy), "-I", str(original.parent), *check[at + 1:]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--cache", default="warm,cold",
                        help="comma-separated cache states: warm, cold, off, edited")
    parser.add_argument("--repo", action="append", type=Path,
                        help="a checkout to run `python -m mcl` from (repeatable)")
    parser.add_argument("args", nargs="*", default=DEFAULT_ARGS)
    options = parser.parse_args(argv)
    repos = options.repo or [REPO]
    states = [s for s in options.cache.split(",") if s]
    if unknown := set(states) - set(CACHE_STATES):
        parser.error(f"unknown cache state(s): {', '.join(sorted(unknown))}")
    check = [sys.executable, "-c", OWN_TREE, "check", *options.args]
    peer = [sys.executable, "-c", "import sympy"]
    runs: dict[str, list[tuple[float, float]]] = {"import sympy": []}
    with tempfile.TemporaryDirectory(prefix="mcl-startup-") as scratch:
        warm = {repo: str(Path(scratch) / f"warm-{i}") for i, repo in enumerate(repos)}
        for repo in repos:
            if "warm" in states or "edited" in states:
                timed(check, repo, {**os.environ, "MCL_CACHE_DIR": warm[repo]})
        for n in range(options.rounds):
            runs["import sympy"].append(timed(peer, REPO, dict(os.environ)))
            for i, repo in enumerate(repos):
                for state in states:
                    folder = {"warm": warm[repo], "off": "", "edited": warm[repo],
                              "cold": str(Path(scratch) / f"cold-{i}-{n}")}[state]
                    command = check
                    if state == "edited":
                        command = edited(check, repo, Path(scratch) / f"edited-{i}-{n}", n)
                    runs.setdefault(f"{repo} {state}", []).append(
                        timed(command, repo, {**os.environ, "MCL_CACHE_DIR": folder}))
    print(f"mcl check {' '.join(options.args)}: medians of {options.rounds} rounds")
    peer_wall = statistics.median(w for w, _ in runs["import sympy"])
    peer_cpu = statistics.median(c for _, c in runs["import sympy"])
    for name, measured in runs.items():
        wall = statistics.median(w for w, _ in measured)
        cpu = statistics.median(c for _, c in measured)
        print(f"  {name:60s} wall {wall:6.3f} s ({wall / peer_wall:4.2f}x)  "
              f"cpu {cpu:6.3f} s ({cpu / peer_cpu:4.2f}x)")
    print(f"  load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")


if __name__ == "__main__":
    main()
