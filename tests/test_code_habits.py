"""Habits of the code that a reader relies on: comments and messages cite the paper's
sections and the docs, never the project's issue numbers (an issue is closed and gone; the
reason it gave belongs in the comment or in docs/)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path
from typing import cast

ROOT = Path(__file__).resolve().parents[1]
ISSUE = re.compile(r"\b[Ii]ssues? \d+")


def test_no_issue_numbers_in_the_compiler_or_its_descriptions() -> None:
    cited = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for folder in ("mcl", "hwdescs")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".tx", ".hdl", ".toml", ".json"}
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ISSUE.search(line)
    ]
    assert cited == []


# Where `id()` may be hashed, and why. AST nodes compare by value and an `id()` in a memo
# outlives the object it names (the address is reused by the next allocation): a place in
# the tree is a key as `mcl.identity.Ref`, which holds the object, and an object that
# hashes by identity (an `eq=False` dataclass) is a key as it is.
ID_ALLOWED = {
    "mcl/identity.py": "Ref hashes the id() of the object it holds alive",
}


@cache
def compiler_trees() -> tuple[tuple[str, ast.Module], ...]:
    """Every module of `mcl/`, parsed once for the scans below: (path, tree)."""
    return tuple((str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8")))
                 for path in sorted((ROOT / "mcl").rglob("*.py")))


def id_calls(tree: ast.Module) -> list[int]:
    """Lines of the calls of the built-in `id` in `tree`."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "id"]


def test_id_calls_are_found() -> None:
    planted = "memo = {}\nmemo[id(node)] = 1\nseen = {id(x) for x in xs}\nkey = f'{id(e)}'\n"
    assert id_calls(ast.parse(planted)) == [2, 3, 4]
    assert id_calls(ast.parse("node.id = 1\nx = ids(y)\n")) == []


def test_no_id_keys_in_the_compiler() -> None:
    used = [f"{path}:{line}" for path, tree in compiler_trees() if path not in ID_ALLOWED
            for line in id_calls(tree)]
    assert used == []


def program_any(tree: ast.Module) -> list[int]:
    """Lines where a parameter or field named `program` is annotated `Any`: a program is a
    `Program`, a `Module` or a `CheckedProgram`, and mypy checks what is done with it."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.arg == "program":
            annotation = node.annotation
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.target.id == "program":
            annotation = node.annotation
        else:
            continue
        if annotation is not None and "Any" in ast.unparse(annotation):
            found.append(node.lineno)
    return sorted(found)


def test_program_any_is_found() -> None:
    planted = "def f(program: Any) -> None: ...\nclass C:\n    program: 'Any'\n" \
              "def g(program: Program, other: Any) -> None: ...\n"
    assert program_any(ast.parse(planted)) == [1, 3]


def test_no_program_is_typed_any() -> None:
    loose = [f"{path}:{line}" for path, tree in compiler_trees()
             for line in program_any(tree)]
    assert loose == []


def test_the_language_server_imports_nothing_from_the_commands() -> None:
    # docs/architecture.md, "Layers import downwards only": the server calls the pipeline
    # as `mcl check` does; a command's private helper is no API.
    imports = [
        f"{path}:{node.lineno}"
        for path, tree in compiler_trees() if path.startswith("mcl/lsp/")
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mcl.commands")
        or isinstance(node, ast.Import)
        and any(a.name.startswith("mcl.commands") for a in node.names)
    ]
    assert imports == []


# docs/architecture.md, "One traversal": a pass that chooses by the kind of a node
# says so with `match` (exhaustive over a closed union where mypy can check it), not with a
# chain of `isinstance` tests, which silently skips a kind it forgot.
LONGEST_CHAIN = 2


def _isinstance_subject(test: ast.expr) -> str | None:
    """The subject of `isinstance(subject, ...)` (or of the first test of an `and`, which
    a `case` with a guard says), unparsed; None for any other test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        test = test.values[0]
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) \
            and test.func.id == "isinstance" and test.args:
        return ast.unparse(test.args[0])
    return None


def _elif_chain(node: ast.If) -> tuple[str | None, int]:
    """The subject and length of the `if isinstance(x, ...)/elif isinstance(x, ...)` chain
    that starts at `node`."""
    subject, length = _isinstance_subject(node.test), 0
    current: ast.stmt = node
    while isinstance(current, ast.If) and subject is not None \
            and _isinstance_subject(current.test) == subject:
        length += 1
        if len(current.orelse) != 1:
            break
        current = current.orelse[0]
    return subject, length


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue))


