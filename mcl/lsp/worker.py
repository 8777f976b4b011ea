"""Performance feedback off the typing path: a separate process, cancelled by newer edits.

The analyses (SymPy sums, cache models) take from milliseconds to a second or more, and
they hold Python's lock while they run; in the server's own process they would slow every
answer down. So they run in one long-lived worker process (its SymPy caches stay warm from
one edit to the next): the server sends a `FeedbackJob` and waits for its result in a
thread, and when a newer edit arrives it interrupts the job (SIGUSR1 raises `Cancelled` in
the worker between two bytecodes; where there is no such signal, or the worker does not
answer in time, the worker is replaced).

The result is plain data (`FeedbackResult`): texts, spans and the figures of each
message, so the server never imports SymPy.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection
from typing import Any

from mcl.diagnostics import Diagnostic, MclError, Severity, Span
from mcl.lsp.analysis import Libraries
from mcl.lsp.heap import settle
from mcl.lsp.refinement_actions import OffersJob, OffersResult, offers_of

# Tests only: seconds every analysis sleeps first, to stand for a slow one
# (tests/lsp/test_responsiveness.py).
DELAY_ENV = "MCL_LSP_FEEDBACK_DELAY"
CANCEL_WAIT_S = 2.0  # how long a cancelled job may take to stop before the worker is replaced
# SymPy keeps up to 1,000 results per cached function (about 125 of them) for the process.
# A job reuses the loop counters and stand-ins of the last one (`run_job`), but every edit
# brings formulas of its own, so the worker would still grow job by job up to some
# 125,000 entries. Past this many the cache starts again empty; the
# next job fills in what it needs (what mcl keeps by formula stays:
# mcl.feedback.facts.compiled).
SYMPY_ENTRIES = 20_000
# What SymPy keeps per cached function in the worker (its default: 1,000). One job on
# spmv hopper_v17 builds some 3,000 sums and products (`AssocOp.__new__`) and 1,300
# symbols: at 1,000 each job evicted what the next one needed again (800 misses a job,
# the same formulas of the statements an edit did not touch), at 5,000 nothing. The
# whole cache stays bounded by SYMPY_ENTRIES (`bound_caches`).
SYMPY_CACHE_SIZE = 5_000
READY = "ready"  # the worker's first message: imports done, library loaded


@dataclass(frozen=True)
class FeedbackJob:
    path: str
    overlays: tuple[tuple[str, str], ...]  # every open buffer: path -> text
    hwd_path: tuple[str, ...]
    include: tuple[str, ...]
    level: str | None
    values: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class FigureRecord:
    name: str
    symbolic: str
    numeric: float | None
    estimated: bool = False


@dataclass(frozen=True)
class EstimateRecord:
    """The time model's estimate (mcl.feedback.findings.TimeEstimate) as plain data,
    its times as the feedback writes them (`least`: with an undecided `if`'s smaller
    branch in every unit, where the counts cannot tell which branch)."""

    time: str
    limit: str
    least: str | None = None


@dataclass(frozen=True)
class MessageRecord:
    """A feedback message (mcl.feedback.messages.Message) as plain data."""

    severity: str  # info, suggestion, warning
    analysis: str
    code: str
    text: str
    span: Span | None
    hint: str | None
    function: str
    approximate: bool
    figures: tuple[FigureRecord, ...]
    needs: tuple[str, ...]
    # published as a diagnostic (mcl.feedback.render.visibility); the others only on hover
    shown_by_default: bool = True
    estimate: EstimateRecord | None = None  # where the message is the time estimate's


@dataclass
class FeedbackResult:
    messages: list[MessageRecord] = field(default_factory=list)
    # Diagnostics of the check at `mcl.level` (translation notes, errors after it).
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    cancelled: bool = False
    failure: str | None = None  # an internal error of the analyses (a bug in mcl)


class Cancelled(Exception):
    """Raised inside the worker when the server interrupts the running job."""


# ----------------------------------------------------------------------- the worker side

_busy = False


def _interrupt(signum: int, frame: Any) -> None:
    if _busy and not _importing(frame):
        raise Cancelled()


def _importing(frame: Any) -> bool:
    """Whether `frame` runs inside an import: an exception raised there would leave the
    module half-initialised in sys.modules for every later job, so the job runs on to its
    end (its result is stale and dropped by the server)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def size_sympy_cache() -> None:
    """SymPy's cache of SYMPY_CACHE_SIZE results per function, unless the user set
    SYMPY_CACHE_SIZE: SymPy reads it once, at its import, so only before that."""
    if "sympy" not in sys.modules:
        os.environ.setdefault("SYMPY_CACHE_SIZE", str(SYMPY_CACHE_SIZE))


