"""The pygls server of `mcl lsp` (docs/editor.md).

Every edit schedules an analysis of its document, at once or after `mcl.debounceMs` when
the client sets one. A newer edit cancels the analysis not yet started (the debounce
pause). A check already running is not discarded by an edit: it finishes and its
diagnostics are published (they are the newest finished), and one check of the newest
text starts after it -- so edits that arrive while a check runs are coalesced, and a
typist faster than the check still sees diagnostics after every check, not only when they
pause. (A check of a text that is checked again unchanged -- new settings, a description
or module changed -- is outdated when it finishes: only the follow-up publishes.) The
analysis has two stages:

1. the quick check (mcl.lsp.analysis) on a thread of its own, whose diagnostics are
   published at once;
2. performance feedback of the newest text in the worker process (mcl.lsp.worker),
   published with the check's diagnostics when it is done and the check is clean. It
   starts beside the check, on another core, where the document's last check was clean
   (an edit of a clean text is mostly clean: a constant changed) and a core is free
   (`core_free`), and after the check otherwise; a check with errors drops it. A newer
   edit of the document cancels it; the worker is interrupted.

Requests (hover, definition, ...) read the last results of the document and never wait
for the feedback. No pass ever runs on the event loop, so the loop always answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from mcl import __version__
from mcl.lsp import (
    actions,
    completion,
    encoding,
    formatting,
    hdl_navigation,
    hdl_tokens,
    heap,
    hover,
    importers,
    inlay,
    lenses,
    navigation,
    outline,
    references,
    refinement_actions,
    rename,
    tokens,
)
from mcl.lsp.analysis import CheckResult, Libraries, check_document, is_hdl
from mcl.lsp.broken_check import check_with_kept
from mcl.lsp.config import ClientSettings, Effective, effective
from mcl.lsp.convert import diagnostic, feedback_diagnostic, same_file, to_range
from mcl.lsp.framing import FramedTransport
from mcl.lsp.lookup import module_at
from mcl.lsp.protocol import MclProtocol, OneLine
from mcl.lsp.refinement_actions import OfferRecord, OffersJob, OffersResult
from mcl.lsp.shift import Shift
from mcl.lsp.worker import FeedbackJob, FeedbackResult, FeedbackWorker, MessageRecord
from mcl.mcpl.parse import KEYWORDS
from mcl.mcpl.sidetables import SideTables
from mcl.source_files import set_overlay, source_lines

log = logging.getLogger("mcl.lsp")
# The pause after an edit's feedback before the refinements are listed for code actions.
OFFERS_IDLE_S = 1.0

T = TypeVar("T")


@dataclass
class DocumentState:
    """What the server knows of one open document."""

    check: CheckResult | None = None
    check_version: int | None = None  # the document version `check` is of
    last_good: CheckResult | None = None  # the last check whose program parsed
    last_good_text: str = ""  # the text `last_good` was checked from
    # `last_good_text` against the document's text now, by document version
    shifted: tuple[int | None, Shift] | None = None
    feedback: list[MessageRecord] = field(default_factory=list)
    # The refinements offered as code actions, with the document version they are of
    # (mcl.lsp.refinement_actions); listed in the worker after the feedback.
    offers: tuple[int, list[OfferRecord]] | None = None
    check_diagnostics: list[lsp.Diagnostic] = field(default_factory=list)
    task: asyncio.Task | None = None
    # The worker's job of this document (feedback or the refinements offered), running or
    # waiting for the worker: a newer edit cancels it.
    worker_job: asyncio.Future | None = None
    checking: bool = False  # a check of this document runs on the check thread
    # An edit came while the check ran: another check follows it (`edited`: the text
    # changed, so the files that use it follow too).
    again: bool = False
    again_edited: bool = False
    last_edit: float = 0.0  # event-loop time of the last edit, for the debounce
    # Counts the checks asked for by something other than an edit of this document (the
    # settings, another file). `last_good` was checked at `good_key` (this count and the
    # effective settings); a text that does not parse keeps its diagnostics only while
    # nothing else changed since (mcl.lsp.broken_check).
    environment: int = 0
    good_key: tuple[int, Any] | None = None

    @property
    def feedback_running(self) -> bool:
        return self.worker_job is not None and not self.worker_job.done()


def _deep_executor() -> ThreadPoolExecutor:
    """One thread with a large stack (mcl.deep_stack): the passes recurse once per
    level of nesting."""
    from mcl.deep_stack import STACK_BYTES

    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcl-check")
    try:
        old = threading.stack_size(STACK_BYTES)
    except (ValueError, RuntimeError):
        return executor
    try:
        executor.submit(lambda: None).result()  # the thread starts now, with that stack
    finally:
        threading.stack_size(old)
    return executor


class MclLanguageServer(FramedTransport, LanguageServer):
    def __init__(self) -> None:
        super().__init__("mcl", __version__, protocol_cls=MclProtocol)
        self.settings = ClientSettings()
        self.libraries = Libraries()
        self.documents: dict[str, DocumentState] = {}
        self.checks = _deep_executor()
        self._worker: FeedbackWorker | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # a message pygls could not decode: bad UTF-8 is recovered (mcl.lsp.protocol)
        if isinstance(error, UnicodeDecodeError) and isinstance(self.protocol, MclProtocol) \
                and self.protocol.recover_bad_utf8(error):
            return
        log.warning("could not handle a message: %s: %s", type(error).__name__, error)
        super().report_server_error(error, source)

    def stop_worker(self) -> None:
        if self._worker is not None:
            self._worker.close()

    @property
    def worker(self) -> FeedbackWorker:
        if self._worker is None:
            self._worker = FeedbackWorker()
        return self._worker

    # ------------------------------------------------------------------ analysis

    def state(self, uri: str) -> DocumentState:
        return self.documents.setdefault(uri, DocumentState())

    def schedule(self, uri: str, delay: float, edited: bool = False) -> None:
        """(Re)start the analysis of `uri`; an older one of the same document stops.
        `edited`: its text changed, so the open files that use it are checked again."""
        state = self.state(uri)
        if edited:
            state.last_edit = asyncio.get_running_loop().time()
        else:
            state.environment += 1
        if state.feedback_running:
            self.worker.cancel()
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Log, f"mcl: feedback cancelled, {uri} changed"))
        if state.checking:
            # Let it finish and publish; `_run_analysis` starts the next one after it.
            state.again = True
            state.again_edited |= edited
            return
        if state.task is not None and not state.task.done():
            state.task.cancel()  # still in its debounce pause
        state.task = asyncio.ensure_future(self._analyse(uri, delay, edited))

    def _follow_up(self, uri: str) -> None:
        """After a check during which the document changed: check the newest text, once
        what is left of the debounce pause since the last edit has passed."""
        state = self.state(uri)
        edited, state.again, state.again_edited = state.again_edited, False, False
        since = asyncio.get_running_loop().time() - state.last_edit
        state.task = asyncio.ensure_future(self._analyse(
            uri, max(0.0, self.settings.debounce_s - since), edited))

    def reanalyse_all(self) -> None:
        for uri in list(self.documents):
            self.schedule(uri, 0)

    async def _analyse(self, uri: str, delay: float, edited: bool) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            await self._run_analysis(uri, edited)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - a bug in mcl must not stop the server
            log.exception("analysis of %s failed", uri)
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Error, f"mcl: internal error while checking {uri}: {exc}"))
            state = self.documents.get(uri)
            if state is not None and state.again and not state.checking:
                self._follow_up(uri)  # the newer text may check

    async def _run_analysis(self, uri: str, edited: bool) -> None:
        document = self.workspace.get_text_document(uri)
        if document.path is None:
            return
        path = Path(document.path)
        version, text = document.version, document.source
        set_overlay(path, text)
        if is_hdl(path):
            self.libraries.invalidate()  # kernels see the edited description
        settings = effective(self.settings, path)
        loop = asyncio.get_running_loop()
        state = self.state(uri)
        state.checking = True
        key = (state.environment, settings)
        good = None if state.last_good is None or state.good_key != key \
            else (text, state.last_good_text, state.last_good)
        # After a clean check the next text is most likely clean too (a constant changed,
        # a statement completed): its feedback starts beside the check, on another core,
        # instead of after it; it is dropped if the check finds errors. After a check
        # with errors (a statement half typed) it waits for a clean check, as it would
        # mostly analyse a text that does not parse; and so it does where no core is free
        # for it (`core_free`: it would take the check's CPU time, and the diagnostics
        # come later).
        early = self._start_feedback(state, path, settings) \
            if edited and self._clean(state) and self._wants_feedback(path) \
            and core_free() else None
        try:
            result = await loop.run_in_executor(self.checks, check_with_kept, path, settings,
                                                self.libraries, good)
        finally:
            state.checking = False
        if self.documents.get(uri) is not state:
            return  # closed meanwhile
        if state.again and self.workspace.get_text_document(uri).version == version:
            # the same text is checked again (new settings, a changed description or
            # module): this result is outdated already, the follow-up's is not
            state.again_edited |= edited
            self._follow_up(uri)
            return
        state.check, state.check_version = result, version
        if result.program is not None or result.hdl is not None:
            state.last_good, state.last_good_text, state.shifted = result, text, None
            state.good_key = key
        state.feedback = []
        state.offers = None
        module = module_at(result.program, path)
        imports = module.imports if module is not None else result.imports
        state.check_diagnostics = [diagnostic(d, path, imports) for d in result.diagnostics]
        self._publish(uri, version, state.check_diagnostics)
        # What the first check loaded (the library, the passes' modules) lives as long as
        # the server: out of the collector's way from now on (mcl.lsp.heap).
        if not heap.settled():
            await loop.run_in_executor(self.checks, _warm_and_settle)
        if edited:
            self.recheck_users(path)
        if state.again:
            self._follow_up(uri)  # no feedback for a text already replaced
            return
        if not self._wants_feedback(path):
            return
        if result.errors:
            if early is not None and state.worker_job is early[1] and not early[1].done():
                self.worker.cancel()  # the feedback of a text that does not check
            return
        started_early = early is not None and state.worker_job is early[1]
        job, running = early if early is not None and started_early \
            else self._start_feedback(state, path, settings)
        feedback = await running
        if feedback.cancelled and started_early and not state.again \
                and self.documents.get(uri) is state \
                and self.workspace.get_text_document(uri).version == version:
            # Cancelled by what the check set off, not by an edit of this document (an
            # importer checked again cancels the worker's job): as if it had not started.
            job, running = self._start_feedback(state, path, settings)
            feedback = await running
        if feedback.cancelled or self.workspace.get_text_document(uri).version != version:
            return
        if feedback.failure:
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Warning, f"mcl: feedback failed on {path.name}: "
                f"{feedback.failure}"))
        state.feedback = [m for m in feedback.messages if same_file(m.span, path)]
        log.info("feedback for %s: %d messages in %.3f s", path.name, len(state.feedback),
                 feedback.seconds)
        self._publish(uri, version, [
            *state.check_diagnostics,
            *(diagnostic(d, path, imports) for d in feedback.diagnostics),
            # what `mcl check` shows without -v; the rest is on hover over the access
            *(feedback_diagnostic(m) for m in state.feedback if m.shown_by_default)])
        self._refresh_code_lenses()  # they show the new feedback's time estimate
        await self._list_offers(uri, version, job)

    def _wants_feedback(self, path: Path) -> bool:
        return not is_hdl(path) and self.settings.feedback

    @staticmethod
    def _clean(state: DocumentState) -> bool:
        """Did the document's last check parse and find no error?"""
        return state.check is not None and state.check.program is not None \
            and not state.check.errors

    def _start_feedback(self, state: DocumentState, path: Path, settings: Effective
                        ) -> tuple[FeedbackJob, asyncio.Future[FeedbackResult]]:
        """The worker's feedback job of the document's text now (every open buffer as it
        is), and its result to come."""
        job = FeedbackJob(
            path=str(path),
            overlays=tuple(self._overlays()),
            hwd_path=settings.hwd_path,
            include=settings.include,
            level=settings.level,
            values=settings.values,
        )
        running = asyncio.get_running_loop().run_in_executor(
            None, self.worker.run, job, self.worker.generation)
        # (a job dropped unawaited, its text replaced or not clean: its failure is logged)
        running.add_done_callback(_log_failure)
        state.worker_job = running
        return job, running

    async def _list_offers(self, uri: str, version: int | None, feedback: FeedbackJob
                           ) -> None:
        """List the refinements of the document's kernel in the worker, after its
        feedback (seconds: each is verified), for code actions on this version. A newer
        edit cancels it as it cancels the feedback."""
        state = self.state(uri)
        # Only once the typist pauses: a listing verifies each refinement (seconds to a
        # minute), and the next keystroke must stop it, which may cost the worker (a
        # job that does not see the signal in time is stopped with its process).
        await asyncio.sleep(OFFERS_IDLE_S)
        if self.documents.get(uri) is not state or version is None \
                or self.workspace.get_text_document(uri).version != version:
            return
        job = OffersJob(feedback.path, feedback.overlays, feedback.hwd_path,
                        feedback.include, feedback.level, feedback.values)
        running = asyncio.get_running_loop().run_in_executor(
            None, self.worker.offers, job, self.worker.generation)
        state.worker_job = running
        result: OffersResult = await running
        if result.cancelled or version is None or self.documents.get(uri) is not state \
                or self.workspace.get_text_document(uri).version != version:
            return
        name = Path(feedback.path).name
        if result.failure:
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Warning, f"mcl: listing refinements failed on {name}: "
                f"{result.failure}"))
        state.offers = (version, result.offers)
        log.info("refinements for %s at %s: %d offered in %.3f s%s", name, result.level,
                 len(result.offers), result.seconds,
                 f" (not refined: {result.not_read})" if result.not_read else "")

    def _refresh_code_lenses(self) -> None:
        workspace = self.client_capabilities.workspace
        lens = workspace.code_lens if workspace is not None else None
        if lens is not None and lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    def recheck_users(self, changed: Path) -> None:
        """Check the open kernels that use `changed` again: every kernel for a
        description (any may use it), those importing it for a module, and those whose
        program did not load (`changed` may be the module they miss, or the end of their
        import cycle). Not cascading: only an edit, an open or a change on disk starts
        this."""
        target = changed.resolve()
        for uri, state in list(self.documents.items()):
            document = self.workspace.get_text_document(uri)
            if document.path is None or is_hdl(Path(document.path)):
                continue
            if Path(document.path).resolve() == target:
                continue
            program = state.last_good.program if state.last_good is not None else None
            files = program.files.values() if program is not None else ()
            unloaded = state.check is not None and not state.check.loaded
            if is_hdl(changed) or unloaded or any(Path(f).resolve() == target
                                                  for f in files):
                self.schedule(uri, 0)

    def _overlays(self) -> list[tuple[str, str]]:
        out = []
        for uri in self.documents:
            document = self.workspace.get_text_document(uri)
            if document.path is not None:
                out.append((str(Path(document.path).resolve()), document.source))
        return out

    def _publish(self, uri: str, version: int | None, diagnostics: list[lsp.Diagnostic]
                 ) -> None:
        self.text_document_publish_diagnostics(self.to_client(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics),
            uri))

    # ------------------------------------------------------------------ positions

    def shift(self, uri: str, state: DocumentState) -> Shift:
        """The last good tree's lines against the document's text now (mcl.lsp.shift)."""
        document = self.workspace.get_text_document(uri)
        if state.shifted is None or state.shifted[0] != document.version:
            state.shifted = (document.version, Shift(state.last_good_text, document.source))
        return state.shifted[1]

    def lines(self, uri: str) -> list[str]:
        """The lines of `uri` as mcl numbers them: the open document's text, else the
        file on disk (a module or description an answer points into)."""
        document = self.workspace.text_documents.get(unquote(uri))
        try:
            if document is not None:
                text = document.source
            else:
                path = to_fs_path(uri)
                text = Path(path).read_text(encoding="utf-8-sig") if path else ""
        except (OSError, UnicodeDecodeError, ValueError):
            return []
        return source_lines(text.replace("\r\n", "\n").replace("\r", "\n"))

    def from_client(self, value: T, uri: str) -> T:
        """A request's positions in mcl's characters (mcl.lsp.encoding)."""
        return encoding.incoming(self.workspace.position_codec, value, uri, self.lines)

    def to_client(self, value: T, uri: str) -> T:
        """An answer with its ranges in the client's units (mcl.lsp.encoding)."""
        return encoding.outgoing(self.workspace.position_codec, value, uri, self.lines)

    def close(self, uri: str) -> None:
        state = self.documents.pop(uri, None)
        if state is not None and state.task is not None:
            state.task.cancel()
        if state is not None and state.feedback_running:
            self.worker.cancel()
        document = self.workspace.get_text_document(uri)
        if document.path is not None:
            set_overlay(document.path, None)
            if is_hdl(Path(document.path)):
                self.libraries.invalidate()
            self.recheck_users(Path(document.path))  # they read the file on disk again
        self._publish(uri, None, [])

    # ------------------------------------------------------------------ settings

    async def pull_settings(self) -> None:
        """Ask the client for the `mcl` section, where it can answer."""
        capabilities = self.client_capabilities
        if not (capabilities.workspace and capabilities.workspace.configuration):
            return
        try:
            answer = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="mcl")]))
        except Exception as exc:  # noqa: BLE001 - a client that cannot answer keeps defaults
            log.info("workspace/configuration failed: %s", exc)
            return
        if answer:
            self.settings = self.settings.answered(answer[0])


