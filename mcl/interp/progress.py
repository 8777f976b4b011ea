"""How far the interpreter has got: the units of the outermost foreach statement done so
far (docs/interpreter.md, "Long runs"). The interpreter runs one unit at a time, so a run at
the paper's sizes can take minutes; `mcl run --interp` listens here to estimate the time
left from the rate so far and show a progress bar."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Called with (units done, units in all) of the outermost foreach, after each unit.
Listener = Callable[[int, int], None]
_LISTENER: ContextVar[Listener | None] = ContextVar("mcl_interp_progress", default=None)


def listener() -> Listener | None:
    return _LISTENER.get()


@contextmanager
def listening(callback: Listener) -> Iterator[None]:
    token = _LISTENER.set(callback)
    try:
        yield
    finally:
        _LISTENER.reset(token)
