"""Latency of `mcl lsp` under real typing: edits of code inside the kernel body, not of
comments, optionally with a CPU hog beside the server.

    python benchmarks/bench_lsp_typing.py [KERNEL ...] [--edits N] [--keys N] [--hog N]
                                          [--module LINES] [--out FILE] [--json FILE]

A real client (pygls) starts `python -m mcl lsp` (its default settings, `-D` values for
the sizes), and for each KERNEL (default: the eight that missed the goals under typing
before, the slowest to check and analyse: matmul hopper_v2..v4, convolution hopper_v1/v2,
spmv hopper_v7/v17/v20; the largest by code are the spmv versions from hopper_v6 on)
opens it, waits for its feedback (the worker is warm) and then types as a person does:

- `constant`: a number inside the kernel body changed and changed back (N edits);
- `statement`: a declaration inserted at the top of the kernel body and removed (N
  edits); each of these is a single didChange, waited out to its feedback;
- `identifier`: a new statement typed one key at a time at 10 keys per second (`--keys`
  keys, `--key-gap-ms`), with no wait between the keys: every intermediate text is sent,
  most of which do not parse.

Figures per kernel: the time from an edit's didChange to the first publishDiagnostics of
that version (diagnostics: median and 95th percentile over the constant and statement
edits) and to the publication with the feedback (median); the server's CPU time per edit
to its diagnostics; while typing, the intervals between publications (from the first key
to the last publication of the last text) and the latency of the last text's diagnostics.
Goals (docs/editor.md, "Latency"): diagnostics median <= 100 ms, p95 <= 250 ms, feedback
median <= 500 ms; typing at 10 keys per second publishes at least every 500 ms.

`--module LINES`: instead of the kernels one by one, one module of at least LINES lines
(the issue's 2,000-line file) made of the kernels given, in their order and again from
the first until it is long enough, each one's constants and functions renamed with a
suffix (`TILE_K_3`, `spmv_7`) so that they do not clash; the edits are made in the
body of its last function, as in a kernel's file. Goal: diagnostics median <= 250 ms.

`--hog N`: N processes that spin beside the server for the whole run (a machine busy with
other work); the load average is reported before and after, as the figures depend on it,
and so is the load during the run: the mean of the tasks running or waiting for a CPU
(`/proc/loadavg`'s fourth field, sampled every 0.25 s; the 1-minute average trails a run
of less than a few minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script
    sys.path.insert(0, str(REPO))
# The client side of bench_lsp.py: its publication recorder, CPU clock and percentile.
from benchmarks.bench_lsp import Recorder, cpu_seconds, p95  # noqa: E402

DEFAULT = ["matmul/hopper_v2", "matmul/hopper_v3", "matmul/hopper_v4",
           "convolution/hopper_v1", "convolution/hopper_v2", "spmv/hopper_v7",
           "spmv/hopper_v17", "spmv/hopper_v20"]
VALUES = {"n": 2048, "m": 2048, "p": 2048}
TYPED = "float bench_scale = 2.0;"  # the statement typed key by key
INSERTED = "float bench_t = 1.0;"  # the statement inserted at once
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d+)(?![\w.])")
# The names a kernel's file defines at the top level: its constants and functions.
TOP_LEVEL = re.compile(r"^(?:const \w+ (\w+)|\w+(?: \w+)? (\w+)\()", re.MULTILINE)


def renamed(text: str, suffix: str) -> str:
    """The text of a kernel's file with each name it defines at the top level renamed."""
    names = {a or b for a, b in TOP_LEVEL.findall(text)}
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: m.group(1) + suffix, text)


def module_of(paths: list[Path], lines: int) -> str:
    """One module of at least `lines` lines: the kernels' files in turn, renamed apart."""
    parts: list[str] = []
    while sum(part.count("\n") + 1 for part in parts) < lines:
        path = paths[len(parts) % len(paths)]
        parts.append(renamed(path.read_text().rstrip("\n"), f"_{len(parts)}"))
    return "\n\n".join(parts) + "\n"


def body_start(text: str) -> int:
    """The offset just past the `{` that opens the body of the last function (the
    kernel), and the end of that line."""
    header = max(m.start() for m in re.finditer(r"^\w+ void \w+\(", text, re.MULTILINE))
    brace = text.index("{", text.index(")", header))
    return text.index("\n", brace) + 1


def constant_edit(text: str) -> tuple[int, int, str]:
    """(start, end, replacement): the first decimal number in the kernel's body, changed."""
    start = body_start(text)
    m = NUMBER.search(text, start)
    if m is None:
        raise SystemExit("no decimal number in the kernel body to change")
    value = m.group(1)
    return m.start(1), m.end(1), "1.0" if value != "1.0" else "2.0"