server = MclLanguageServer()


# Tests only: "1" starts an edit's feedback beside its check whatever the load.
BESIDE_ENV = "MCL_LSP_FEEDBACK_BESIDE_CHECK"


def core_free(load: float | None = None, cpus: int | None = None) -> bool:
    """Is a core free for the feedback beside the check: the load average of the last
    minute (`load`, by default the machine's) and one more task, the check, within the
    CPUs? Where the load is not known (no `os.getloadavg`), no. On a 2-core machine at
    a load of 8 to 14 (other work) the feedback beside the check came a fifth sooner and
    the diagnostics a fifth later (docs/editor.md, "Latency", round 16)."""
    if os.environ.get(BESIDE_ENV) == "1":
        return True
    try:
        load = os.getloadavg()[0] if load is None else load
    except (AttributeError, OSError):
        return False
    cpus = (os.cpu_count() or 1) if cpus is None else cpus
    return load + 1 <= cpus


def _log_failure(done: asyncio.Future[Any]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("feedback job failed: %s", done.exception())


def _path(uri: str) -> Path | None:
    document = server.workspace.get_text_document(uri)
    return Path(document.path) if document.path is not None else None


@server.feature(lsp.INITIALIZE)
def initialize(ls: MclLanguageServer, params: lsp.InitializeParams) -> None:
    if params.initialization_options:
        ls.settings = ClientSettings.parse(params.initialization_options)


# Files whose saved changes change a kernel's diagnostics without an edit of the kernel:
# the project settings (docs/user-guide.md), the descriptions and the modules (created,
# renamed, changed outside the editor).
WATCHED = ("**/mcl.toml", "**/pyproject.toml", "**/*.hdl", "**/*.mcpl", "**/*.mcl")
MODULE_SUFFIXES = (".mcpl", ".mcl")


@server.feature(lsp.INITIALIZED)
async def initialized(ls: MclLanguageServer, params: lsp.InitializedParams) -> None:
    await ls.pull_settings()
    ls.worker  # noqa: B018 - start the feedback worker now: it warms up while you type
    ls.reanalyse_all()
    await _watch_files(ls)


async def _watch_files(ls: MclLanguageServer) -> None:
    """Ask the client to report changes of the WATCHED files, where it can."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = lsp.DidChangeWatchedFilesRegistrationOptions(
        watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in WATCHED])
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[
            lsp.Registration(id="mcl-watched-files",
                             method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                             register_options=options)]))
    except Exception as exc:  # noqa: BLE001 - a client that refuses still gets edits checked
        log.info("client/registerCapability failed: %s", exc)


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def watched_files_changed(ls: MclLanguageServer, params: lsp.DidChangeWatchedFilesParams
                          ) -> None:
    """A saved mcl.toml or description: check every open document again (a description
    may be used by any kernel; settings are read from disk at each check). A module
    changed on disk: check the open kernels that use it or miss a module (an open
    module's buffer is what the checks read, not the file)."""
    uris = [change.uri for change in params.changes]
    if any(uri.endswith(".hdl") for uri in uris):
        ls.libraries.invalidate()
    if any(not uri.endswith(MODULE_SUFFIXES) for uri in uris):
        ls.reanalyse_all()
        return
    for uri in uris:
        path = to_fs_path(uri)
        if path is not None and unquote(uri) not in ls.workspace.text_documents:
            ls.recheck_users(Path(path))


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def changed_configuration(ls: MclLanguageServer,
                                params: lsp.DidChangeConfigurationParams) -> None:
    if isinstance(params.settings, dict) and params.settings.get("mcl") is not None:
        ls.settings = ClientSettings.parse(params.settings)
    else:
        await ls.pull_settings()
    ls.libraries.invalidate()  # hwdPath may have changed
    ls.reanalyse_all()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: MclLanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
    # `edited`: a kernel that misses this module, or reads another text of it from
    # disk, is checked again with the buffer
    ls.schedule(params.text_document.uri, 0, edited=True)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: MclLanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, ls.settings.debounce_s, edited=True)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: MclLanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri, 0, edited=True)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: MclLanguageServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.close(params.text_document.uri)


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: MclLanguageServer, params: Any) -> None:
    ls.stop_worker()


