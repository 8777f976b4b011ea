"""Performance feedback functions (the paper's 6.5; feedback.md analysis 7).

"A performance feedback function is automatically called by the compiler when encountered
in a hardware description." A block of a description names one with
`performance_feedback("NAME");`; NAME is a Python function `NAME(kernel) -> messages`
(`kernel` is a `mcl.feedback.kernel_api.Kernel`) found, in this order:

1. in `<description>_feedback.py` next to the `.hdl` file of the description analysed
   (a user description in a `--hwd-path` folder brings its own module);
2. in `<stem>_feedback.py` next to the `.hdl` file the naming block was written in (a
   block reused from `nvidia.hdl` finds its function in `nvidia_feedback.py`);
3. through the entry-point group `mcl.feedback_functions` of installed packages, under
   the entry point's name NAME (`myfn = "mypkg.feedback:myfn"`);
4. among the bundled implementations (`hwdescs/*_feedback.py`), `<description>_feedback.py`
   first: a user folder that copies the original MCL's descriptions names functions mcl
   ships (`load_store_optimality`, `shared_mem_parallelism`) without bringing modules.

A function returns nothing (or ""), a string, a `Message` (`kernel.message(...)`), a
finding (`mcl.feedback.findings`: what `mcl.feedback.lockstep` and
`mcl.feedback.occupancy` build for the bundled functions), or an iterable of those.
Problems never stop `mcl check`: a missing function, a module that does not import, a
function that raises, or a value the user did not give become warnings that say what to
do.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from mcl.feedback.analysis import AnalysisContext
from mcl.feedback.budget import budget, default_seconds
from mcl.feedback.findings import FUNCTIONS_DOCS, Finding, finding_of
from mcl.feedback.kernel_api import Kernel, MissingValues, NotStatic, OutOfTime
from mcl.feedback.message_code import MessageCode
from mcl.feedback.messages import FeedbackSeverity, Message
from mcl.hdl.model import DeviceNode, HardwareDescription
from mcl.plugins import entry_points

# The codes of this analysis (mcl.feedback.codes; the catalogue is docs/feedback.md).
DOCS = FUNCTIONS_DOCS  # its section of docs/feedback.md
MESSAGE_CODES = (
    MessageCode("function-needs-values", "feedback function needs values",
                (FeedbackSeverity.WARNING,), DOCS),
    MessageCode("function-missing", "feedback function not found",
                (FeedbackSeverity.WARNING,), DOCS),
    MessageCode("function-module-error", "feedback function module does not load",
                (FeedbackSeverity.WARNING,), DOCS),
    MessageCode("function-failed", "feedback function failed", (FeedbackSeverity.WARNING,), DOCS),
    MessageCode("function-not-static", "feedback function cannot complete",
                (FeedbackSeverity.WARNING,), DOCS),
)


ENTRY_POINT_GROUP = "mcl.feedback_functions"
MODULE_SUFFIX = "_feedback.py"

FeedbackFunction = Callable[[Kernel], Any]


class ModuleLoadError(Exception):
    """A feedback module exists but cannot be imported."""

    def __init__(self, path: Path, cause: BaseException):
        self.path = path
        self.cause = cause
        super().__init__(f"{path}: {type(cause).__name__}: {cause}")


def candidate_modules(hwd: HardwareDescription, node: DeviceNode | None) -> list[Path]:
    """The module files searched for a function named by `node` in `hwd`, in order."""
    paths: list[Path] = []
    if hwd.file:
        own = Path(hwd.file)
        paths.append(own.with_name(hwd.name + MODULE_SUFFIX))
    written = node.span.file if node is not None and node.span is not None else None
    if written:
        source = Path(written)
        paths.append(source.with_name(source.stem + MODULE_SUFFIX))
    return list(dict.fromkeys(paths))


_MODULES: dict[tuple[str, float], ModuleType] = {}


def load_module(path: Path) -> ModuleType:
    """Import a feedback module by file (cached while the file does not change)."""
    key = (str(path.resolve()), path.stat().st_mtime)
    if key in _MODULES:
        return _MODULES[key]
    digest = hashlib.sha1(key[0].encode()).hexdigest()[:10]
    name = f"mcl_feedback_functions_{path.stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModuleLoadError(path, ImportError("not a Python module"))
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - a user's module: report, never crash
        raise ModuleLoadError(path, exc) from exc
    for old in [k for k in _MODULES if k[0] == key[0]]:
        del _MODULES[old]  # the module as it was before the file changed: one per file
    _MODULES[key] = module
    return module


def find_function(name: str, hwd: HardwareDescription, node: DeviceNode | None = None
                  ) -> tuple[FeedbackFunction | None, list[str]]:
    """The function `name` and the places searched (for the message when it is missing).
    Raises ModuleLoadError for a module that exists but does not import."""
    searched: list[str] = []
    for path in candidate_modules(hwd, node):
        searched.append(str(path))
        if not path.is_file():
            continue
        fn = getattr(load_module(path), name, None)
        if callable(fn):
            return fn, searched
    searched.append(f"entry points '{ENTRY_POINT_GROUP}'")
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == name:
            try:
                fn = ep.load()
            except Exception as exc:  # noqa: BLE001 - a broken package: report it
                raise ModuleLoadError(Path(ep.value), exc) from exc
            if callable(fn):
                return fn, searched
    for path in bundled_modules(hwd):
        if path in candidate_modules(hwd, node):
            continue
        searched.append(str(path))
        fn = getattr(load_module(path), name, None)
        if callable(fn):
            return fn, searched
    return None, searched


def bundled_modules(hwd: HardwareDescription) -> list[Path]:
    """The bundled feedback modules, the one named after `hwd` first (the paper's 6.5:
    functions belong to descriptions, and a same-named description is the best match)."""
    from mcl.resources import hwdescs_dir

    modules = sorted(hwdescs_dir().glob("*" + MODULE_SUFFIX))
    own = [p for p in modules if p.name == hwd.name + MODULE_SUFFIX]
    return own + [p for p in modules if p not in own]


def as_findings(result: Any, kernel: Kernel) -> list[Finding]:
    """What a feedback function returned, as findings."""
    if result is None or result == "":
        return []
    match result:
        case Message() | Finding():
            return [finding_of(result)]
        case str():
            return [Finding(kernel.message(result))]
        case Iterable():
            out: list[Finding] = []
            for item in result:
                out += as_findings(item, kernel)
            return out
    raise TypeError(f"returned {type(result).__name__}; expected a str, a Message, a "
                    "Finding, or a list of them")


def _where(node: DeviceNode | None) -> str:
    if node is None or node.span is None:
        return ""
    return f" (named by {node.path} in {Path(node.span.file).name}:{node.span.line})"


def _needs_values(kernel: Kernel, functions: list[str], names: list[str]) -> Finding:
    given = " ".join(f"-D {n}=..." for n in names)
    text = (f"performance feedback function {functions[0]} needs a value for "
            f"{', '.join(names)} to complete its analysis" if len(functions) == 1 else
            f"performance feedback functions {', '.join(functions)} need a value for "
            f"{', '.join(names)} to complete their analyses")
    return Finding(kernel.message(text, severity=FeedbackSeverity.WARNING,
                                  code="function-needs-values",
                                  hint=f"give it on the command line: {given}"))


def call_function(name: str, fn: FeedbackFunction, kernel: Kernel,
                  needs: dict[str, tuple[str, ...]] | None = None) -> list[Finding]:
    """Call one feedback function; its failures become warnings. The names of values it
    needs go into `needs` (by function) when given, for one request for all functions."""
    where = _where(kernel.node)
    try:
        return as_findings(fn(kernel), kernel)
    except MissingValues as exc:
        if needs is not None:
            needs[name] = exc.names
            return []
        return [_needs_values(kernel, [name], list(exc.names))]
    except OutOfTime:
        return []  # the caller reports it (feedback_function_messages)
    except NotStatic as exc:
        return [Finding(kernel.message(
            f"performance feedback function {name} cannot complete its analysis: {exc}",
            severity=FeedbackSeverity.WARNING, code="function-not-static"))]
    except Exception as exc:  # noqa: BLE001 - a user's function: report, never crash
        return [Finding(kernel.message(
            f"performance feedback function {name}{where} failed: "
            f"{type(exc).__name__}: {exc}", severity=FeedbackSeverity.WARNING,
            code="function-failed"))]


def feedback_function_findings(facts: Any, values: Mapping[str, Any]) -> list[Finding]:
    """Call every function the description names, in the order it names them."""
    hwd = facts.hwd
    findings: list[Finding] = []
    needs: dict[str, tuple[str, ...]] = {}
    with budget(FUNCTIONS_BUDGET * default_seconds()) as spending:
        for name, node in hwd.feedback_functions():
            spending.cut = False
            found = _function_findings(facts, values, name, node, needs)
            if spending.cut:  # nothing it found: it may rest on what it did not reach
                found = [Finding(Kernel(facts, values, node, name).message(
                    f"not analysed by performance feedback function {name}: it ran out of "
                    f"its time budget ({spending.seconds:g} s of CPU time, for all the "
                    "description's functions together) and was stopped",
                    severity=FeedbackSeverity.WARNING, code="feedback-budget",
                    hint="set MCL_FEEDBACK_BUDGET=SECONDS for a larger budget"))]
            findings += found
    if needs:  # one request for every function that needs values (fermi's two: one warning)
        kernel = Kernel(facts, values, None, "")
        findings.append(_needs_values(kernel, list(needs),
                                      sorted(set().union(*needs.values()))))
    return findings


# The feedback functions of one kernel may use this many times the budget of the
# analyses (mcl.feedback.budget) together: a function decides each warp's lanes one by one
# (mcl.feedback.lockstep), seconds for the shipped kernels' largest blocks, and has no
# cheap fallback but stopping.
FUNCTIONS_BUDGET = 5


def _function_findings(facts: Any, values: Mapping[str, Any], name: str, node: DeviceNode,
                       needs: dict[str, tuple[str, ...]]) -> list[Finding]:
    """The findings of one function the description names (or why there are none)."""
    hwd = facts.hwd
    kernel = Kernel(facts, values, node, name)
    try:
        fn, searched = find_function(name, hwd, node)
    except ModuleLoadError as exc:
        return [Finding(kernel.message(
            f"cannot load the module of performance feedback function {name}: {exc}",
            severity=FeedbackSeverity.WARNING, code="function-module-error"))]
    if fn is None:
        return [Finding(kernel.message(
            f"{hwd.name} names performance feedback function {name}{_where(node)}, but "
            "no Python function of that name was found", severity=FeedbackSeverity.WARNING,
            code="function-missing", hint="looked in " + "; ".join(searched)))]
    return call_function(name, fn, kernel, needs)


def names_functions(hwd: HardwareDescription) -> bool:
    return bool(hwd.feedback_functions())


def feedback_functions_analysis(ctx: AnalysisContext) -> list[Finding]:
    """Call the performance feedback functions the description names (paper 6.5)."""
    return feedback_function_findings(ctx.facts, ctx.values)