@dataclass
class KernelFigures:
    kernel: str
    diagnostics_s: list[float] = field(default_factory=list)
    feedback_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    typing_intervals_s: list[float] = field(default_factory=list)
    typing_publications: int = 0
    typing_last_diagnostics_s: float = 0.0
    typing_last_feedback_s: float = 0.0


class Typist:
    """One open document and its versions."""

    def __init__(self, client: LanguageClient, recorder: Recorder, path: Path,
                 text: str) -> None:
        self.client, self.recorder = client, recorder
        self.uri = path.resolve().as_uri()
        self.version = 1
        self.text = text

    def send(self, text: str) -> float:
        self.version += 1
        self.client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=self.uri,
                                                              version=self.version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text)]))
        return time.perf_counter()

    async def edit(self, text: str, figures: KernelFigures) -> None:
        """One edit waited out to its feedback."""
        cpu_before = cpu_seconds(self.recorder.pid)
        sent = self.send(text)
        checked, cpu = await self.recorder.wait(self.uri, self.version, 1)
        figures.diagnostics_s.append(checked - sent)
        figures.cpu_s.append(cpu - cpu_before)
        figures.feedback_s.append((await self.recorder.wait(self.uri, self.version, 2))[0]
                                  - sent)

    async def type_statement(self, base: str, at: int, keys: int, gap: float,
                             figures: KernelFigures) -> None:
        """The first `keys` keys of TYPED at `at`, `gap` seconds apart, then the
        feedback of the last text (when it is the whole statement)."""
        typed = (" " + TYPED)[:keys]
        first = len(self.recorder.events)
        start = time.perf_counter()
        for n in range(1, keys + 1):
            sent = self.send(base[:at] + typed[:n] + base[at:])
            await asyncio.sleep(max(0.0, start + n * gap - time.perf_counter()))
        last_version = self.version
        finished, _ = await self.recorder.wait(self.uri, last_version, 1)
        figures.typing_last_diagnostics_s = finished - sent
        published = [t for t, u, _, _ in self.recorder.events[first:]
                     if u == self.uri and t <= finished]
        figures.typing_publications = len(published)
        figures.typing_intervals_s = [b - a for a, b in zip([start, *published],
                                                             published, strict=False)]
        # the last text parses only when the statement is complete
        if typed.endswith(";"):
            try:
                figures.typing_last_feedback_s = (
                    await self.recorder.wait(self.uri, last_version, 2, timeout=30))[0] - sent
            except TimeoutError:
                figures.typing_last_feedback_s = float("nan")


async def measure(files: list[tuple[str, Path, str]], edits: int, keys: int, gap: float,
                  settings: dict[str, Any]) -> list[KernelFigures]:
    """`files`: (name, path, text) of each document, opened with that text."""
    client = LanguageClient("bench-lsp-typing", "1")
    recorder = Recorder(client, settings)
    await client.start_io(sys.executable, "-m", "mcl", "lsp")
    recorder.pid = client._server.pid if client._server is not None else None
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(configuration=True)),
        root_uri=REPO.as_uri()))
    client.initialized(lsp.InitializedParams())
    results = []
    for name, path, text in files:
        figures = KernelFigures(name)
        typist = Typist(client, recorder, path, text)
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(
            uri=typist.uri, language_id="mcpl", version=1, text=typist.text)))
        await recorder.wait(typist.uri, 1, 2)  # the worker is warm
        text = typist.text
        start, end, number = constant_edit(text)
        changed = text[:start] + number + text[end:]
        at = body_start(text)
        inserted = text[:at] + "  " + INSERTED + "\n" + text[at:]
        for i in range(edits):
            await typist.edit(changed if i % 2 == 0 else text, figures)  # constant
        if edits % 2:
            await typist.edit(text, figures)
        for i in range(edits):
            await typist.edit(inserted if i % 2 == 0 else text, figures)  # statement
        if edits % 2:
            await typist.edit(text, figures)
        await typist.type_statement(text, at - 1, keys, gap, figures)
        client.text_document_did_close(lsp.DidCloseTextDocumentParams(
            lsp.TextDocumentIdentifier(typist.uri)))
        results.append(figures)
        print(summary(figures), flush=True)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return results


def summary(f: KernelFigures) -> str:
    ms = 1000
    intervals = f.typing_intervals_s or [float("nan")]
    return (f"{f.kernel:<26} {statistics.median(f.diagnostics_s) * ms:8.0f} "
            f"{p95(f.diagnostics_s) * ms:6.0f} {statistics.median(f.feedback_s) * ms:7.0f} "
            f"{statistics.median(f.cpu_s) * ms:8.0f} {f.typing_publications:5d} "
            f"{max(intervals) * ms:8.0f} {f.typing_last_diagnostics_s * ms:8.0f} "
            f"{f.typing_last_feedback_s * ms:8.0f}")


