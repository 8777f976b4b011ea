"""A spinner for the steps of a command that may take a while (`mcl run` at the paper's
sizes: making inputs, the reference, building, transfers): shown on stderr only once a
step has taken longer than a second, so quick runs print nothing extra, and gone when the
step ends (rich's transient status; nothing at all when stderr is not a terminal)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

DELAY_S = 1.0


class Timings(dict[str, float]):
    """Seconds per named step, in the order they ran; `notes` adds a word to a step's
    text (`device compile (cached)`), not to its name in JSON."""

    def __init__(self) -> None:
        super().__init__()
        self.notes: dict[str, str] = {}

    @contextmanager
    def step(self, name: str, label: str, console: Console | None = None,
             delay: float = DELAY_S) -> Iterator[None]:
        """Time the block as step `name`; show `label` with a spinner after `delay` s."""
        status = (console or Console(stderr=True)).status(label)
        timer = threading.Timer(delay, status.start)
        timer.daemon = True
        start = time.perf_counter()
        timer.start()
        try:
            yield
        finally:
            timer.cancel()
            status.stop()
            self[name] = self.get(name, 0.0) + time.perf_counter() - start

    def text(self) -> str:
        return " · ".join(
            f"{name}{' (' + self.notes[name] + ')' if name in self.notes else ''} {_seconds(s)}"
            for name, s in self.items())


def _seconds(s: float) -> str:
    return f"{s:.3g} s" if s >= 1 else f"{s * 1e3:.3g} ms"