def _serve(conn: Connection) -> None:
    """The worker's main loop: one job at a time, results in order."""
    global _busy
    size_sympy_cache()
    if hasattr(signal, "SIGUSR1"):
        signal.signal(signal.SIGUSR1, _interrupt)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the editor's Ctrl-C is not for us
    libraries = Libraries()
    from mcl.feedback.refinable import use_answered
    from mcl.refine.answers import answered_changes

    use_answered(answered_changes)  # as `mcl check` shows them (mcl.cli)
    # Every job parses the file again: reuse its definitions that did not change, and with
    # them the analyses of an unchanged program (`_run`).
    from mcl.mcpl.parse import reuse_definitions

    reuse_definitions()
    _warm_up(libraries)
    settle()  # the imports and the library, out of the collector's way (mcl.lsp.heap)
    try:
        conn.send(READY)  # only now can a job be interrupted (see FeedbackWorker.cancel)
    except (BrokenPipeError, OSError):
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        if isinstance(job, OffersJob):
            offers = _serve_offers(job, libraries)
            bound_caches()
            try:
                conn.send(offers)
            except (BrokenPipeError, OSError):
                return
            continue
        result = FeedbackResult()
        start = time.perf_counter()
        try:
            _busy = True
            run_job(job, libraries, result)
            _busy = False
        except Cancelled:
            _busy = False
            result = FeedbackResult(cancelled=True)
        except MclError as exc:
            _busy = False
            result.diagnostics += exc.diagnostics
        except RecursionError:
            _busy = False
            result.failure = "the kernel is nested too deeply to analyse"
        except Exception as exc:  # noqa: BLE001 - reported to the server, which logs it
            _busy = False
            result.failure = f"{type(exc).__name__}: {exc}"
        _busy = False
        result.seconds = time.perf_counter() - start
        bound_caches()
        try:
            conn.send(result)
        except (BrokenPipeError, OSError):
            return


# The last offers listed: a job of the same texts, paths and values has the same offers
# (an editor that sends the document again unchanged, a save).
_last_offers: tuple[OffersJob, Any, OffersResult] | None = None  # job, library, result


def _serve_offers(job: OffersJob, libraries: Libraries) -> OffersResult:
    """The offers of `job` (mcl.lsp.refinement_actions), or why there are none: a kernel
    that does not check or translate has none (its diagnostics come with the feedback)."""
    global _busy, _last_offers
    from mcl.source_files import replace_overlays

    start = time.perf_counter()
    try:
        _busy = True
        replace_overlays(job.overlays)
        library = libraries.get(job.hwd_path)
        if _last_offers is not None and _last_offers[0] == job and _last_offers[1] is library:
            result = _last_offers[2]
        else:
            result = offers_of(job, library)
            _last_offers = (job, library, result)
        _busy = False
    except Cancelled:
        _busy = False
        return OffersResult([], cancelled=True)
    except MclError as exc:
        _busy = False
        first = exc.diagnostics[0].message if exc.diagnostics else "the kernel does not check"
        return OffersResult([], failure=None, seconds=time.perf_counter() - start,
                            not_read=first)
    except RecursionError:
        _busy = False
        return OffersResult([], failure="the kernel is nested too deeply to refine")
    except Exception as exc:  # noqa: BLE001 - reported to the server, which logs it
        _busy = False
        return OffersResult([], failure=f"{type(exc).__name__}: {exc}")
    _busy = False
    return replace(result, seconds=time.perf_counter() - start)


