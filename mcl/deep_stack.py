"""Run a command with room for deeply nested programs.

Kernels and descriptions are trees, and parsing, checking, translating, printing and
interpreting them recurse once per level of nesting. Python's default limit (1000 frames,
on the main thread's 8 MB stack) stops at about 60 nested parentheses or a sum of 500
terms — sizes that generated code reaches. A command therefore runs in a thread with a
large stack and a matching recursion limit; the limit is restored afterwards, so a caller
that keeps running on its own (small) stack, such as a test process, is unaffected.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024  # reserved address space; only the pages used cost memory
RECURSION_LIMIT = 100_000  # well inside STACK_BYTES even where recursion passes through C


def run_with_deep_stack(work: Callable[[], T]) -> T:
    """`work()` on a thread with a large stack; its result, or its exception re-raised."""
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed back to the calling thread
            errors.append(exc)

    old_limit = sys.getrecursionlimit()
    try:
        old_size = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):  # a platform that refuses: run as before
        return work()
    try:
        thread = threading.Thread(target=target, name="mcl-command", daemon=True)
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        try:
            thread.start()
        except RuntimeError:  # no memory for such a stack: run as before
            sys.setrecursionlimit(old_limit)
            return work()
    finally:
        threading.stack_size(old_size)
    try:
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if errors:
        raise errors[0]
    return values[0]