# ---------------------------------------------------------------------- requests
# Each answers from the document's last results, in a few milliseconds; an exception is
# logged and answered with "nothing here", never with a dead server.


def _answer(ls: MclLanguageServer, what: str, uri: str, work: Callable[[], T]) -> T | None:
    """`work()`, its ranges in the client's units; None after logging an exception."""
    try:
        return ls.to_client(work(), uri)
    except Exception as exc:  # noqa: BLE001 - see above
        log.exception("%s failed", what)
        ls.window_log_message(lsp.LogMessageParams(
            lsp.MessageType.Error, f"mcl: internal error in {what}: {type(exc).__name__}: {exc}"))
        return None


def _from_last_good(ls: MclLanguageServer, uri: str, what: str,
                    work: Callable[[DocumentState, Path, CheckResult], T]) -> T | None:
    """`work(state, path, last good check)` for an open document that parsed once. Its
    answer's positions in the document are those of the good check's text: they are moved
    to the text now, and those on lines edited since are left out (mcl.lsp.shift)."""
    state = ls.documents.get(uri)
    path = _path(uri)
    if state is None or path is None or state.last_good is None:
        return None
    good = state.last_good
    return _answer(ls, what, uri,
                   lambda: ls.shift(uri, state).answer(work(state, path, good), uri))


