"""Latency of `mcl lsp`: how soon after an edit the editor shows diagnostics, and how
soon the performance feedback follows.

    python benchmarks/bench_lsp.py [KERNEL ...] [--all] [--edits N] [--debounce-ms MS]
                                   [--out FILE]

A real client (pygls) starts `python -m mcl lsp`, opens each KERNEL in turn (default
kernels/matmul/fermi_v1.mcpl; `--all`: every kernels/*/*.mcpl), lets the feedback worker
warm up, and then makes N edits, one at a time (a comment that grows and shrinks, so the
kernel stays valid and every edit is analysed in full). For each edit it records the time
from sending `didChange` to the first `publishDiagnostics` of that version (the check's)
and to the second (with the feedback). The server runs with its default debounce unless
`--debounce-ms` is given: the figures are what a user feels after a keystroke. It also
records the server process's CPU time from each edit to its diagnostics (/proc, Linux):
on a machine shared with other jobs the wall time stretches, the CPU time much less.

Peers measured in the same run, in this process: `check_file` (what the check stage
does) and `check_file` with feedback (what the worker does), on the same file; the
latencies are reported as ratios to them too. Goals (docs/editor.md, "Latency"):
diagnostics <= 100 ms median and <= 250 ms at the 95th percentile, feedback <= 500 ms
median.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO / "kernels" / "matmul" / "fermi_v1.mcpl"
VALUES = {"n": 2048, "m": 2048, "p": 2048}


def cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) the process has used so far, from /proc (Linux; 0 where
    there is none): 10 ms steps."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class Recorder:
    """The publishDiagnostics notifications, with their arrival times and the server's
    CPU time then."""

    def __init__(self, client: LanguageClient, settings: dict[str, Any]) -> None:
        self.events: list[tuple[float, str, int | None, float]] = []
        self.changed = asyncio.Event()
        self.pid: int | None = None

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            self.events.append((time.perf_counter(), params.uri, params.version,
                                cpu_seconds(self.pid)))
            self.changed.set()

        @client.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [settings for _ in params.items]

    async def wait(self, uri: str, version: int, nth: int, timeout: float = 120
                   ) -> tuple[float, float]:
        """Arrival of the `nth` (1: the check's, 2: with the feedback) publication of
        `version` of `uri`, and the server's CPU time then."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            seen = [(t, cpu) for t, u, v, cpu in self.events if u == uri and v == version]
            if len(seen) >= nth:
                return seen[nth - 1]
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except asyncio.TimeoutError:
                pass
        raise TimeoutError(f"no publication {nth} for version {version} of {uri}")


async def measure(paths: list[Path], edits: int, settings: dict[str, Any]
                  ) -> list[tuple[list[float], list[float], list[float]]]:
    """Per kernel: seconds to the diagnostics, to the feedback, and the server's CPU
    seconds from the edit to the diagnostics."""
    client = LanguageClient("bench-lsp", "1")
    recorder = Recorder(client, settings)
    await client.start_io(sys.executable, "-m", "mcl", "lsp")
    recorder.pid = client._server.pid if client._server is not None else None
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(configuration=True)),
        root_uri=REPO.as_uri()))
    client.initialized(lsp.InitializedParams())
    results = []
    for path in paths:
        uri = path.resolve().as_uri()
        text = path.read_text()
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="mcpl", version=1, text=text)))
        await recorder.wait(uri, 1, 2)  # the worker is warm
        check, feedback, cpu = [], [], []
        for version in range(2, edits + 2):
            comment = "// edit " + "x" * (version % 7)
            cpu_before = cpu_seconds(recorder.pid)
            sent = time.perf_counter()
            client.text_document_did_change(lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(
                    text + comment + "\n")]))
            checked, cpu_checked = await recorder.wait(uri, version, 1)
            check.append(checked - sent)
            cpu.append(cpu_checked - cpu_before)
            feedback.append((await recorder.wait(uri, version, 2))[0] - sent)
        client.text_document_did_close(lsp.DidCloseTextDocumentParams(
            lsp.TextDocumentIdentifier(uri)))
        results.append((check, feedback, cpu))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return results


