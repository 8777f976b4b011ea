"""The pygls server of `mcl lsp` (docs/editor.md).

Every edit schedules an analysis of its document after a short debounce (`mcl.debounceMs`,
200 ms by default; none on open and save). The analysis has two stages:

1. the quick check (mcl.lsp.analysis) on a thread of its own, whose diagnostics are
   published at once;
2. after a clean check, performance feedback in the worker process (mcl.lsp.worker),
   published with the check's diagnostics when it is done. A newer edit of the document
   cancels the stage it is in; the worker is interrupted.

Requests (hover, definition, ...) read the last results of the document and never wait
for the feedback. No pass ever runs on the event loop, so the loop always answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from mcl import __version__
from mcl.lsp import actions, completion, hover, navigation
from mcl.lsp.analysis import CheckResult, Libraries, check_document, is_hdl
from mcl.lsp.config import ClientSettings, effective
from mcl.lsp.convert import diagnostic, feedback_diagnostic, same_file
from mcl.lsp.lookup import module_at
from mcl.lsp.worker import FeedbackJob, FeedbackResult, FeedbackWorker, MessageRecord
from mcl.source_files import set_overlay

log = logging.getLogger("mcl.lsp")

T = TypeVar("T")


@dataclass
class DocumentState:
    """What the server knows of one open document."""

    check: CheckResult | None = None
    last_good: CheckResult | None = None  # the last check whose program parsed
    feedback: list[MessageRecord] = field(default_factory=list)
    check_diagnostics: list[lsp.Diagnostic] = field(default_factory=list)
    task: asyncio.Task | None = None
    feedback_running: bool = False


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


class MclLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("mcl", __version__)
        self.settings = ClientSettings()
        self.libraries = Libraries()
        self.documents: dict[str, DocumentState] = {}
        self.checks = _deep_executor()
        self._worker: FeedbackWorker | None = None

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
        if state.task is not None and not state.task.done():
            state.task.cancel()
        if state.feedback_running:
            self.worker.cancel()
            self.window_log_message(lsp.LogMessageParams(
                lsp.MessageType.Log, f"mcl: feedback cancelled, {uri} changed"))
        state.task = asyncio.ensure_future(self._analyse(uri, delay, edited))

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

    async def _run_analysis(self, uri: str, edited: bool) -> None:
        document = self.workspace.get_text_document(uri)
        if document.path is None:
            return
        path = Path(document.path)
        version = document.version
        set_overlay(path, document.source)
        if is_hdl(path):
            self.libraries.invalidate()  # kernels see the edited description
        settings = effective(self.settings, path)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(self.checks, check_document, path, settings,
                                            self.libraries)
        state = self.state(uri)
        state.check = result
        if result.program is not None or result.hdl is not None:
            state.last_good = result
        state.feedback = []
        state.check_diagnostics = [diagnostic(d, path) for d in result.diagnostics]
        self._publish(uri, version, state.check_diagnostics)
        if edited:
            self._recheck_users(path)
        if is_hdl(path):
            return
        if result.errors or not self.settings.feedback:
            return
        job = FeedbackJob(
            path=str(path),
            overlays=tuple(self._overlays()),
            hwd_path=settings.hwd_path,
            include=settings.include,
            level=settings.level,
            values=settings.values,
        )
        state.feedback_running = True
        try:
            feedback: FeedbackResult = await loop.run_in_executor(None, self.worker.run, job)
        finally:
            state.feedback_running = False
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
            *(diagnostic(d, path) for d in feedback.diagnostics),
            # what `mcl check` shows without -v; the rest is on hover over the access
            *(feedback_diagnostic(m) for m in state.feedback if m.shown_by_default)])

    def _recheck_users(self, changed: Path) -> None:
        """Check the open kernels that use `changed` again: every kernel for a
        description (any may use it), those importing it for a module. Not cascading:
        only an edit starts this."""
        target = changed.resolve()
        for uri, state in list(self.documents.items()):
            document = self.workspace.get_text_document(uri)
            if document.path is None or is_hdl(Path(document.path)):
                continue
            if Path(document.path).resolve() == target:
                continue
            program = state.last_good.program if state.last_good is not None else None
            files = program.files.values() if program is not None else ()
            if is_hdl(changed) or any(Path(f).resolve() == target for f in files):
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
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

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
            self._recheck_users(Path(document.path))  # they read the file on disk again
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
            self.settings = ClientSettings.parse(answer[0])


server = MclLanguageServer()


def _path(uri: str) -> Path | None:
    document = server.workspace.get_text_document(uri)
    return Path(document.path) if document.path is not None else None


@server.feature(lsp.INITIALIZE)
def initialize(ls: MclLanguageServer, params: lsp.InitializeParams) -> None:
    if params.initialization_options:
        ls.settings = ClientSettings.parse(params.initialization_options)


@server.feature(lsp.INITIALIZED)
async def initialized(ls: MclLanguageServer, params: lsp.InitializedParams) -> None:
    await ls.pull_settings()
    ls.worker  # noqa: B018 - start the feedback worker now: it warms up while you type
    ls.reanalyse_all()


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
    ls.schedule(params.text_document.uri, 0)


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
    if ls._worker is not None:
        ls._worker.close()


# After `exit`, pygls closes its streams and calls sys.exit, which waits for every thread:
# an analysis of a large document could keep the process alive for minutes. The editor
# expects the server gone, so a daemon timer ends the process if it still runs then.
EXIT_GRACE_S = 0.5


@server.feature(lsp.EXIT)
def on_exit(ls: MclLanguageServer, params: Any) -> None:
    code = 0 if getattr(ls.protocol, "_shutdown", False) else 1
    timer = threading.Timer(EXIT_GRACE_S, os._exit, args=(code,))
    timer.daemon = True
    timer.start()


# ---------------------------------------------------------------------- requests
# Each answers from the document's last results, in a few milliseconds; an exception is
# logged and answered with "nothing here", never with a dead server.


def _answer(ls: MclLanguageServer, what: str, work: Any) -> Any:
    try:
        return work()
    except Exception as exc:  # noqa: BLE001 - see above
        log.exception("%s failed", what)
        ls.window_log_message(lsp.LogMessageParams(
            lsp.MessageType.Error, f"mcl: internal error in {what}: {type(exc).__name__}: {exc}"))
        return None


def _from_last_good(ls: MclLanguageServer, uri: str, what: str,
                    work: Callable[[DocumentState, Path, CheckResult], T]) -> T | None:
    """`work(state, path, last good check)` for an open document that parsed once."""
    state = ls.documents.get(uri)
    path = _path(uri)
    if state is None or path is None or state.last_good is None:
        return None
    good = state.last_good
    return _answer(ls, what, lambda: work(state, path, good))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def on_hover(ls: MclLanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
    pos = params.position

    def work(state: DocumentState, path: Path, good: CheckResult) -> lsp.Hover | None:
        if is_hdl(path):
            text = hover.hdl_hover(good.hdl, good.library, pos.line, pos.character)
        else:
            text = hover.kernel_hover(good.program, good.library, state.feedback, path,
                                      pos.line, pos.character)
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text)) if text else None

    return _from_last_good(ls, params.text_document.uri, "hover", work)


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def on_definition(ls: MclLanguageServer, params: lsp.DefinitionParams
                  ) -> lsp.Location | None:
    pos, uri = params.position, params.text_document.uri

    def work(state: DocumentState, path: Path, good: CheckResult) -> lsp.Location | None:
        if is_hdl(path):
            return navigation.hdl_definition(good.hdl, good.library, pos.line, pos.character)
        text = ls.workspace.get_text_document(uri).source
        return navigation.kernel_definition(good.program, good.library, path, text,
                                            pos.line, pos.character)

    return _from_last_good(ls, uri, "definition", work)


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


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=[" ", "("]))
def on_completion(ls: MclLanguageServer, params: lsp.CompletionParams
                  ) -> list[lsp.CompletionItem] | None:
    def work() -> list[lsp.CompletionItem] | None:
        path = _path(params.text_document.uri)
        if path is None or is_hdl(path):
            return None
        state = ls.documents.get(params.text_document.uri)
        good = state.last_good if state is not None else None
        library = good.library if good is not None else None
        if library is None:
            library = ls.libraries.get(effective(ls.settings, path).hwd_path)
        pos = params.position
        return completion.kernel_completions(good.program if good else None, library,
                                             effective(ls.settings, path).level, path,
                                             pos.line, pos.character)

    return _answer(ls, "completion", work)


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION)
def on_code_action(ls: MclLanguageServer, params: lsp.CodeActionParams
                   ) -> list[lsp.CodeAction] | None:
    def work() -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        path = _path(uri)
        if path is None or is_hdl(path):
            return None
        state = ls.documents.get(uri)
        program = state.last_good.program if state and state.last_good else None
        text = ls.workspace.get_text_document(uri).source
        return actions.code_actions(uri, path, text, program, params.context.diagnostics,
                                    effective(ls.settings, path)) or None

    return _answer(ls, "codeAction", work)


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


def start(tcp: int | None = None, host: str = "127.0.0.1") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(OneLineFormatter("mcl lsp: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    if tcp is not None:
        server.start_tcp(host, tcp)
    else:
        server.start_io()