def isinstance_chains(tree: ast.Module) -> list[int]:
    """Lines where a chain of more than LONGEST_CHAIN `isinstance` tests on one subject
    starts: `if/elif` chains, and runs of `if isinstance(x, ...): return ...` statements."""
    found: set[int] = set()
    inner: set[ast.AST] = set()  # the elif branches of a chain already counted (ast
    # nodes hash by identity)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node not in inner:
            subject, length = _elif_chain(node)
            current: ast.stmt = node
            for _ in range(length - 1):
                current = cast(ast.If, current).orelse[0]
                inner.add(current)
            if subject is not None and length > LONGEST_CHAIN:
                found.add(node.lineno)
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if not isinstance(statements, list):
                continue
            run_subject, run_start, run = None, 0, 0
            for stmt in statements + [ast.Pass()]:
                subject = _isinstance_subject(stmt.test) \
                    if isinstance(stmt, ast.If) and _exits(stmt.body) else None
                if subject is not None and subject == run_subject:
                    run += 1
                    continue
                if run > LONGEST_CHAIN:
                    found.add(run_start)
                run_subject, run_start, run = subject, getattr(stmt, "lineno", 0), 1
    return sorted(found)


def test_isinstance_chains_are_found() -> None:
    planted = (
        "def f(n):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    elif isinstance(n, B):\n        return 2\n"
        "    elif isinstance(n, C) and n.x:\n        return 3\n"
        "    elif isinstance(n, D):\n        return 4\n"
        "def g(n):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    if isinstance(n, B):\n        return 2\n"
        "    if isinstance(n, C):\n        return 3\n"
        "    if isinstance(n, D):\n        return 4\n"
        "    return 0\n"
        "def h(n, m):\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    elif isinstance(m, B):\n        return 2\n"
        "    elif isinstance(n, C):\n        return 3\n"
        "    elif isinstance(n, D):\n        return 4\n"
        "    x = 1\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    if isinstance(n, B):\n        return 2\n"
        "    y = 2\n"
        "    if isinstance(n, A):\n        return 1\n"
        "    if isinstance(n, B):\n        return 2\n"
        "    if isinstance(n, C):\n        return 3\n"
    )
    # Chains of three or more are found (f, g, the last run of h); h's chain broken by
    # `m` and its run of two are not.
    assert isinstance_chains(ast.parse(planted)) == [2, 11, 35]


def test_no_long_isinstance_chains_in_the_compiler() -> None:
    chains = [f"{path}:{line}" for path, tree in compiler_trees()
              for line in isinstance_chains(tree)]
    assert chains == []


# docs/architecture.md, "No hidden state": whatever a pass needs is passed to it. The
# state a module keeps between calls is listed here, each with why it is there; a new
# entry is a decision to write down, not a shortcut. Module state is a module-level name
# bound to an empty container (a store filled later) or rebound through `global`; a
# table written out in full is a constant, and a `functools.cache` memo of a function
# of its arguments is no state a caller can observe.
STATE_ALLOWED = {
    "mcl/feedback/budget.py:_open": "the time budget, one stack per thread: SymPy steps "
    "deep inside an analysis ask it whether time is up (the one deliberate exception)",
    "mcl/feedback/compiler_registers.py:_counter": "the command line hands feedback, "
    "which stands below the backends, the compiler's register counter",
    "mcl/feedback/compiler_instructions.py:_counter": "the command line hands feedback, "
    "which stands below the backends, the compiler's machine code per source line",
    "mcl/feedback/compiler_vectors.py:_finder": "the command line hands feedback, "
    "which stands beside code generation, the loops it issues as one wide access",
    "mcl/feedback/refinable.py:_teller": "a higher layer (the refinements) tells the "
    "default view which proposed changes it can make",
    "mcl/feedback/refinable.py:_told": "the names `_teller` gave, asked once",
    "mcl/feedback/program_view.py:_LAST_INFERRED": "the last program's inferred access "
    "modes (a weak reference): one inference per program, not per function",
    "mcl/feedback/analyses/functions.py:_MODULES": "a description's feedback-function "
    "module, imported once per file and modification time",
    "mcl/mcpl/ast.py:_NODE_FIELDS": "the fields of each node class, a memo",
    "mcl/mcpl/parse.py:_kept": "the language server's reuse of unchanged definitions",
    "mcl/source_files.py:_OVERLAYS": "the editor's unsaved buffers, read instead of disk",
    "mcl/plugins.py:_found": "the entry points, read once per process",
    "mcl/dataclass_code.py:_installed": "the table of compiled dataclass code installed "
    "at start-up",
    "mcl/feedback/facts/stable_dummies.py:_kept": "the editor's worker: the SymPy dummies "
    "of the last job, so that unchanged code gives the same expressions and hits the caches",
    "mcl/feedback/facts/stable_dummies.py:_made": "the dummies made so far in the worker's "
    "current job, by name (None outside a job)",
    "mcl/mcpl/symbolic_values.py:_PER_PROCESS": "the per-process caches of pure SymPy work, "
    "emptied together with SymPy's own",
    "mcl/lsp/worker.py:_busy": "the editor's worker process: whether a job runs",
    "mcl/lsp/worker.py:_last_offers": "the worker's last offers, for the next request",
    "mcl/lsp/worker.py:_last": "the worker's last analysed buffer",
    "mcl/lsp/worker.py:_kept": "the worker's findings of each kernel, bounded, for the "
    "next job's unchanged kernels",
    "mcl/lsp/heap.py:_settled": "whether this process moved what it loaded out of the "
    "garbage collector's way (once per process)",
    "mcl/tune/model.py:_job": "the tuning job a forked worker process inherits",
    "mcl/refine/device_check.py:_shared_queue": "one OpenCL queue for every check: a "
    "PoCL context costs a tenth of a second",
    "mcl/fuzz.py:_warmed": "the stand-alone fuzzer imports the heavy modules once",
}