def peers(path: Path, repeat: int) -> tuple[float, float]:
    """Median seconds of `check_file` without and with feedback, in this process."""
    from mcl.commands.check import check_file
    from mcl.feedback.stage import FeedbackOptions
    from mcl.hdl.library import load_library

    library = load_library(partial=True)
    options = FeedbackOptions(defines=tuple(f"{k}={v}" for k, v in VALUES.items()))
    check_file(path, [], library, None, options)  # warm, as the worker is
    plain, full = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        check_file(path, [], library)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        check_file(path, [], library, None, options)
        full.append(time.perf_counter() - t)
    return statistics.median(plain), statistics.median(full)


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, -(-len(values) * 95 // 100) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernels", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every kernels/*/*.mcpl")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--debounce-ms", type=int, help="the server's default if not given")
    parser.add_argument("--out", type=Path, help="also write the report to FILE")
    args = parser.parse_args()
    paths = sorted(REPO.glob("kernels/*/*.mcpl")) if args.all else args.kernels or [DEFAULT]
    settings: dict[str, Any] = {"defines": VALUES}
    if args.debounce_ms is not None:
        settings["debounceMs"] = args.debounce_ms
    results = asyncio.run(measure([p.resolve() for p in paths], args.edits, settings))
    ms = 1000
    debounce = "server default" if args.debounce_ms is None else f"{args.debounce_ms} ms"
    lines = [f"mcl lsp latency after an edit ({args.edits} edits per kernel, debounce "
             f"{debounce}, -D {VALUES}); goals: diagnostics median <= 100 ms, p95 <= 250 "
             "ms; feedback median <= 500 ms",
             f"{'kernel':<40} {'diag med':>8} {'p95':>6} {'peer':>6} {'ratio':>5} "
             f"{'fb med':>7} {'peer':>6} {'ratio':>5} {'diag cpu':>8}"]
    raw = []
    for path, (check, feedback, cpu) in zip(paths, results, strict=True):
        plain, full = peers(path, min(args.edits, 5))
        name = str(path.resolve().relative_to(REPO))
        lines.append(
            f"{name:<40} {statistics.median(check) * ms:8.1f} {p95(check) * ms:6.1f} "
            f"{plain * ms:6.1f} {statistics.median(check) / plain:5.2f} "
            f"{statistics.median(feedback) * ms:7.1f} {full * ms:6.1f} "
            f"{statistics.median(feedback) / full:5.2f} {statistics.median(cpu) * ms:8.0f}")
        raw.append(f"{name} diagnostics ms: " + " ".join(f"{c * ms:.1f}" for c in check))
        raw.append(f"{name} feedback ms: " + " ".join(f"{f * ms:.1f}" for f in feedback))
    every = [c for check, _, _ in results for c in check]
    lines.append(f"all kernels: diagnostics median {statistics.median(every) * ms:.1f} ms, "
                 f"p95 {p95(every) * ms:.1f} ms; feedback median "
                 f"{statistics.median([f for _, fb, _ in results for f in fb]) * ms:.1f} ms;"
                 " server CPU "
                 f"per edit to the diagnostics, median "
                 f"{statistics.median([c for _, _, cs in results for c in cs]) * ms:.0f} ms "
                 "(10 ms steps: the server's own work, which the wall time approaches on an idle "
                 "machine)")
    count = len(results)
    lines.append(
        "kernels meeting each goal: diagnostics median <= 100 ms "
        f"{sum(statistics.median(c) <= 0.1 for c, _, _ in results)}/{count}, p95 <= 250 ms "
        f"{sum(p95(c) <= 0.25 for c, _, _ in results)}/{count}; feedback median <= 500 ms "
        f"{sum(statistics.median(f) <= 0.5 for _, f, _ in results)}/{count}")
    return print_report(lines + raw, args.out)



def print_report(lines: list[str], out: Path | None) -> int:
    """Print the report's lines and write them to `out` too where given; exit status 0."""
    report = "\n".join(lines)
    print(report)
    if out:
        out.write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
