"""A text whose edit broke one definition (mcl.mcpl.syntax_region, mcl.lsp.broken_check):
its syntax error is the whole-file parse's, found by parsing only the definitions the edit
touched, and its diagnostics are that error and the last good check's diagnostics of the
other definitions at their lines now -- what a fresh check of the text with the edited
definition as it was says of them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from benchmarks.bench_lsp_typing import DEFAULT, TYPED, body_start, module_of
from mcl.diagnostics import Diagnostic, MclError
from mcl.lsp.analysis import CheckResult, Libraries, check_document
from mcl.lsp.broken_check import check_with_kept
from mcl.lsp.config import Effective
from mcl.mcpl import parse
from mcl.source_files import set_overlay

from .conftest import (
    KERNELS,
    close_document,
    make_client_fixture,
    open_document,
    replace_text,
    wait_for,
)

client = make_client_fixture({"feedback": False})

# An unused variable in each function, and in `c` a name declared twice, whose hint names
# the line of the first declaration (a line below the edits, which must move with them).
MODULE = """\
const int K = 3;

perfect void a(int n, int[n] out) {
  foreach (int i in n threads) {
    int u = 1;
    out[i] = 0;
  }
}

perfect void b(int n, int[n] out) {
  foreach (int i in n threads) {
    int w = 1;
    out[i] = K;
  }
}