def _in_last_good(ls: MclLanguageServer, uri: str, position: lsp.Position
                  ) -> tuple[lsp.Position, str] | None:
    """A request's `position` (client units) in the last good check's text, with that
    text; None on a line edited since (its tree knows nothing of what is there now)."""
    state = ls.documents.get(uri)
    if state is None or state.last_good is None:
        return None
    shift = ls.shift(uri, state)
    at = shift.request(ls.from_client(position, uri))
    return None if at is None else (at, shift.old_text)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def on_hover(ls: MclLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    found = _in_last_good(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    pos, source = found

    def work(state: DocumentState, path: Path, good: CheckResult) -> lsp.Hover | None:
        if is_hdl(path):
            text = hover.hdl_hover(good.hdl, good.library, pos.line, pos.character)
        else:
            text = hover.kernel_hover(good.program, good.tables, good.library,
                                      state.feedback, path, source, pos.line, pos.character)
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text)) if text else None

    return _from_last_good(ls, params.text_document.uri, "hover", work)


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def on_definition(ls: MclLanguageServer, params: lsp.DefinitionParams
                  ) -> lsp.Location | None:
    uri = params.text_document.uri
    found = _in_last_good(ls, uri, params.position)
    if found is None:
        return None
    pos, text = found

    def work(state: DocumentState, path: Path, good: CheckResult) -> lsp.Location | None:
        if is_hdl(path):
            return hdl_navigation.hdl_definition(good.hdl, good.library, pos.line,
                                                pos.character)
        return navigation.kernel_definition(good.program, good.tables, good.library, path,
                                            text, pos.line, pos.character)

    return _from_last_good(ls, uri, "definition", work)