def module_state(tree: ast.Module) -> list[str]:
    """Names `tree` keeps as module state: bound at module level to an empty list, dict or
    set (a literal or a call of the type), to a thread's own store (`threading.local()`
    or a class of the module derived from it), or rebound by a `global` statement."""
    found: set[str] = set()
    stores = {"local"} | {node.name for node in tree.body if isinstance(node, ast.ClassDef)
                          and any(ast.unparse(base) in {"threading.local", "local"}
                                  for base in node.bases)}
    for node in tree.body:
        value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        empty = isinstance(value, ast.List | ast.Set) and not value.elts \
            or isinstance(value, ast.Dict) and not value.keys \
            or isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
            and value.func.id in {"list", "dict", "set"} and not value.args
        empty |= isinstance(value, ast.Call) and not value.args \
            and ast.unparse(value.func).removeprefix("threading.") in stores
        if empty:
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    found |= {name for node in ast.walk(tree) if isinstance(node, ast.Global)
              for name in node.names}
    return sorted(found)


def test_module_state_is_found() -> None:
    planted = ("TABLE = {'a': 1}\n_memo: dict[str, int] = {}\n_stack = []\nseen = set()\n"
               "_n = 0\ndef f():\n    global _n\n    _n += 1\n    local = []\n"
               "class Own(threading.local):\n    pass\n_own = Own()\n"
               "_plain = threading.local()\n_thing = Thing()\n")
    assert module_state(ast.parse(planted)) == ["_memo", "_n", "_own", "_plain", "_stack",
                                                "seen"]


def test_module_state_is_listed_with_its_reason() -> None:
    found = {f"{path}:{name}" for path, tree in compiler_trees()
             for name in module_state(tree)}
    assert sorted(found - set(STATE_ALLOWED)) == [], "module state: list it, with why"
    assert sorted(set(STATE_ALLOWED) - found) == [], "gone: remove it from STATE_ALLOWED"


# docs/architecture.md, "Type-checked": a `type: ignore` names the error it silences, so
# that mypy (warn_unused_ignores) says when it is no longer needed and a new error on the
# same line is not hidden by it; and a comment beside it (after the ignore) or on the line
# above says why the checker cannot see the type.
IGNORE = re.compile(r"#\s*type:\s*ignore(?P<code>\[[^\]]*\])?(?P<rest>.*)$")


def ignores(lines: list[str]) -> list[tuple[int, bool, bool]]:
    """(line, names an error code, says why) of each `type: ignore` in `lines`."""
    found = []
    for n, line in enumerate(lines, 1):
        m = IGNORE.search(line)
        if m:
            above = lines[n - 2].strip() if n > 1 else ""
            found.append((n, m["code"] is not None,
                          "#" in m["rest"] or above.startswith("#")))
    return found


def test_ignores_are_found_with_their_code_and_reason() -> None:
    planted = ["x = f()  # type: ignore", "# why", "y = g()  # type:ignore[arg-type]",
               "z = h()  # type: ignore[misc]  # why", "w = k()  # type: ignore[misc]"]
    assert ignores(planted) == [(1, False, False), (3, True, True), (4, True, True),
                                (5, True, False)]


def test_every_type_ignore_names_its_error_code_and_says_why() -> None:
    bare, unexplained = [], []
    for path in sorted((ROOT / "mcl").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for n, code, why in ignores(path.read_text(encoding="utf-8").splitlines()):
            if not code:
                bare.append(f"{rel}:{n}")
            if not why:
                unexplained.append(f"{rel}:{n}")
    assert bare == []
    assert unexplained == []


# docs/architecture.md, "Layers import downwards only": options are parsed by the
# commands, which hand typed values to the stages.
ARGPARSE_ALLOWED = ("mcl/commands/", "mcl/cli.py", "mcl/fuzz.py")


def test_argparse_only_in_the_commands() -> None:
    users = [path for path, tree in compiler_trees()
             if not path.startswith(ARGPARSE_ALLOWED)
             for node in ast.walk(tree)
             if isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names)
             or isinstance(node, ast.ImportFrom) and node.module == "argparse"]
    assert users == []