HEADER = (f"{'kernel':<26} {'diag med':>8} {'p95':>6} {'fb med':>7} {'diag cpu':>8} "
          f"{'pubs':>5} {'max gap':>8} {'last dg':>8} {'last fb':>8}")


def hogs(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(count)]


class LoadSampler:
    """The tasks running or waiting for a CPU, sampled on a thread while the run lasts
    (Linux only: elsewhere no samples)."""

    def __init__(self, period: float = 0.25) -> None:
        self.period = period
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                running = Path("/proc/loadavg").read_text().split()[3].split("/")[0]
            except (OSError, IndexError):
                return
            self.samples.append(int(running) - 1)  # not this thread, which is reading

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def mean(self) -> float:
        return statistics.mean(self.samples) if self.samples else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="*", help="e.g. matmul/hopper_v2")
    parser.add_argument("--edits", type=int, default=10, help="of each kind, per kernel")
    parser.add_argument("--keys", type=int, default=len(TYPED) + 1,
                        help="keys of the statement typed per kernel (default: all)")
    parser.add_argument("--key-gap-ms", type=float, default=100.0)
    parser.add_argument("--hog", type=int, default=0, help="spinning processes beside")
    parser.add_argument("--module", type=int, metavar="LINES",
                        help="one module of at least LINES lines made of the kernels")
    parser.add_argument("--out", type=Path, help="also write the report to FILE")
    parser.add_argument("--json", type=Path, help="the raw figures")
    args = parser.parse_args()
    names = args.kernels or DEFAULT
    paths = [REPO / "kernels" / (n if n.endswith(".mcpl") else n + ".mcpl") for n in names]
    files = [(str(p.relative_to(REPO)), p, p.read_text()) for p in paths]
    if args.module:
        text = module_of(paths, args.module)
        # in the kernels' folder, so that the workspace settings apply as to a kernel
        path = paths[0].parent / f"bench_module_{text.count(chr(10))}_lines.mcpl"
        files = [(f"module of {text.count(chr(10))} lines", path, text)]
    spinning = hogs(args.hog)
    load_before = os.getloadavg()
    try:
        with LoadSampler() as sampler:
            results = asyncio.run(measure(files, args.edits, args.keys,
                                          args.key_gap_ms / 1000, {"defines": VALUES}))
    finally:
        for p in spinning:
            p.kill()
    load_after = os.getloadavg()
    ms = 1000
    lines = [
        f"mcl lsp under typing: {args.edits} constant and {args.edits} statement edits per "
        f"kernel inside the kernel body, then {args.keys} keys at {args.key_gap_ms:.0f} ms; "
        f"-D {VALUES}; {args.hog} CPU hogs; {os.cpu_count()} CPUs; load average (1 min) "
        f"{load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end; tasks running "
        f"or waiting for a CPU during the run {sampler.mean():.1f} on average",
        "goals: diagnostics median <= 100 ms, p95 <= 250 ms; feedback median <= 500 ms; "
        "a publication at least every 500 ms while typing",
        "columns: ms from didChange; diag cpu: the server's CPU per edit to its diagnostics; "
        "pubs/max gap: publications while typing and the longest interval between them "
        "(from the first key); last dg/fb: the last text's diagnostics/feedback after the "
        "last key",
        HEADER, *(summary(f) for f in results)]
    if args.module:
        lines.insert(1, f"one module of {files[0][2].count(chr(10))} lines: {', '.join(names)} "
                        "in turn, renamed apart; the edits in its last function")
    every = [d for f in results for d in f.diagnostics_s]
    feedback = [d for f in results for d in f.feedback_s]
    gaps = [g for f in results for g in f.typing_intervals_s]
    count = len(results)
    lines.append(
        f"all kernels: diagnostics median {statistics.median(every) * ms:.0f} ms, p95 "
        f"{p95(every) * ms:.0f} ms; feedback median {statistics.median(feedback) * ms:.0f} "
        f"ms; longest interval between publications while typing {max(gaps) * ms:.0f} ms")
    lines.append(
        f"kernels meeting each goal: diagnostics median "
        f"{sum(statistics.median(f.diagnostics_s) <= 0.1 for f in results)}/{count}, p95 "
        f"{sum(p95(f.diagnostics_s) <= 0.25 for f in results)}/{count}, feedback median "
        f"{sum(statistics.median(f.feedback_s) <= 0.5 for f in results)}/{count}, "
        f"publications every 500 ms {sum(max(f.typing_intervals_s or [9]) <= 0.5 for f in results)}"
        f"/{count}")
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    if args.json:
        args.json.write_text(json.dumps({
            "hog": args.hog, "load": [load_before[0], load_after[0]],
            "runnable": sampler.mean(),
            "kernels": [asdict(f) for f in results]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