def bound_caches(limit: int | None = None) -> None:
    """Empty SymPy's cache once it holds more than `limit` (SYMPY_ENTRIES) results, and
    with it what mcl keeps of SymPy's results by operands (which holds its expressions)."""
    from sympy.core.cache import CACHE, clear_cache

    from mcl.mcpl.symbolic_values import forget_per_process

    if sum(f.cache_info().currsize for f in CACHE) > (SYMPY_ENTRIES if limit is None else limit):
        clear_cache()
        forget_per_process()


def _warm_up(libraries: Libraries) -> None:
    """Import the analyses and load the bundled library before the first job."""
    try:
        import mcl.feedback.registry  # noqa: F401

        libraries.get(())
    except Exception:  # noqa: BLE001 - the first job reports what is wrong
        pass


def run_job(job: FeedbackJob, libraries: Libraries, result: FeedbackResult) -> None:
    """A feedback job as the worker runs it: `_run` with the loop counters and
    stand-ins of the last job (mcl.feedback.facts.stable_dummies), so that SymPy's
    caches and what the feedback keeps by formula serve the code an edit did not touch."""
    from mcl.feedback.facts.stable_dummies import reused_dummies

    with reused_dummies():
        _run(job, libraries, result)


def _run(job: FeedbackJob, libraries: Libraries, result: FeedbackResult) -> None:
    from mcl.source_files import overlays, replace_overlays

    delay = float(os.environ.get(DELAY_ENV, "0") or 0)
    if delay > 0:
        time.sleep(delay)
    hdl_texts = {p: t for p, t in job.overlays if p.endswith(".hdl")}
    if set(hdl_texts.items()) != {(p, t) for p, t in overlays().items() if p.endswith(".hdl")}:
        libraries.invalidate()  # a description buffer changed
    replace_overlays(job.overlays)
    library = libraries.get(job.hwd_path)
    from mcl.feedback.stage import FeedbackOptions
    from mcl.pipeline import check_source

    if job.level is not None:
        from mcl.translate.levels import require_level

        require_level(library, job.level)
    # What `mcl check FILE --level L -D name=value` does, step for step.
    options = FeedbackOptions(defines=tuple(f"{name}={value}" for name, value in job.values))
    # A job follows the server's clean check of the same text (mcl.lsp.server), whose
    # diagnostics are published: at the source's own level, the flow checks (a fifth to
    # half of the check of a long kernel) would only find them again, and nothing of
    # the analyses reads them. At a level, the translation is checked in full.
    checked = check_source(job.path, job.include, library, job.level,
                           flow=job.level is not None)
    upward = [d for d in checked.diagnostics if d.code == "translate-upward"]
    if upward:
        # `mcl.level` applies to every file; one already at or below it is analysed at
        # its own level, with a note instead of the command line's error.
        checked = check_source(job.path, job.include, library, None)
        result.diagnostics += [replace(
            d, severity=Severity.NOTE,
            message=f"{d.message}; mcl.level is {job.level}, so the feedback is at the "
            "kernel's own level") for d in upward]
    feedback = _feedback(checked, library, options)
    if job.level is not None:
        result.diagnostics += checked.diagnostics
    if feedback is not None:
        from mcl.feedback.block_refusal import refused_blocks

        # As `mcl check` with values: a block no multiprocessor can start is an error.
        result.diagnostics += refused_blocks(feedback.findings, feedback.levels)
        findings = feedback.findings or [None] * len(feedback.messages)
        result.messages = [_record(m, shown, _estimate(finding)) for m, shown, finding
                           in zip(feedback.messages, feedback.shown_by_default(), findings,
                                  strict=True)]