# docs/architecture.md, "Adding a leaf description": no Python module of the compiler
# changes for a new leaf. A module that names a leaf (a string that is exactly its name)
# is listed here with why; none of them must change when a leaf is added.
LEAF_NAMES_ALLOWED = {
    "mcl/detect/match.py": "`mcl hwd detect`'s device names per leaf (a new leaf that a "
    "machine should be recognised as may add a row)",
    "mcl/detect/generate.py": "a detected NVIDIA GPU of compute capability 9 specialises "
    "hopper and gets its feedback functions",
    "mcl/fuzz.py": "the fuzzer's vocabulary and its choice of targets to run",
    "mcl/commands/demo.py": "the demo runs on the CPU leaf the bundled PoCL serves",
}


def leaf_names() -> set[str]:
    """The leaves of the bundled library with a mapping to a backend."""
    return {path.name.split(".")[0] for path in (ROOT / "hwdescs").glob("*.*.toml")}


def named_leaves(tree: ast.Module, leaves: set[str]) -> list[str]:
    return sorted({node.value for node in ast.walk(tree)
                   if isinstance(node, ast.Constant) and node.value in leaves})


def test_leaf_names_are_found() -> None:
    planted = 'def f(t="fermi"):\n    """fermi"""\n    return t == "hopper" or "a fermi"\n'
    assert named_leaves(ast.parse(planted), {"fermi", "hopper"}) == ["fermi", "hopper"]
    assert {"fermi", "hopper", "x86_avx512", "xeon_phi"} <= leaf_names()


def test_no_module_of_the_compiler_names_a_leaf_but_those_listed() -> None:
    leaves = leaf_names()
    naming = {path for path, tree in compiler_trees() if named_leaves(tree, leaves)}
    assert sorted(naming - set(LEAF_NAMES_ALLOWED)) == []
    assert sorted(set(LEAF_NAMES_ALLOWED) - naming) == []


# docs/architecture.md, "Adding a feedback analysis": one module and one test. Each
# module of mcl/feedback/analyses/ has a test module of its name in tests/feedback/
# (`test_<name>.py`, or `test_<name>_<aspect>.py` where its tests are split by aspect).
def test_every_feedback_analysis_has_its_test_module() -> None:
    analyses = sorted(p.stem for p in (ROOT / "mcl" / "feedback" / "analyses").glob("*.py")
                      if p.stem != "__init__")
    tests = [p.stem for p in (ROOT / "tests" / "feedback").glob("test_*.py")]
    assert len(analyses) >= 10
    untested = [a for a in analyses
                if not any(t == f"test_{a}" or t.startswith(f"test_{a}_") for t in tests)]
    assert untested == []


# docs/architecture.md, "textX only parses; the AST is ours": the parsers' modules are
# the only ones that import textX or its Arpeggio; every later stage sees dataclasses.
PARSER_MODULES = ("mcl/hdl/syntax.py", "mcl/mcpl/parse.py", "mcl/mcpl/peg.py",
                  "mcl/mcpl/tree.py")


def test_only_the_parsers_import_textx() -> None:
    importers = sorted({path for path, tree in compiler_trees() for node in ast.walk(tree)
                        if isinstance(node, ast.Import)
                        and any(a.name.split(".")[0] in {"textx", "arpeggio"}
                                for a in node.names)
                        or isinstance(node, ast.ImportFrom)
                        and (node.module or "").split(".")[0] in {"textx", "arpeggio"}})
    assert "mcl/hdl/syntax.py" in importers
    assert sorted(set(importers) - set(PARSER_MODULES)) == []


# docs/architecture.md, "The pipeline": no stage mutates its input, because the AST is
# made of frozen dataclasses; nodes compare by value with their spans left out (the parse
# cache, the editor's reuse of definitions and the feedback's memo keys rely on it).
def test_the_ast_is_frozen_dataclasses_that_compare_without_spans() -> None:
    import dataclasses

    from mcl.mcpl import ast as mcpl_ast

    assert len(mcpl_ast.NODE_CLASSES) >= 20
    for cls in mcpl_ast.NODE_CLASSES:
        assert dataclasses.is_dataclass(cls), cls
        assert cls.__dataclass_params__.frozen, cls  # set by @dataclass
        spans = [f for f in dataclasses.fields(cls) if f.name == "span"]
        assert spans and not spans[0].compare, cls
