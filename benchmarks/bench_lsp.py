"""Latency of `mcl lsp` (issue 16): how soon after an edit the editor shows diagnostics,
and how soon the performance feedback follows.

    python benchmarks/bench_lsp.py [KERNEL] [--edits N] [--out FILE]

A real client (pygls) starts `python -m mcl lsp`, opens KERNEL (default
kernels/matmul/fermi_v1.mcpl, matmul at level fermi) with `mcl.debounceMs = 0` (so the
figures are what follows the debounce), lets the feedback worker warm up, and then makes N
edits, one at a time (a comment that grows and shrinks, so the kernel stays valid and
every edit is analysed in full). For each edit it records the time from sending
`didChange` to the `publishDiagnostics` of the check and to the one with the feedback.

Peers measured in the same run, in this process: `check_file` (what the check stage
does) and `check_file` with feedback (what the worker does), on the same file; the
latencies are reported as ratios to them too. Goals (issue 16): diagnostics < 100 ms,
feedback < 500 ms.
"""

from __future__ import annotations

import argparse
import asyncio
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


class Recorder:
    """The publishDiagnostics notifications, with their arrival times."""

    def __init__(self, client: LanguageClient) -> None:
        self.events: list[tuple[float, int | None, bool]] = []
        self.changed = asyncio.Event()

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def published(params: lsp.PublishDiagnosticsParams) -> None:
            feedback = any(d.source == "mcl feedback" for d in params.diagnostics)
            self.events.append((time.perf_counter(), params.version, feedback))
            self.changed.set()

        @client.feature(lsp.WORKSPACE_CONFIGURATION)
        def configuration(params: lsp.ConfigurationParams) -> list[Any]:
            return [{"debounceMs": 0, "defines": VALUES} for _ in params.items]

    async def wait(self, version: int, feedback: bool, timeout: float = 120) -> float:
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            for t, v, fb in self.events:
                if v == version and fb == feedback:
                    return t
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except asyncio.TimeoutError:
                pass
        raise TimeoutError(f"no diagnostics (feedback={feedback}) for version {version}")


async def measure(path: Path, edits: int) -> tuple[list[float], list[float]]:
    client = LanguageClient("bench-lsp", "1")
    recorder = Recorder(client)
    await client.start_io(sys.executable, "-m", "mcl", "lsp")
    await client.initialize_async(lsp.InitializeParams(
        capabilities=lsp.ClientCapabilities(
            workspace=lsp.WorkspaceClientCapabilities(configuration=True)),
        root_uri=REPO.as_uri()))
    client.initialized(lsp.InitializedParams())
    uri = path.resolve().as_uri()
    text = path.read_text()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        lsp.TextDocumentItem(uri=uri, language_id="mcpl", version=1, text=text)))
    await recorder.wait(1, True)  # the worker is warm
    check, feedback = [], []
    for version in range(2, edits + 2):
        comment = "// edit " + "x" * (version % 7)
        sent = time.perf_counter()
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(
                text + comment + "\n")]))
        check.append(await recorder.wait(version, False) - sent)
        feedback.append(await recorder.wait(version, True) - sent)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return check, feedback


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("kernel", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--out", type=Path, help="also write the report to FILE")
    args = parser.parse_args()
    check, feedback = asyncio.run(measure(args.kernel, args.edits))
    plain, full = peers(args.kernel, min(args.edits, 10))
    ms = 1000
    lines = [
        f"mcl lsp latency after an edit of {args.kernel.relative_to(REPO)} "
        f"({args.edits} edits, debounce 0, -D {VALUES})",
        f"diagnostics: median {statistics.median(check) * ms:.1f} ms, "
        f"max {max(check) * ms:.1f} ms (goal < 100 ms); "
        f"peer check_file {plain * ms:.1f} ms: ratio {statistics.median(check) / plain:.2f}",
        f"feedback:    median {statistics.median(feedback) * ms:.1f} ms, "
        f"max {max(feedback) * ms:.1f} ms (goal < 500 ms); "
        f"peer check_file + feedback {full * ms:.1f} ms: ratio "
        f"{statistics.median(feedback) / full:.2f}",
        "raw diagnostics ms: " + " ".join(f"{c * ms:.1f}" for c in check),
        "raw feedback ms:    " + " ".join(f"{f * ms:.1f}" for f in feedback),
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