# The last analysis: what it analysed and its feedback. Most edits leave the program as it
# was (a comment, blanks) or change one definition; the parse reuses the definitions that
# did not change (mcl.mcpl.parse.reuse_definitions), so an unchanged program is made of
# the very same definitions as before, and its feedback is the same.
_last: tuple[Any, Any, Any, Any] | None = None  # program, library, options, FileFeedback
# An edit that changes one definition: the kernels it did not touch (nor anything they
# read) keep their findings (mcl.feedback.kept_findings), so an edit inside one function
# of a long file analyses that one.
_kept: Any = None  # a KeptFindings, made at the first job (it imports the analyses' types)


def _feedback(checked: Any, library: Any, options: Any) -> Any:
    """The feedback `check_source` with `options` gives on `checked` (a SourceCheck),
    reused when the program, library and options are those of the last job; an error
    of the values joins the check's diagnostics, as there."""
    global _last, _kept
    program = checked.checked()
    if program is None or program.errors:
        return None
    if _last is not None and _last[1] is library and _last[2] == options \
            and _same_program(_last[0], program.program):
        return _last[3]
    from mcl.feedback.kept_findings import KeptFindings
    from mcl.pipeline import feedback

    if _kept is None:
        _kept = KeptFindings()
    try:
        found = feedback(program, library, options, _kept)
    except MclError as exc:
        checked.diagnostics += exc.diagnostics
        return None
    _last = (program.program, library, options, found)
    return found


def _same_program(a: Any, b: Any) -> bool:
    """Are programs `a` and `b` made of the same definitions (the same objects)?"""
    return (a.modules.keys() == b.modules.keys() and a.files == b.files
            and a.hwd_imports == b.hwd_imports and a.roots == b.roots
            and _same_module(a.main, b.main)
            and all(_same_module(a.modules[k], b.modules[k]) for k in a.modules))