def _target(ls: MclLanguageServer, uri: str, path: Path, good: CheckResult,
            position: lsp.Position) -> tuple[references.Target, Any] | None:
    if is_hdl(path) or good.program is None:
        return None
    pos = ls.from_client(position, uri)
    word = navigation.word_at(ls.workspace.get_text_document(uri).source, pos.line,
                              pos.character)
    return references.target_at(good.program, good.tables, path, word, pos.line,
                                pos.character)


def _parsed_now(ls: MclLanguageServer, uri: str) -> CheckResult | None:
    """The document's check when it is of the text now and parsed: only then do the
    positions of its tree stand where the names are (a rename edits those places)."""
    state = ls.documents.get(uri)
    if state is None or state.last_good is None or state.check is not state.last_good \
            or state.check_version != ls.workspace.get_text_document(uri).version:
        return None
    return state.last_good


def _importing_programs(ls: MclLanguageServer, uri: str, path: Path, target: references.Target,
                        library: Any
                        ) -> tuple[Callable[[], list[tuple[Any, SideTables]]], list[str]]:
    """What finds the programs, besides the document's, that contain `target`'s
    declaration: the other open documents' (their check of the text now) and those of
    the files on disk below the workspace folders and include path that import its
    module; returned as work for the check thread (the files on disk are checked there),
    with the names of the open importers whose text changed since it last parsed (their
    tree's places are not where the names stand now)."""
    span = getattr(target.node, "span", None)
    if target.kind == "variable" or span is None:
        return lambda: [], []
    declared_in = Path(span.file).resolve()
    open_files: set[Path] = set()
    found: list[tuple[Any, SideTables]] = []
    changed: list[str] = []
    for other_uri, state in ls.documents.items():
        other = _path(other_uri)
        if other is None:
            continue
        open_files.add(other.resolve())
        program = state.last_good.program if state.last_good is not None else None
        if other_uri == uri or program is None or not any(
                Path(f).resolve() == declared_in for f in program.files.values()):
            continue
        now = _parsed_now(ls, other_uri)
        if now is None:
            changed.append(other.name)
        else:
            found.append((program, now.tables))
    roots = [Path(p) for p in (to_fs_path(f.uri) for f in ls.workspace.folders.values())
             if p]
    if not roots and ls.workspace.root_path:
        roots = [Path(ls.workspace.root_path)]
    roots += [Path(d) for d in effective(ls.settings, path).include]

    descriptions = set(library.names()) if library is not None else set()

    def on_disk() -> list[tuple[Any, SideTables]]:
        for file in importers.importers(roots, declared_in, target.name, descriptions):
            if file in open_files:
                continue
            checked = check_document(file, effective(ls.settings, file), ls.libraries)
            if checked.program is not None and any(
                    Path(f).resolve() == declared_in for f in checked.program.files.values()):
                found.append((checked.program, checked.tables))
        return found

    return on_disk, changed


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: the request was valid, but what it asks for cannot be done
    (the client shows the message)."""

    CODE = -32803


def _no_symbol(ls: MclLanguageServer, uri: str, position: lsp.Position) -> JsonRpcException:
    """The error for a rename where no renamable name stands."""
    pos = ls.from_client(position, uri)
    word = navigation.word_at(ls.workspace.get_text_document(uri).source, pos.line,
                              pos.character)
    if word in KEYWORDS:
        return RequestFailed(f"'{word}' is a keyword of MCPL: nothing to rename")
    if word is not None:
        return RequestFailed(f"'{word}' is not a variable, constant, function or type of "
                             "this program (a built-in, a field, a description's name?)")
    return RequestFailed("no name to rename here")


def _current_target(ls: MclLanguageServer, uri: str, position: lsp.Position
                    ) -> tuple[Path, CheckResult, references.Target]:
    """The name to rename or find at `position` in the check of the text now, or the
    error that says why none."""
    state, path = ls.documents.get(uri), _path(uri)
    good = _parsed_now(ls, uri)
    if good is None and state is not None and state.last_good is not None:
        raise RequestFailed("the file changed since it last parsed: fix its syntax errors, "
                            "or try again once it is checked")
    found = _target(ls, uri, path, good, position) if path and good else None
    if path is None or good is None or found is None:
        raise _no_symbol(ls, uri, position)
    return path, good, found[0]


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
async def on_references(ls: MclLanguageServer, params: lsp.ReferenceParams
                        ) -> list[lsp.Location] | None:
    """The uses in this program and in every open or workspace file that imports the
    declaring module (those on disk are checked on the check thread; an open one whose
    text changed since it last parsed is left out, its places being out of date)."""
    uri = params.text_document.uri
    try:
        path, good, target = _current_target(ls, uri, params.position)
    except JsonRpcException:
        return None
    others, _ = _importing_programs(ls, uri, path, target, good.library)

    def work() -> list[lsp.Location]:
        spans = references.references(good.tables, target, [t for _, t in others()])
        if not params.context.include_declaration:
            spans = spans[1:]
        return references.locations(spans)

    return await asyncio.get_running_loop().run_in_executor(
        ls.checks, lambda: _answer(ls, "references", uri, work))


@server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
def on_prepare_rename(ls: MclLanguageServer, params: lsp.PrepareRenameParams
                      ) -> lsp.PrepareRenamePlaceholder | None:
    """The name under the cursor and its range, or an error that says why it cannot be
    renamed (a keyword, a built-in, no name)."""
    uri = params.text_document.uri
    _, _, target = _current_target(ls, uri, params.position)
    pos = ls.from_client(params.position, uri)
    line = ls.workspace.get_text_document(uri).source.split("\n")[pos.line]
    start = pos.character
    while start > 0 and (line[start - 1].isalnum() or line[start - 1] == "_"):
        start -= 1
    word = lsp.Range(lsp.Position(pos.line, start),
                     lsp.Position(pos.line, start + len(target.name)))
    return _answer(ls, "prepareRename", uri,
                   lambda: lsp.PrepareRenamePlaceholder(word, target.name))


@server.feature(lsp.TEXT_DOCUMENT_RENAME)
async def on_rename(ls: MclLanguageServer, params: lsp.RenameParams
                    ) -> lsp.WorkspaceEdit | None:
    """Every reference renamed (mcl.lsp.references), in this program and the files that
    import the declaring module, unless the new name would change what a name stands
    for there (mcl.lsp.rename): then an error the client shows, and nothing renamed."""
    problem = references.rename_problem(params.new_name)
    if problem is not None:
        raise JsonRpcInvalidParams(problem)
    uri = params.text_document.uri
    path, good, target = _current_target(ls, uri, params.position)
    assert good.program is not None  # _current_target found a name in it
    others, changed = _importing_programs(ls, uri, path, target, good.library)
    if changed:
        raise RequestFailed(f"{', '.join(changed)} changed since it last parsed: the uses "
                            "there cannot be renamed now")

    def work() -> tuple[lsp.WorkspaceEdit | None, str | None]:
        programs = others()
        for program, tables in [(good.program, good.tables), *programs]:
            binding = references.same_binding(tables, target) \
                if tables is not good.tables else target.binding
            why = rename.conflict(program, tables, binding, params.new_name) \
                if binding is not None else None
            if why is not None:
                return None, why
        spans = references.references(good.tables, target, [t for _, t in programs])
        return _answer(ls, "rename", uri,
                       lambda: references.rename_edit(spans, params.new_name)), None

    edit, why = await asyncio.get_running_loop().run_in_executor(ls.checks, work)
    if why is not None:
        raise JsonRpcInvalidParams(f"cannot rename '{target.name}' to "
                                   f"'{params.new_name}': {why}")
    return edit


def _from_kernel(ls: MclLanguageServer, uri: str, what: str,
                 work: Callable[[Path, CheckResult, Any, str], T]) -> T | None:
    """`work(path, last good check, module, text)` for an open kernel (not a
    description) that parsed once; `text` is the text that check was of (positions are
    moved to the text now by `_from_last_good`)."""
    def on_kernel(state: DocumentState, path: Path, good: CheckResult) -> T | None:
        module = module_at(good.program, path) if not is_hdl(path) else None
        if module is None:
            return None
        return work(path, good, module, state.last_good_text)

    return _from_last_good(ls, uri, what, on_kernel)


@server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
def on_folding(ls: MclLanguageServer, params: lsp.FoldingRangeParams
               ) -> list[lsp.FoldingRange] | None:
    uri = params.text_document.uri

    def work(state: DocumentState, path: Path, good: CheckResult
             ) -> list[lsp.FoldingRange] | None:
        text = ls.workspace.get_text_document(uri).source
        if is_hdl(path):
            blocks = hdl_navigation.block_spans(good.hdl) if good.hdl is not None else []
            return outline.folding_ranges(None, text, blocks)
        module = module_at(good.program, path)
        return outline.folding_ranges(module, text) if module is not None else None

    return _from_last_good(ls, uri, "foldingRange", work)


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
def on_highlight(ls: MclLanguageServer, params: lsp.DocumentHighlightParams
                 ) -> list[lsp.DocumentHighlight] | None:
    """The name under the cursor where it stands in this document: its declaration
    (write) and its uses (read), as the checker resolved them (mcl.lsp.references)."""
    uri = params.text_document.uri

    def work(state: DocumentState, path: Path, good: CheckResult
             ) -> list[lsp.DocumentHighlight] | None:
        found = _target(ls, uri, path, good, params.position)
        if found is None:
            return None
        spans = references.references(good.tables, found[0])
        return [lsp.DocumentHighlight(to_range(s), lsp.DocumentHighlightKind.Write if i == 0
                                      else lsp.DocumentHighlightKind.Read)
                for i, s in enumerate(spans) if same_file(s, path)]

    return _from_last_good(ls, uri, "documentHighlight", work)


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def on_code_lens(ls: MclLanguageServer, params: lsp.CodeLensParams
                 ) -> list[lsp.CodeLens] | None:
    uri = params.text_document.uri
    state = ls.documents.get(uri)
    feedback = state.feedback if state is not None else []
    return _from_kernel(ls, uri, "codeLens", lambda path, good, module, text:
                        lenses.code_lenses(module, feedback, good.library,
                                           effective(ls.settings, path).level))


@server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP,
                lsp.SignatureHelpOptions(trigger_characters=["(", ","]))
def on_signature_help(ls: MclLanguageServer, params: lsp.SignatureHelpParams
                      ) -> lsp.SignatureHelp | None:
    uri = params.text_document.uri
    pos = ls.from_client(params.position, uri)
    # the call being typed is read from the text now; the tree only names the functions
    return _from_kernel(ls, uri, "signatureHelp", lambda path, good, module, _:
                        outline.signature_help(good.program, module,
                                               ls.workspace.get_text_document(uri).source,
                                               pos.line, pos.character))


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
def on_inlay_hint(ls: MclLanguageServer, params: lsp.InlayHintParams
                  ) -> list[lsp.InlayHint] | None:
    first, last = params.range.start.line, params.range.end.line
    # hints of the whole tree, moved to the text now (those on edited lines left out)
    hints = _from_kernel(ls, params.text_document.uri, "inlayHint",
                         lambda path, good, module, text: inlay.inlay_hints(
                             module, good.library, effective(ls.settings, path).value_map,
                             0, sys.maxsize))
    return None if hints is None else [h for h in hints if first <= h.position.line <= last]


@server.feature(lsp.WORKSPACE_SYMBOL)
def on_workspace_symbol(ls: MclLanguageServer, params: lsp.WorkspaceSymbolParams
                        ) -> list[lsp.WorkspaceSymbol] | None:
    programs = [s.last_good.program for s in ls.documents.values()
                if s.last_good is not None and s.last_good.program is not None]
    # each symbol's range lies in its own file (`uri` is only the fallback)
    return _answer(ls, "workspace/symbol", "",
                   lambda: outline.workspace_symbols(programs, params.query))


async def _format(ls: MclLanguageServer, uri: str, options: lsp.FormattingOptions,
                  lines: tuple[int, int] | None) -> list[lsp.TextEdit] | None:
    """Formatting parses each rewritten definition again (mcl.lsp.formatting): on the
    check thread, never on the event loop. Indented as the client's `options` ask; only
    the definitions overlapping the 0-based `lines`, when given."""
    state, path = ls.documents.get(uri), _path(uri)
    document = ls.workspace.get_text_document(uri)
    if state is None or path is None or is_hdl(path):
        return None
    check = state.check
    if check is None or state.check_version != document.version or \
            check.program is None or check.errors:
        ls.window_log_message(lsp.LogMessageParams(
            lsp.MessageType.Info, "mcl: not formatted: the file has errors or is being "
            "checked"))
        return None
    module = module_at(check.program, path)
    if module is None:
        return None
    names = check.library.names() if check.library is not None else None
    source = document.source
    unit = formatting.indent_unit(options.tab_size, options.insert_spaces)
    edits = await asyncio.get_running_loop().run_in_executor(
        ls.checks, lambda: _answer(ls, "formatting", uri, lambda: formatting.format_edits(
            module, source, names, unit, lines)))
    return edits


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
async def on_formatting(ls: MclLanguageServer, params: lsp.DocumentFormattingParams
                        ) -> list[lsp.TextEdit] | None:
    return await _format(ls, params.text_document.uri, params.options, None)


@server.feature(lsp.TEXT_DOCUMENT_RANGE_FORMATTING)
async def on_range_formatting(ls: MclLanguageServer,
                              params: lsp.DocumentRangeFormattingParams
                              ) -> list[lsp.TextEdit] | None:
    lines = (params.range.start.line, params.range.end.line)
    return await _format(ls, params.text_document.uri, params.options, lines)


@server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, tokens.LEGEND)
def on_semantic_tokens(ls: MclLanguageServer, params: lsp.SemanticTokensParams
                       ) -> lsp.SemanticTokens | None:
    uri = params.text_document.uri

    def work() -> lsp.SemanticTokens | None:
        state, path = ls.documents.get(uri), _path(uri)
        if state is None or path is None:
            return None
        document = ls.workspace.get_text_document(uri)
        check = state.check if state.check_version == document.version else None
        units = ls.workspace.position_codec.client_num_units
        if is_hdl(path):
            hdl = check.hdl if check is not None else None
            good = state.last_good.hdl if state.last_good is not None else None
            return lsp.SemanticTokens(data=tokens.semantic_tokens(
                document.source, hdl_tokens.classify(hdl)[0] if hdl is not None else {},
                units, hdl_tokens.classify(good)[1] if good is not None else None,
                hdl_tokens.keywords(good or hdl), frozenset()))
        module = module_at(check.program, path) if check is not None else None
        kinds = tokens.classify(module, check.tables, check.library) \
            if module is not None and check is not None else {}
        # while the text does not parse: its names as the last good tree had them
        good_check = state.last_good
        old = module_at(good_check.program, path) \
            if module is None and good_check is not None else None
        known = tokens.names_of(old, good_check.tables, good_check.library) \
            if old is not None and good_check is not None else None
        return lsp.SemanticTokens(data=tokens.semantic_tokens(
            document.source, kinds, units, known))

    return _answer(ls, "semanticTokens", uri, work)


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def on_symbols(ls: MclLanguageServer, params: lsp.DocumentSymbolParams
               ) -> list[lsp.DocumentSymbol] | None:
    def work(state: DocumentState, path: Path, good: CheckResult
             ) -> list[lsp.DocumentSymbol] | None:
        if is_hdl(path):
            return navigation.hdl_symbols(good.hdl) if good.hdl is not None else None
        module = module_at(good.program, path)
        return navigation.kernel_symbols(module) if module is not None else None

    return _from_last_good(ls, params.text_document.uri, "documentSymbol", work)


# Clients ask for completion as a word is typed (identifier characters), which is when a
# name can be completed, and after `.`: the members of a description constant. A space
# or `(` is not a trigger.
@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["."]))
def on_completion(ls: MclLanguageServer, params: lsp.CompletionParams
                  ) -> list[lsp.CompletionItem] | None:
    uri = params.text_document.uri

    def work() -> list[lsp.CompletionItem] | None:
        path = _path(uri)
        if path is None:
            return None
        state = ls.documents.get(uri)
        good = state.last_good if state is not None else None
        if is_hdl(path):
            pos = ls.from_client(params.position, uri)
            return hdl_tokens.hdl_completions(
                good.hdl if good else None, good.library if good else None,
                ls.workspace.get_text_document(uri).source, pos.line, pos.character)
        library = good.library if good is not None else None
        if library is None:
            library = ls.libraries.get(effective(ls.settings, path).hwd_path)
        pos = ls.from_client(params.position, uri)
        text = ls.workspace.get_text_document(uri).source
        return completion.kernel_completions(good.program if good else None, library,
                                             effective(ls.settings, path).level, path,
                                             text, pos.line, pos.character)

    return _answer(ls, "completion", uri, work)


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION)
def on_code_action(ls: MclLanguageServer, params: lsp.CodeActionParams
                   ) -> list[lsp.CodeAction] | None:
    def work() -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        path = _path(uri)
        if path is None or is_hdl(path):
            return None
        state = ls.documents.get(uri)
        good = state.last_good if state else None
        text = ls.workspace.get_text_document(uri).source
        asked = ls.from_client(params.context.diagnostics, uri)
        found = actions.code_actions(uri, path, text, good, asked, effective(ls.settings, path))
        version = ls.workspace.get_text_document(uri).version
        if state is not None and state.offers is not None and version is not None \
                and state.offers[0] == version:  # never the offers of an older text
            found += refinement_actions.code_actions(
                uri, version, state.offers[1], ls.from_client(params.range, uri), asked)
        return found or None

    return _answer(ls, "codeAction", params.text_document.uri, work)


class OneLineFormatter(logging.Formatter):
    """One line per record: an exception (a malformed message, a failed analysis) is
    named with its type and text; the traceback only with MCL_DEBUG=1, so an editor's log
    stays readable whatever a client sends."""

    def format(self, record: logging.LogRecord) -> str:
        if os.environ.get("MCL_DEBUG"):
            return super().format(record)
        plain = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None})
        line = (super().format(plain).splitlines() or [""])[0]  # (pygls puts tracebacks
        if not record.exc_info:  # in some messages' text too)
            return line
        exc = record.exc_info[1]
        detail = (str(exc).splitlines() or [""])[0]
        return f"{line}: {type(exc).__name__}: {detail}"


def _warm_and_settle() -> None:
    """After the first publication: textX's metamodel, which the parse makes the first
    time a text does not parse (Arpeggio parses it again for the syntax error; some 30
    ms of CPU), is made now, off the first broken keystroke's path, and then kept out of
    the collector's way with the rest (mcl.lsp.heap)."""
    from mcl.mcpl.parse import tree_builder

    tree_builder().metamodel  # noqa: B018 - made on first use
    heap.settle()


def start(tcp: int | None = None, host: str = "127.0.0.1") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("mcl lsp: %(message)s"))
    handler.addFilter(OneLine())  # pygls' repeats of a record already logged are dropped
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    # Every edit parses the file again: reuse its definitions that did not change.
    from mcl.mcpl.parse import reuse_definitions

    reuse_definitions()
    if tcp is not None:
        server.start_tcp(host, tcp)
    else:
        server.start_io()
