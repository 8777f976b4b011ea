#!/usr/bin/env python3
"""Golden snapshot of what mcl prints and writes for every shipped kernel, to compare a
tree before and after a change that must keep behaviour (a refactoring).

    python scripts/golden.py snapshot OUT [--tree DIR] [--jobs N] [--kernels GLOB ...]
    python scripts/golden.py compare BEFORE AFTER
    python scripts/golden.py classify BEFORE AFTER

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

`classify` sorts the differences by what changed, for a reader who must say of each whether
it was meant: of each `check --format json`, the message codes whose findings differ (and
in which fields: message, values, hint, severity, shown_by_default), appear or go; of each
`check -v` text, the codes on the lines that still differ once the lines wrapped at the
terminal's width are joined; of code generation, the generated files that differ apart
from the example host program (main.cpp); of each report, the fields of its rows.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import os
import re
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


def _stdout(path: Path) -> str:
    return path.read_text().split("--- stdout\n", 1)[-1].split("--- stderr\n", 1)[0]


def _findings(document: object) -> dict[str, list[dict]]:
    """The findings of a `check --format json` document, by message code."""
    found: dict[str, list[dict]] = collections.defaultdict(list)
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "code" in item and "message" in item:
                found[item["code"]].append(item)
            stack += list(item.values())
        elif isinstance(item, list):
            stack += item
    return found


def _json_changes(before: Path, after: Path) -> list[str]:
    """`-code`, `+code` or `~code(fields)` for each code whose findings differ."""
    try:
        old, new = (_findings(json.loads(_stdout(p))) for p in (before, after))
    except ValueError:
        return ["(not JSON)"]
    changes = []
    for code in sorted(set(old) | set(new)):
        if code not in new or code not in old:
            changes.append(("-" if code not in new else "+") + code)
        elif json.dumps(old[code], sort_keys=True) != json.dumps(new[code], sort_keys=True):
            fields = {k for x, y in zip(old[code], new[code], strict=False) for k in set(x) | set(y)
                      if x.get(k) != y.get(k)}
            fields |= {"count"} if len(old[code]) != len(new[code]) else set()
            changes.append(f"~{code}({','.join(sorted(fields))})")
    return changes or ["(outside the findings)"]


def _unwrapped(text: str) -> list[str]:
    """The lines of a text report with the lines wrapped at the terminal's width joined (a
    continuation is indented 4 more than what it continues) and runs of spaces inside a
    line read as one."""
    out: list[str] = []
    first = 0
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        if out and line.strip() and indent == first + 4:
            out[-1] += " " + line.strip()
        else:
            out.append(line)
            first = indent
    return [re.sub(r"(?<=\S)\s+", " ", line) for line in out]


def _text_changes(before: Path, after: Path) -> list[str]:
    """The codes (`[code]` at a line's end) on the lines that differ once unwrapped."""
    codes = set()
    for line in difflib.unified_diff(_unwrapped(before.read_text()),
                                     _unwrapped(after.read_text()), lineterm="", n=0):
        if not line.startswith(("---", "+++", "@@")):
            found = re.search(r"\[([a-z0-9-]+)\]\s*$", line)
            codes.add(found.group(1) if found else "(figure, hint or header line)")
    return sorted(codes)


def _fields(old: object, new: object, path: str, out: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if k not in old or k not in new:
                out.append(f"{path}.{k}({'+' if k not in old else '-'})")
            else:
                _fields(old[k], new[k], f"{path}.{k}", out)
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append(f"{path}[{len(old)} -> {len(new)}]")
        for x, y in zip(old, new, strict=False):
            _fields(x, y, path + "[]", out)
    elif old != new:
        out.append(path)


def classify(before: Path, after: Path) -> int:
    a, b = _files(before), _files(after)
    changed = sorted(n for n in set(a) & set(b) if a[n].read_bytes() != b[n].read_bytes())
    kinds = collections.Counter(n.split("/", 1)[0] for n in changed)
    print(f"classify: {len(changed)} files differ of {len(set(a) & set(b))} in both "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()))}); "
          f"only before: {len(set(a) - set(b))}, only after: {len(set(b) - set(a))}")
    for title, prefix, changes in (("check --format json: the codes whose findings differ",
                                    "check-json/", _json_changes),
                                   ("check -v text, unwrapped: the codes on changed lines",
                                    "check-text/", _text_changes)):
        rows = {n: changes(a[n], b[n]) for n in changed if n.startswith(prefix)}
        total = collections.Counter(c if c.startswith("(") else c.split("(")[0]
                                    for v in rows.values() for c in v)
        print(f"{title}: {sum(1 for v in rows.values() if v)} files")
        for code, count in total.most_common():
            print(f"  {count:4d} {code}")
        for name, codes in rows.items():
            if codes:
                print(f"    {name.removeprefix(prefix)}: {' '.join(codes)}")
    generated = [n for n in changed if n.startswith("codegen-")]
    print(f"codegen: {len(generated)} files differ; other than the example host program "
          "(main.cpp) and the command's output (_status.txt):")
    for name in generated:
        if not name.endswith(("/main.cpp", "/_status.txt")):
            print(f"    {name}")
    for name in (n for n in changed if n.startswith("report-json/")):
        out: list[str] = []
        _fields(json.loads(_stdout(a[name])), json.loads(_stdout(b[name])), "", out)
        common = collections.Counter(out).most_common(8)
        print(f"  {name}: {', '.join(f'{k} x{v}' for k, v in common)}")
    return 0


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
    cls = sub.add_parser("classify", help="sort the differences of two snapshots by kind")
    cls.add_argument("before", type=Path)
    cls.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "snapshot":
        return snapshot(args.out.resolve(), args.tree.resolve(), args.jobs,
                        args.kernels or ["*/*.mcpl"])
    if args.command == "classify":
        return classify(args.before, args.after)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
