#!/usr/bin/env python3
"""Golden snapshot of what mcl prints and writes for every shipped kernel, to compare a
tree before and after a change that must keep behaviour (a refactoring).

    python scripts/golden.py snapshot OUT [--tree DIR] [--jobs N] [--kernels GLOB ...]
    python scripts/golden.py compare BEFORE AFTER

`snapshot` runs, in the tree DIR (default: this checkout), for every kernels/*/*.mcpl:
`mcl check FILE --feedback -v` (text: stdout and stderr) and `--format json`; for every
kernels/* folder `mcl report DIR --format json`; for every version written at a leaf,
`mcl codegen FILE --target LEAF` (OpenCL, and CUDA where the leaf has a CUDA mapping),
keeping every generated file; for every perfect.mcpl, `mcl translate FILE --to LEAF` at
each leaf. Each result is one file under OUT, named after the command.
To snapshot an older revision: `git worktree add /tmp/base REV` and pass `--tree /tmp/base`
(the script itself need not exist in that revision). `--kernels GLOB` (relative to
kernels/, repeatable; default `*/*.mcpl`) takes a subset of the kernels; the reports are
always made.

Each tree runs with its own data and its own cache: mcl is started with the editable
install's finder left out (it maps `mcl._hwdescs` to the folder of the checkout it was
installed from, so an older tree would read today's descriptions and feedback functions),
and with a cache folder of the snapshot's own (`MCL_CACHE_DIR`).

`compare` lists the files that differ, are missing or are new, with a unified diff of the
first lines of each, and exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

LEAVES = ("fermi", "hopper", "xeon_phi", "x86_avx512")
# `python -m mcl` without the editable install's finder (see the module).
OWN_TREE = ("import runpy, sys; sys.meta_path[:] = [f for f in sys.meta_path "
            "if 'Editable' not in getattr(f, '__name__', '')]; "
            "sys.argv[0] = 'mcl'; runpy.run_module('mcl', run_name='__main__', alter_sys=True)")
CUDA_LEAVES = ("fermi", "hopper")


def _leaf_of(path: Path) -> str | None:
    stem = path.stem
    return next((leaf for leaf in LEAVES if stem.startswith(leaf + "_")), None)


def _jobs(tree: Path, patterns: list[str]) -> list[tuple[str, list[str], str | None]]:
    """(result name, mcl arguments, codegen output folder or None) for every command."""
    jobs: list[tuple[str, list[str], str | None]] = []
    kernels = sorted({p for pattern in patterns for p in (tree / "kernels").glob(pattern)})
    for path in kernels:
        rel = path.relative_to(tree).as_posix()
        base = rel.replace("/", "__")
        jobs.append((f"check-text/{base}.txt", ["check", rel, "--feedback", "-v"], None))
        jobs.append((f"check-json/{base}.json",
                     ["check", rel, "--feedback", "-v", "--format", "json"], None))
        if path.name == "perfect.mcpl":
            jobs += [(f"translate/{base}-{leaf}.txt", ["translate", rel, "--to", leaf], None)
                     for leaf in LEAVES]
        leaf = _leaf_of(path)
        if leaf is not None:
            jobs.append((f"codegen-opencl/{base}", ["codegen", rel, "--target", leaf], "dir"))
            if leaf in CUDA_LEAVES:
                jobs.append((f"codegen-cuda/{base}",
                             ["codegen", rel, "--target", leaf, "--lang", "cuda"], "dir"))
    for folder in sorted(p for p in (tree / "kernels").iterdir() if (p / "series.toml").exists()):
        rel = folder.relative_to(tree).as_posix()
        jobs.append((f"report-json/{folder.name}.json",
                     ["report", rel, "--format", "json"], None))
    return jobs


def _run_one(tree: Path, out: Path, cache: str, name: str, args: list[str],
             kind: str | None) -> None:
    env = dict(os.environ, PYTHONPATH=str(tree), COLUMNS="100", NO_COLOR="1",
               MCL_CACHE_DIR=cache)
    target = out / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        with tempfile.TemporaryDirectory() as tmp:
            proc = subprocess.run([sys.executable, "-c", OWN_TREE, *args, "-o", tmp, "--force"],
                                  cwd=tree, env=env, capture_output=True, text=True)
            target.mkdir(parents=True, exist_ok=True)
            (target / "_status.txt").write_text(
                f"exit {proc.returncode}\n--- stdout\n{proc.stdout.replace(tmp, 'OUT')}"
                f"--- stderr\n{proc.stderr.replace(tmp, 'OUT')}")
            for file in sorted(Path(tmp).rglob("*")):
                if file.is_file():
                    dest = target / file.relative_to(tmp).as_posix().replace("/", "__")
                    dest.write_bytes(file.read_bytes())
        return
    proc = subprocess.run([sys.executable, "-c", OWN_TREE, *args], cwd=tree, env=env,
                          capture_output=True, text=True)
    target.write_text(f"exit {proc.returncode}\n--- stdout\n{proc.stdout}"
                      f"--- stderr\n{proc.stderr}")


def snapshot(out: Path, tree: Path, jobs: int, patterns: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = _jobs(tree, patterns)
    done = 0
    with tempfile.TemporaryDirectory(prefix="golden-cache-") as cache, \
            ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_run_one, tree, out, cache, *job) for job in work]
        for future in futures:
            future.result()
            done += 1
            if done % 20 == 0 or done == len(work):
                print(f"golden: {done}/{len(work)} commands", file=sys.stderr)
    return 0


def _files(root: Path) -> dict[str, Path]:
    return {p.relative_to(root).as_posix(): p for p in root.rglob("*") if p.is_file()}


def compare(before: Path, after: Path, context_lines: int = 40) -> int:
    a, b = _files(before), _files(after)
    differ = 0
    for name in sorted(set(a) | set(b)):
        if name not in b:
            print(f"missing after: {name}")
            differ += 1
            continue
        if name not in a:
            print(f"new after: {name}")
            differ += 1
            continue
        old, new = a[name].read_text(errors="replace"), b[name].read_text(errors="replace")
        if old != new:
            differ += 1
            print(f"differs: {name}")
            diff = list(difflib.unified_diff(old.splitlines(), new.splitlines(),
                                             "before/" + name, "after/" + name, lineterm=""))
            for line in diff[:context_lines]:
                print("    " + line)
    print(f"golden: {len(set(a) | set(b))} files, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="write the snapshot of a tree to OUT")
    snap.add_argument("out", type=Path)
    snap.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    snap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    snap.add_argument("--kernels", action="append", metavar="GLOB",
                      help="kernels to take, relative to kernels/ (default: */*.mcpl)")
    cmp = sub.add_parser("compare", help="compare two snapshots")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "snapshot":
        return snapshot(args.out.resolve(), args.tree.resolve(), args.jobs,
                        args.kernels or ["*/*.mcpl"])
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