def _same_module(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if (a.package, a.name, a.exports, a.file, a.span) != \
            (b.package, b.name, b.exports, b.file, b.span):
        return False
    parts = ((a.imports, b.imports), (a.constants, b.constants), (a.types, b.types),
             (a.functions, b.functions))
    return all(len(x) == len(y) and all(p is q for p, q in zip(x, y, strict=True))
               for x, y in parts)


def _estimate(finding: Any) -> EstimateRecord | None:
    """The fields of a time estimate, read from the typed finding, not its text."""
    from mcl.feedback.emit import seconds_text
    from mcl.feedback.findings import TimeEstimate

    if not isinstance(finding, TimeEstimate):
        return None
    return EstimateRecord(seconds_text(finding.seconds), finding.limit,
                          None if finding.least_seconds is None
                          else seconds_text(finding.least_seconds))


def _record(m: Any, shown_by_default: bool = True, estimate: EstimateRecord | None = None
            ) -> MessageRecord:
    figures = tuple(
        FigureRecord(name, v.text, v.numeric, bool(getattr(v, "estimated", False)))
        for name, v in m.values)
    return MessageRecord(
        severity=m.severity.value, analysis=m.analysis, code=m.code, text=m.text,
        span=m.span, hint=m.hint, function=m.function, approximate=m.approximate,
        figures=figures, needs=tuple(m.needs), shown_by_default=shown_by_default,
        estimate=estimate)


# ----------------------------------------------------------------------- the server side


class FeedbackWorker:
    """The server's handle on the worker process. `run` blocks (call it in a thread);
    `cancel` and `close` may be called from any thread.

    A job is interrupted only once the worker has warmed up (imports, library): a cancel
    before that just keeps the waiting job from being sent, so that fast typing cannot
    kill worker after worker in the middle of their start."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one job at a time
        self._process: Any = None
        self._conn: Connection | None = None
        self._ready = False
        self._running = False  # a job is in the worker
        self._sent = 0  # jobs sent to the worker so far; the running one is number _sent
        self._done = threading.Condition()  # notified when a job's `run` returns
        self._finished = 0  # the number of the last job whose `run` returned
        self._wanted: FeedbackJob | OffersJob | None = None  # the newest; older are stale
        # counts the cancels: a job asked for at one count is dropped once it has moved on
        self._generation = 0
        self._closed = False
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("spawn")  # the server has threads: no fork
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child,), daemon=True,
                                  name="mcl-lsp-feedback")
        process.start()
        child.close()
        self._ready = False
        self._conn = parent
        self._process = process

    @property
    def generation(self) -> int:
        """The number of cancels so far. A caller that hands `run` or `offers` to another
        thread reads it first and passes it on: a cancel in between (a keystroke while
        the job waits for a thread) then drops the job, which would otherwise hold the
        worker for as long as it runs (a listing of refinements: a minute)."""
        return self._generation

    def run(self, job: FeedbackJob, generation: int | None = None) -> FeedbackResult:
        result = self._call(job, generation)
        return result if isinstance(result, FeedbackResult) else FeedbackResult(cancelled=True)

    def offers(self, job: OffersJob, generation: int | None = None) -> OffersResult:
        """The refinements the worker offers for `job` (mcl.lsp.refinement_actions);
        blocks as `run` does, and is cancelled the same way."""
        result = self._call(job, generation)
        return result if isinstance(result, OffersResult) else OffersResult([], cancelled=True)

    def _call(self, job: FeedbackJob | OffersJob, generation: int | None = None
              ) -> FeedbackResult | OffersResult | None:
        """`job`'s result from the worker; None where it was cancelled (at `generation`,
        by default the one now) or never sent."""
        if generation is None:
            generation = self._generation
        self._wanted = job

        def dropped() -> bool:
            return self._closed or self._wanted is not job or self._generation != generation

        with self._lock:
            try:
                for attempt in range(2):
                    sent = False
                    try:
                        if dropped():
                            return None
                        if attempt or self._process is None or not self._process.is_alive():
                            if attempt and self._process is not None:  # being replaced: stop it
                                self._stop(self._process)
                            self._start()
                        conn = self._conn
                        assert conn is not None
                        if not self._ready:
                            self._ready = conn.recv() == READY
                        # Numbered and running before the last look: a cancel from here
                        # on signals the job, and replaces the worker if the signal came
                        # before the job began.
                        self._sent += 1
                        self._running = True
                        if dropped():
                            return None
                        conn.send(job)
                        sent = True
                        answer: FeedbackResult | OffersResult = conn.recv()
                        return answer
                    except (EOFError, OSError, BrokenPipeError, AssertionError):
                        # Replaced by `cancel`, or the worker died (out of memory...).
                        self._ready = False
                        self._running = False
                        if sent:
                            return None
                        # Not sent: the connection was to a worker that a cancel of the
                        # job before was stopping (it looked alive a moment longer).
                        # The job is still wanted: start another worker, once.
                return None
            finally:
                self._running = False
                with self._done:
                    self._finished = self._sent
                    self._done.notify_all()

    def cancel(self) -> None:
        """Interrupt the job of the running `run`, if any; it returns a cancelled result.
        A job asked for before this call and not yet running is not sent."""
        self._generation += 1
        self._wanted = None
        process = self._process
        if not self._running or process is None or not process.is_alive():
            return
        if hasattr(signal, "SIGUSR1") and process.pid is not None:
            try:
                os.kill(process.pid, signal.SIGUSR1)
            except OSError:
                pass
            threading.Thread(target=self._replace_if_stuck, args=(process, self._sent),
                             daemon=True).start()
        else:
            self._stop(process)

    def _replace_if_stuck(self, process: Any, job: int) -> None:
        """A job stuck in C code does not see the signal: stop its process (the next
        `run` starts another). Only job number `job` is waited for: the newer job that
        takes the lock as soon as it returns must run on."""
        with self._done:
            if self._done.wait_for(lambda: self._finished >= job, timeout=CANCEL_WAIT_S):
                return
        if self._process is process and self._sent == job:
            self._stop(process)

    @staticmethod
    def _stop(process: Any) -> None:
        try:
            process.terminate()  # a blocked `run` sees EOF and returns
            process.join(1)
            if process.is_alive():
                process.kill()
        except (AssertionError, OSError, ValueError):  # never started, or already gone
            pass

    def close(self) -> None:
        self._closed = True
        self._wanted = None
        process = self._process
        if process is not None:
            self._stop(process)
