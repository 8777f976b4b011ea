"""Progress of the commands that take a while (`mcl refine`, `tune`, `report --run`,
`run`, `apply`, the fuzzer), on stderr, one way for all of them:

- on a terminal, rich's progress bar or spinner, gone when the work ends;
- where stderr is no terminal (a pipe, a CI log, a file), plain lines: `mcl report:
  running hopper_v2 (3 of 8, 42 s)`, at most one every PLAIN_EVERY_S seconds (a command's
  log steps, `Progress.say`, every one), so a long silence never looks like a hang and a
  log is not flooded;
- nothing at all with `--quiet`.

Progress never goes to stdout: with `--format json` the document there stays whole.

A step of unknown length (`waiting`; `Timings.step`, which times the steps of `mcl run`:
making inputs, the reference, building, transfers) shows its spinner, or its one plain
line, only once it has taken longer than a second, so quick runs print nothing extra."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console

from mcl.output_width import is_terminal, say

DELAY_S = 1.0
PLAIN_EVERY_S = 5.0  # at most one plain progress line this often


class Progress:
    """Progress over the steps of command `command` (`total` of them where known) on
    stderr: a rich bar on a terminal, else plain lines (see the module), nothing when
    `quiet`. A context manager; `step(label)` as each step starts, `say(text)` for a line
    of the command's log that is always shown (not on a terminal's bar: above it)."""

    def __init__(self, command: str, total: int | None = None, *, quiet: bool = False,
                 every_s: float = PLAIN_EVERY_S, bar: bool = True) -> None:
        self.command, self.total, self.quiet, self.every_s = command, total, quiet, every_s
        self.stream = sys.stderr
        self.terminal = is_terminal(self.stream)
        self.done = 0
        self.started = time.monotonic()
        self._last_line: float | None = None
        self._bar: Any = None
        self._task: Any = None
        self._want_bar = bar

    def __enter__(self) -> Progress:
        if self.terminal and self._want_bar and not self.quiet:
            from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            columns = [BarColumn(), MofNCompleteColumn()] if self.total else []
            self._bar = Bar("[progress.description]{task.description}", *columns,
                            TimeElapsedColumn(), console=Console(stderr=True),
                            transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.command, total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def step(self, label: str) -> None:
        """Step `label` starts (the steps before it are done)."""
        self.note(label, count=True)
        self.done += 1

    def note(self, text: str, count: bool = False) -> None:
        """Where the work stands: the bar's text on a terminal; elsewhere a plain line,
        unless one was printed less than `every_s` seconds ago."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=text)
        elif not self.terminal:
            now = time.monotonic()
            if self._last_line is None or now - self._last_line >= self.every_s:
                self._last_line = now
                self._line(f"{text} ({self._count() if count else ''}"
                           f"{now - self.started:.0f} s)")

    def say(self, text: str) -> None:
        """A line of the command's log, shown whatever the stream (not when quiet)."""
        if self.quiet:
            return
        if self._bar is not None:
            self._bar.console.print(f"mcl {self.command}: {text}", markup=False,
                                    highlight=False)
        else:
            self._line(text)

    def _count(self) -> str:
        return f"{self.done + 1} of {self.total}, " if self.total else ""

    def _line(self, text: str) -> None:
        say(f"mcl {self.command}: {text}", file=self.stream, flush=True)


@contextmanager
def waiting(command: str, label: str, *, quiet: bool = False, console: Console | None = None,
            delay: float = DELAY_S) -> Iterator[None]:
    """One step of unknown length (`label`): once it has taken `delay` s, a spinner on a
    terminal, gone when it ends; elsewhere one plain line, `mcl COMMAND: LABEL ...`;
    nothing when `quiet` or when the step ends sooner."""
    if quiet:
        yield
        return
    console = console or Console(stderr=True)
    status = console.status(label)
    show = status.start if console.is_terminal else (
        lambda: Progress(command).say(f"{label} ..."))
    timer = threading.Timer(delay, show)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        status.stop()


class Timings(dict[str, float]):
    """Seconds per named step, in the order they ran; `notes` adds a word to a step's
    text (`device compile (cached)`), not to its name in JSON."""

    def __init__(self, command: str = "run", quiet: bool = False) -> None:
        super().__init__()
        self.notes: dict[str, str] = {}
        self.command, self.quiet = command, quiet  # whose steps: for the plain lines

    @contextmanager
    def step(self, name: str, label: str, console: Console | None = None,
             delay: float = DELAY_S) -> Iterator[None]:
        """Time the block as step `name`, shown as `label` while it takes long
        (`waiting`)."""
        start = time.perf_counter()
        try:
            with waiting(self.command, label, quiet=self.quiet, console=console,
                         delay=delay):
                yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - start

    def text(self) -> str:
        return " · ".join(
            f"{name}{' (' + self.notes[name] + ')' if name in self.notes else ''} {_seconds(s)}"
            for name, s in self.items())


def _seconds(s: float) -> str:
    return f"{s:.3g} s" if s >= 1 else f"{s * 1e3:.3g} ms"