perfect void c(int n, int[n] out) {
  foreach (int i in n threads) {
    int v = 2;
    out[i] = v;
    int v = 3;
  }
}
"""
# (the function, the text broken in it: each adds lines, or none)
BREAKS = [("b", MODULE.replace("    int w = 1;\n", "    int w = 1;\n    float x\n    y = 2;\n")),
          ("b", MODULE.replace("out[i] = K;", "out[i] = K +;")),
          ("a", MODULE.replace("    int u = 1;\n", "    int u = 1;\n    int q = (1 + ;\n")),
          ("c", MODULE.replace("out[i] = v;", "out[i] = v v;")),
          ("K", MODULE.replace("const int K = 3;", "const int K = 3 3;"))]


def _lines_of(text: str, name: str) -> tuple[int, int]:
    """The first and last line (1-based) of the top-level definition of `name`."""
    start = re.search(rf"^\S.*\b{name}\b.*$", text, re.MULTILINE)
    assert start is not None
    first = text.count("\n", 0, start.start()) + 1
    end = text.index("\n}\n", start.start()) + 2 if "(" in start.group() \
        else text.index(";", start.start())
    return first, text.count("\n", 0, end) + 1


def _expected(good: list[Diagnostic], syntax: Diagnostic, lines: tuple[int, int],
              added: int) -> list[Diagnostic]:
    """The fresh check's diagnostics of the other definitions, moved by `added` lines
    below the edited one (and so the lines their words name), and the syntax error."""
    first, last = lines
    found = [syntax]
    for d in good:
        assert d.span is not None
        if first <= d.span.line <= last:
            continue
        if d.span.line > last:
            d = Diagnostic(d.severity, d.code, d.message, type(d.span)(
                d.span.file, d.span.line + added, d.span.column, d.span.end_line + added,
                d.span.end_column), re.sub(r"line (\d+)", lambda m: f"line {int(m[1]) + added}",
                                           d.hint or ""), d.notes)
        found.append(d)
    return found


def _fresh(path: Path, text: str) -> CheckResult:
    """A check that reuses nothing: no kept definitions, a new library."""
    parse.reuse_definitions(False)
    set_overlay(path, text)
    try:
        return check_document(path, Effective(), Libraries())
    finally:
        set_overlay(path, None)


def _key(d: Diagnostic) -> tuple[Any, ...]:
    return (d.span.line, d.span.column, d.code, d.message, d.hint) if d.span else (d.code,)


@pytest.fixture
def reuse() -> Iterator[None]:
    parse.reuse_definitions()
    yield
    parse.reuse_definitions(False)


@pytest.mark.parametrize("edited, broken", BREAKS)
def test_a_broken_definition_keeps_the_others_diagnostics(tmp_path: Path, edited: str,
                                                          broken: str) -> None:
    path = tmp_path / "module.mcpl"
    fresh_good = _fresh(path, MODULE)
    (syntax,) = _fresh(path, broken).diagnostics  # what the whole-file parse says
    assert syntax.code == "mcpl-syntax"
    added = broken.count("\n") - MODULE.count("\n")
    expected = _expected(fresh_good.diagnostics, syntax, _lines_of(MODULE, edited), added)
    assert len(expected) >= 3  # the test keeps something

    parse.reuse_definitions()  # as in the server
    try:
        libraries = Libraries()
        set_overlay(path, MODULE)
        good = check_document(path, Effective(), libraries)
        set_overlay(path, broken)
        found = check_with_kept(path, Effective(), libraries, (broken, MODULE, good))
    finally:
        set_overlay(path, None)
        parse.reuse_definitions(False)
    assert found.program is None and not found.loaded
    assert sorted(map(_key, found.diagnostics)) == sorted(map(_key, expected))


def _recording(parsed: list[int]) -> Callable[[], Any]:
    """A `tree_builder` that records how many characters (past leading blanks) each parse
    is given."""
    real = parse.tree_builder()

    class Recorder:
        def parse(self, text: str, file: str) -> Any:
            parsed.append(len(text.lstrip()))
            return real.parse(text, file)

        def parse_or_none(self, text: str, file: str) -> Any:
            parsed.append(len(text.lstrip()))
            return real.parse_or_none(text, file)

    return lambda: Recorder()


def _whole_file_error(text: str, file: str) -> Diagnostic:
    with pytest.raises(MclError) as raised:
        parse._parse_source(text, file, None)
    (found,) = raised.value.diagnostics
    return found


def test_typing_into_a_2000_line_module_parses_only_the_edited_function(
        reuse: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The texts of a statement typed key by key into the last function of the
    benchmark's 2,000-line module, and two other breaks: each error is the whole-file
    parse's, and the parser is given at most three times the edited function's text."""
    text = module_of([KERNELS / f"{name}.mcpl" for name in DEFAULT], 2000)
    assert text.count("\n") >= 2000
    file = "module.mcpl"
    at = body_start(text) - 1
    kernel = len(text) - text.rindex("\n}\n", 0, at)  # the edited function and what follows
    typed = " " + TYPED
    broken = [text[:at] + typed[:n] + text[at:] for n in (6, 15, 24)]
    middle = text.index("for (", len(text) // 2)
    broken += [text[:middle] + "@" + text[middle:], text[:at] + "\n  float y = 1.0\n" + text[at:]]
    parse.parse_source(text, file)
    for case in broken:
        expected = _whole_file_error(case, file)
        parsed: list[int] = []
        monkeypatch.setattr(parse, "tree_builder", _recording(parsed))
        with pytest.raises(MclError) as raised:
            parse.parse_source(case, file)
        monkeypatch.undo()
        assert raised.value.diagnostics == [expected]
        assert parsed and sum(parsed) <= 3 * max(kernel, 8000), (expected, parsed)


@pytest.mark.parametrize("broken", [
    MODULE.replace("out[i] = K;", "out[i] = K; {"),  # an unclosed brace reaches below
    MODULE.replace("out[i] = K;", "/* out[i] = K;"),  # so does an unclosed comment
    MODULE.replace("perfect void b", "perfect void b b"),  # at the definition's first words
])
def test_what_may_reach_past_the_edit_is_the_whole_files_error(reuse: None,
                                                               broken: str) -> None:
    expected = _whole_file_error(broken, "m.mcpl")
    parse.parse_source(MODULE, "m.mcpl")
    with pytest.raises(MclError) as raised:
        parse.parse_source(broken, "m.mcpl")
    assert raised.value.diagnostics == [expected]


@pytest.mark.asyncio(loop_scope="module")
async def test_the_server_publishes_the_error_and_the_other_definitions(
        client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "module.mcpl"
    path.write_text(MODULE)
    uri = open_document(client, path, MODULE)
    good = await wait_for(client, uri, lambda ds: len(ds) == 4)
    broken = BREAKS[0][1]
    replace_text(client, uri, broken)
    found = await wait_for(client, uri, lambda ds: any(d.code == "mcpl-syntax" for d in ds))
    # (0-based lines) `u` in a above stays; `w` in b, the edited function (lines 9 to 14),
    # is left out; c's two move down two lines
    expected = sorted([(12, "mcpl-syntax")] + [
        (d.range.start.line + (2 if d.range.start.line > 14 else 0), d.code) for d in good
        if not 9 <= d.range.start.line <= 14])
    assert sorted((d.range.start.line, d.code) for d in found) == expected
    assert len(expected) == 4
    # and the hint of the second declaration names the first's line now
    twice = next(d for d in found if "already declared" in d.message)
    assert twice.related_information and "line 21" in twice.related_information[0].message
    # an edit that repairs it: the check of the text now, as ever
    replace_text(client, uri, MODULE)
    repaired = await wait_for(client, uri,
                              lambda ds: not any(d.code == "mcpl-syntax" for d in ds))
    assert [(d.range, d.message) for d in repaired] == [(d.range, d.message) for d in good]
    await close_document(client, uri)


@pytest.mark.asyncio(loop_scope="module")
async def test_after_another_change_a_broken_text_keeps_nothing(client: LanguageClient,
                                                                 tmp_path: Path) -> None:
    """The settings sent again (as any change of what the last good check read): that
    check's diagnostics may no longer be what a check would say, so until the text parses
    again only its syntax error is published."""
    path = tmp_path / "module.mcpl"
    path.write_text(MODULE)
    uri = open_document(client, path, MODULE)
    await wait_for(client, uri, lambda ds: len(ds) == 4)
    broken = BREAKS[1][1]
    replace_text(client, uri, broken)
    await wait_for(client, uri, lambda ds: len(ds) == 4 and any(
        d.code == "mcpl-syntax" for d in ds))
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(
        {"mcl": {"debounceMs": 50, "feedback": False}}))
    (only,) = await wait_for(client, uri, lambda ds: len(ds) == 1)
    assert only.code == "mcpl-syntax"
    replace_text(client, uri, broken.replace("K +;", "K + ;"))  # still broken
    await wait_for(client, uri, lambda ds: len(ds) == 1 and ds[0].range.start.character == 17)
    replace_text(client, uri, MODULE)
    await wait_for(client, uri, lambda ds: len(ds) == 4)
    await close_document(client, uri)
