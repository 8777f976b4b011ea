"""The language features of `mcl lsp` on kernels and descriptions, with one server
(feedback off, so each answer comes from the check alone; `n` has a value for the inlay
hints): go to definition, document symbols, code actions, completion, hover on
declarations, calls and memory spaces, references and rename, folding, workspace symbols,
signature help, inlay hints, semantic tokens and formatting."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from mcl.lsp.tokens import MODIFIERS, TYPES

from .conftest import (
    KERNELS,
    ROOT,
    SERVER_CAPABILITIES,
    close_document,
    errors,
    hover_text,
    make_client_fixture,
    open_document,
    opened,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False, "defines": {"n": 2048}})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
PERFECT = KERNELS / "matmul" / "perfect.mcpl"
BLACKSCHOLES = KERNELS / "blackscholes" / "perfect.mcpl"
GPU_HDL = ROOT / "hwdescs" / "gpu.hdl"
TWIDDLE = ROOT / "tests" / "mcpl" / "paper_style" / "app" / "twiddle.mcpl"
COMPLEX = ROOT / "tests" / "mcpl" / "paper_style" / "lib" / "math" / "complex.mcl"


async def _definition(client: LanguageClient, uri: str, position: lsp.Position
                      ) -> lsp.Location:
    answer = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position))
    assert isinstance(answer, lsp.Location), answer
    return answer


async def test_definitions_of_a_description_and_its_par_group(client: LanguageClient
                                                             ) -> None:
    uri, text = await opened(client, GPU_V1)
    hdl = GPU_HDL.read_text()
    # the level of the function: the header of gpu.hdl
    level = await _definition(client, uri, position_of(text, "gpu void"))
    assert level.uri == GPU_HDL.as_uri()
    assert level.range.start.line == position_of(hdl, "hardware_description gpu;").line
    # the par_group of a foreach: its block in gpu.hdl
    group = await _definition(client, uri, position_of(text, "threads)"))
    assert group.uri == GPU_HDL.as_uri()
    assert group.range.start.line == position_of(hdl, "par_group threads").line
    await close_document(client, uri)


async def test_definitions_of_a_variable_a_function_and_a_constant(client: LanguageClient
                                                                   ) -> None:
    uri, text = await opened(client, BLACKSCHOLES)
    call = await _definition(client, uri, position_of(text, "cnd(d1)"))
    assert call.uri == BLACKSCHOLES.as_uri()
    assert call.range.start == position_of(text, "cnd(float")
    constant = await _definition(client, uri, position_of(text, "A1 +"))
    assert constant.range.start == position_of(text, "A1 =")
    variable = await _definition(client, uri, position_of(text, "sqrtT)"))
    assert variable.range.start == position_of(text, "sqrtT =")
    await close_document(client, uri)


async def test_document_symbols_are_functions_and_their_foreach_nests(
        client: LanguageClient) -> None:
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(
        lsp.TextDocumentIdentifier(uri)))
    assert symbols is not None
    (matmul,) = [s for s in symbols if isinstance(s, lsp.DocumentSymbol) and s.name == "matmul"]
    assert matmul.kind == lsp.SymbolKind.Function
    names = []
    node = matmul
    while node.children:
        (node,) = node.children
        names.append(node.name)
    assert names[:2] == ["foreach bi in n blocks", "foreach bj in nrBlocksM blocks"]
    assert names[-1].startswith("foreach tj in") and names[-1].endswith("threads")
    await close_document(client, uri)


async def test_a_missing_barrier_gets_a_code_action_that_inserts_it(
        client: LanguageClient) -> None:
    path = KERNELS / "matmul" / "fermi_v1.mcpl"
    good = path.read_text()
    last = good.rindex("barrier(shared);")
    broken = good[:last] + good[last + len("barrier(shared);"):]
    uri = open_document(client, path, broken)
    diagnostics = await wait_for(client, uri, lambda ds: any(
        d.code == "mcpl-missing-barrier" for d in ds))
    warning = next(d for d in diagnostics if d.code == "mcpl-missing-barrier")
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        lsp.TextDocumentIdentifier(uri), warning.range,
        lsp.CodeActionContext(diagnostics=[warning])))
    assert actions
    (action,) = [a for a in actions if isinstance(a, lsp.CodeAction)]
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    assert edit.new_text.strip() == "barrier(shared);"
    # at the top of the phase loop, before its store loop: where the second one was not
    assert edit.range.start == position_of(broken, "for (int ei = 0; ei < ELEMS_I; ei++) {\n"
                                           "              int i", offset=-12)
    # Applied, the kernel checks clean again.
    lines = broken.split("\n")
    lines.insert(edit.range.start.line, edit.new_text.rstrip("\n"))
    fixed = "\n".join(lines)
    replace_text(client, uri, fixed)
    await wait_for(client, uri, lambda ds: not any(
        d.code == "mcpl-missing-barrier" for d in ds))
    await close_document(client, uri)


async def test_hover_on_a_description_constant_shows_its_value(client: LanguageClient,
                                                                tmp_path) -> None:
    kernel = tmp_path / "k.mcpl"
    text = ("gpu void k(int n, dev float[n] a) {\n"
            "  int t = gpu.hierarchy.blocks.block.threads.max_nr_units;\n"
            "  foreach (int i in n blocks) {\n    a[i] = 0.0;\n  }\n}\n")
    kernel.write_text(text)
    uri = open_document(client, kernel)
    await wait_for(client, uri, lambda ds: True)
    value = await hover_text(client, uri, position_of(text, "threads.max"))
    # hwdescs/gpu.hdl: `max_nr_units = 1024;` in par_group threads
    assert value == "`gpu.hierarchy.blocks.block.threads.max_nr_units` = 1024 " \
        "(hardware description `gpu`)"
    await close_document(client, uri)


async def test_imports_jump_to_the_module_and_an_edited_module_reaches_its_importer(
        client: LanguageClient, tmp_path) -> None:
    util = tmp_path / "util.mcpl"
    util_text = "perfect float twice(float x) {\n  return 2.0 * x;\n}\n"
    util.write_text(util_text)
    kernel = tmp_path / "k.mcpl"
    text = ("import util;\n\nperfect void k(int n, main float[n] a) {\n"
            "  foreach (int i in n threads) {\n    a[i] = twice(a[i]);\n  }\n}\n")
    kernel.write_text(text)
    uri = open_document(client, kernel)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    module = await _definition(client, uri, position_of(text, "util"))
    assert module.uri == util.as_uri() and module.range.start == lsp.Position(0, 0)
    function = await _definition(client, uri, position_of(text, "twice"))
    assert function.uri == util.as_uri()
    assert function.range.start == position_of(util_text, "twice")
    # An unsaved rename in the module's buffer: the importer no longer finds `twice`.
    util_uri = open_document(client, util)
    await wait_for(client, util_uri, lambda ds: True)
    replace_text(client, util_uri, util_text.replace("twice", "double_it"))
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert "twice" in error.message
    # Closed without saving: the file on disk counts again.
    await close_document(client, util_uri)
    await wait_for(client, uri, lambda ds: not errors(ds))
    await close_document(client, uri)


# ---------------------------------------------------------------------- completion
# Completion: names in scope, the par_groups that may nest at the cursor, memory spaces, nothing
# inside comments.


async def _labels(client: LanguageClient, uri: str, position: lsp.Position
                  ) -> dict[str, lsp.CompletionItem]:
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        lsp.TextDocumentIdentifier(uri), position))
    items = answer.items if isinstance(answer, lsp.CompletionList) else answer or []
    return {item.label: item for item in items}


async def test_the_only_trigger_character_is_the_dot(client: LanguageClient) -> None:
    provider = SERVER_CAPABILITIES[id(client)].completion_provider
    assert provider is not None and list(provider.trigger_characters or []) == ["."]


HOPPER_V2 = KERNELS / "matmul" / "hopper_v2.mcpl"


async def test_a_buffer_that_never_parsed_completes_its_names(client: LanguageClient
                                                              ) -> None:
    original = HOPPER_V2.read_text()
    typed = original[:original.index("for (int kk")] + "float x = TIL"
    uri = open_document(client, HOPPER_V2, typed)
    assert errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    end = lsp.Position(typed.count("\n"), len(typed.split("\n")[-1]))
    labels = await _labels(client, uri, end)
    assert labels["TILE_K"].kind == lsp.CompletionItemKind.Constant
    assert labels["matmul"].kind == lsp.CompletionItemKind.Function
    for name, kind in (("n", "parameter"), ("nrPhases", "variable"), ("bi", "foreach index"),
                       ("l_a", "variable")):
        assert labels[name].kind == lsp.CompletionItemKind.Variable, name
        assert labels[name].detail == kind, name
    assert labels["sqrt"].detail == "built-in"
    assert labels["foreach"].kind == lsp.CompletionItemKind.Keyword
    assert labels["shared"].kind == lsp.CompletionItemKind.Variable  # hopper's spaces
    await close_document(client, uri)


async def test_a_dot_completes_the_description_hierarchy(client: LanguageClient) -> None:
    original = HOPPER_V2.read_text()
    line = "  int most = hopper.hierarchy."
    typed = original.replace("  int nrBlocksN =", line + "\n  int nrBlocksN =")
    uri = open_document(client, HOPPER_V2, typed)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    after = position_of(typed, line, offset=len(line))
    labels = await _labels(client, uri, after)
    assert set(labels) == {"blocks", "global", "constant"}
    assert labels["blocks"].kind == lsp.CompletionItemKind.Class
    replace_text(client, uri, typed.replace(line, line + "blocks.block."))
    labels = await _labels(client, uri, lsp.Position(after.line, after.character + 13))
    assert {"warps", "shared"} <= set(labels) and "foreach" not in labels
    await close_document(client, uri)


async def test_a_dot_after_a_struct_variable_completes_its_fields(
        client: LanguageClient) -> None:
    uri, text = await opened(client, TWIDDLE)
    typed = text.replace("    w.real = cos(angle);", "    w.\n    w.real = cos(angle);")
    replace_text(client, uri, typed)  # does not parse: the last good tree answers
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    after = position_of(typed, "    w.\n", offset=6)
    labels = await _labels(client, uri, after)
    assert set(labels) == {"real", "imag"}
    assert labels["real"].kind == lsp.CompletionItemKind.Field
    assert labels["real"].detail == "field of Complex: float"
    await close_document(client, uri)


async def test_par_groups_that_may_nest_at_the_cursor(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    # inside `foreach (... blocks)`: blocks again (same group nests) and threads below
    inside_blocks = await _labels(client, uri, position_of(text, "foreach (int tj", offset=-1))
    assert inside_blocks["threads"].kind == lsp.CompletionItemKind.Class
    assert inside_blocks["blocks"].kind == lsp.CompletionItemKind.Class
    assert inside_blocks["local"].kind == lsp.CompletionItemKind.Variable  # memory space
    # outside all foreach statements: only the outermost group
    at_top = await _labels(client, uri, position_of(text, "foreach (int bi", offset=-1))
    assert "blocks" in at_top and "threads" not in at_top
    # inside threads: threads only
    inside_threads = await _labels(client, uri, position_of(text, "barrier(local);"))
    assert "threads" in inside_threads and "blocks" not in inside_threads
    await close_document(client, uri)


async def test_names_in_scope_and_not_later_ones(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    labels = await _labels(client, uri, position_of(text, "barrier(local);"))
    for name in ("nrLoads", "l_a", "bi", "tj", "i", "j", "n", "c"):
        assert labels[name].kind == lsp.CompletionItemKind.Variable, name
    assert labels["n"].detail == "parameter: int"
    assert labels["NR_THREADS_M"].kind == lsp.CompletionItemKind.Constant
    assert labels["matmul"].kind == lsp.CompletionItemKind.Function
    assert labels["sqrt"].detail == "built-in"
    assert "sum" not in labels  # declared further down, in a block not yet open
    assert "k" not in labels  # the loop variable of a loop that has ended
    await close_document(client, uri)


async def test_imported_exports_are_offered_and_hidden_names_are_not(
        client: LanguageClient) -> None:
    uri, text = await opened(client, TWIDDLE)
    assert not errors(client.diagnostics[uri])
    labels = await _labels(client, uri, position_of(text, "mul(product"))
    assert labels["magnitude"].kind == lsp.CompletionItemKind.Function
    assert labels["Complex"].kind == lsp.CompletionItemKind.Struct
    assert labels["TWO_PI"].kind == lsp.CompletionItemKind.Constant
    assert labels["w"].kind == lsp.CompletionItemKind.Variable
    await close_document(client, uri)


async def test_nothing_inside_a_comment(client: LanguageClient) -> None:
    uri, text = await opened(client, PERFECT)
    assert await _labels(client, uri, position_of(text, "multiplication")) == {}
    assert await _labels(client, uri, position_of(text, "sum;")) != {}
    await close_document(client, uri)


# ---------------------------------------------------------------------- hover
# Hover on declarations, calls and memory spaces (on uses of variables, accesses and foreach
# statements: test_feedback.py).


async def test_hover_on_declarations(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    param = await hover_text(client, uri, position_of(text, "c,\n"))
    assert param.startswith("**c**: parameter, `float[n, m]`, memory space `dev`")
    local = await hover_text(client, uri, position_of(text, "l_a;"))
    assert local.startswith("**l_a**: variable, `float[p]`, memory space `local`")
    # no space written: a scalar in a thread lives in the innermost default space
    scalar = await hover_text(client, uri, position_of(text, "nrLoads ="))
    assert scalar.startswith("**nrLoads**: variable, `int`, memory space `")
    assert "(the default)" in scalar
    await close_document(client, uri)


async def test_hover_on_calls(client: LanguageClient) -> None:
    uri, text = await opened(client, BLACKSCHOLES)
    own = await hover_text(client, uri, position_of(text, "cnd(d1)"))
    assert "perfect float cnd(float d)" in own
    # on the function's own name where it is defined: the same signature
    assert "perfect float cnd(float d)" in await hover_text(
        client, uri, position_of(text, "cnd(float d)"))
    builtin = await hover_text(client, uri, position_of(text, "sqrt(t[i])"))
    assert "float sqrt(number x)" in builtin and "built-in" in builtin
    await close_document(client, uri)


async def test_hover_on_memory_spaces(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    for where in ("local float[p] l_a", "local);"):
        value = await hover_text(client, uri, position_of(text, where))
        assert value.startswith("**memory space** `local` of `gpu`"), value
        assert "shared by the units of `threads`" in value
    await close_document(client, uri)


# ---------------------------------------------------------------------- references
# Find references and rename, within a function and across imports.


def _at(text: str, needle: str, occurrence: int = 0) -> lsp.Position:
    return position_of(text, needle, occurrence)


def _every(text: str, word: str) -> list[lsp.Position]:
    """Every whole-word occurrence of `word` outside comments, as positions."""
    out = []
    for row, line in enumerate(text.split("\n")):
        code = line.split("//")[0]
        for m in re.finditer(rf"(?<![A-Za-z0-9_]){word}(?![A-Za-z0-9_])", code):
            out.append(lsp.Position(row, m.start()))
    return out


async def test_references_of_a_variable(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    answer = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "nrLoads;"),
        context=lsp.ReferenceContext(include_declaration=True)))
    assert answer is not None
    assert {a.uri for a in answer} == {GPU_V1.as_uri()}
    assert [a.range.start for a in answer] == _every(text, "nrLoads")
    await close_document(client, uri)


async def test_references_and_rename_of_a_function_across_an_import(
        client: LanguageClient) -> None:
    uri, text = await opened(client, TWIDDLE)
    assert not errors(client.diagnostics[uri])
    answer = await client.text_document_references_async(lsp.ReferenceParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "magnitude(product"),
        context=lsp.ReferenceContext(include_declaration=True)))
    assert answer is not None
    library = COMPLEX.read_text()
    found = {(a.uri, a.range.start.line, a.range.start.character) for a in answer}
    expected = {(COMPLEX.as_uri(), p.line, p.character) for p in _every(library, "magnitude")}
    expected |= {(TWIDDLE.as_uri(), p.line, p.character) for p in _every(text, "magnitude")}
    assert found == expected  # the definition, the export line and every call

    edit = await client.text_document_rename_async(lsp.RenameParams(
        text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "magnitude(product"),
        new_name="modulus"))
    assert edit is not None and edit.changes is not None
    assert set(edit.changes) == {COMPLEX.as_uri(), TWIDDLE.as_uri()}
    renamed = _apply(library, edit.changes[COMPLEX.as_uri()])
    assert [p for p in _every(renamed, "magnitude")] == []
    assert "export Complex, assign, add, mul, modulus, conjugateNorm;" in renamed
    assert "perfect float modulus(const Complex a)" in renamed
    assert "modulus(product)" in _apply(text, edit.changes[TWIDDLE.as_uri()])
    await close_document(client, uri)


async def test_rename_to_a_keyword_is_refused(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    with pytest.raises(JsonRpcException, match="keyword"):
        await client.text_document_rename_async(lsp.RenameParams(
            text_document=lsp.TextDocumentIdentifier(uri), position=_at(text, "nrLoads;"),
            new_name="foreach"))
    await close_document(client, uri)


# ---------------------------------------------------------------------- outline
# Folding ranges, workspace symbols and signature help.


async def test_folding_ranges(client: LanguageClient) -> None:
    uri, text = await opened(client, GPU_V1)
    ranges = await client.text_document_folding_range_async(lsp.FoldingRangeParams(
        lsp.TextDocumentIdentifier(uri)))
    assert ranges is not None
    folds = {(r.start_line, r.end_line, r.kind) for r in ranges}
    lines = text.split("\n")
    header_end = next(i for i, line in enumerate(lines) if not line.startswith("//")) - 1
    assert (0, header_end, lsp.FoldingRangeKind.Comment) in folds
    function = position_of(text, "gpu void matmul").line
    last = max(i for i, line in enumerate(lines) if line.startswith("}"))
    assert (function, last, None) in folds
    foreach = position_of(text, "foreach (int tj").line
    assert any(start == foreach and kind is None for start, _, kind in folds)
    await close_document(client, uri)


async def test_workspace_symbols_include_imported_modules(client: LanguageClient) -> None:
    uri = open_document(client, TWIDDLE)
    await wait_for(client, uri, lambda ds: True)
    symbols = await client.workspace_symbol_async(lsp.WorkspaceSymbolParams(query="MAGN"))
    assert symbols is not None
    (magnitude,) = [s for s in symbols if s.name == "magnitude"]
    assert magnitude.kind == lsp.SymbolKind.Function
    assert isinstance(magnitude.location, lsp.Location)
    assert magnitude.location.uri == COMPLEX.as_uri()
    line = position_of(COMPLEX.read_text(), "magnitude(const").line
    assert magnitude.location.range.start.line == line
    await close_document(client, uri)


async def test_signature_help_while_a_call_is_typed(client: LanguageClient) -> None:
    uri, text = await opened(client, BLACKSCHOLES)

    async def help_at(position: lsp.Position) -> lsp.SignatureHelp | None:
        return await client.text_document_signature_help_async(lsp.SignatureHelpParams(
            text_document=lsp.TextDocumentIdentifier(uri), position=position))

    own = await help_at(position_of(text, "cnd(d1)", offset=4))
    assert own is not None and own.signatures[0].label == "perfect float cnd(float d)"
    assert own.active_parameter == 0
    # an unfinished call: the file does not parse, the last good check still knows `max`
    typing = text.replace("float d2 = d1 - v * sqrtT;", "float d2 = max(d1, ")
    replace_text(client, uri, typing)
    await wait_for(client, uri, lambda ds: any(d.code == "mcpl-syntax" for d in ds))
    builtin = await help_at(position_of(typing, "max(d1, ", offset=8))
    assert builtin is not None
    assert builtin.signatures[0].label == "number max(number a, number b)"
    assert builtin.active_parameter == 1
    assert await help_at(position_of(typing, "float d2")) is None  # not in a call
    await close_document(client, uri)


# ---------------------------------------------------------------------- inlay hints
# Inlay hints: default memory spaces, description constants, -D values.


GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"


async def _hints(client: LanguageClient, uri: str, text: str
                 ) -> dict[tuple[int, int], lsp.InlayHint]:
    last = text.count("\n")
    answer = await client.text_document_inlay_hint_async(lsp.InlayHintParams(
        text_document=lsp.TextDocumentIdentifier(uri),
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(last, 0))))
    return {(h.position.line, h.position.character): h for h in answer or []}


async def test_default_spaces_values_and_constants(client: LanguageClient) -> None:
    text = GPU_V1.read_text().replace(
        "  int nrBlocksM =",
        "  int most = gpu.hierarchy.blocks.block.threads.max_nr_units;\n  int nrBlocksM =")
    uri = open_document(client, GPU_V1, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    hints = await _hints(client, uri, text)
    # `int n`: its value from the settings, after the name
    after_n = position_of(text, "n, int m", offset=1)
    assert hints[(after_n.line, after_n.character)].label == "= 2,048"
    # a parameter with its space written gets no space hint
    assert (position_of(text, "dev float[n, m] c").line,
            position_of(text, "dev float[n, m] c").character) not in hints
    # a scalar without a space: the default one, the same the hover names
    decl = position_of(text, "int nrLoads")
    space = hints[(decl.line, decl.character)]
    assert space.kind == lsp.InlayHintKind.Type
    hover = await hover_text(client, uri, position_of(text, "nrLoads ="))
    assert f"memory space `{space.label}` (the default)" in hover
    # the description constant: its value
    end = position_of(text, "max_nr_units;", offset=len("max_nr_units"))
    assert hints[(end.line, end.character)].label == "= 1024"  # as the hover shows it
    await close_document(client, uri)


# ---------------------------------------------------------------------- semantic tokens
# Semantic tokens: what each word is, in the client's units.


GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"


def _decode(data: list[int]) -> dict[tuple[int, int], tuple[int, str, set[str]]]:
    out = {}
    line = start = 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, length, type_, mods = data[i:i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        out[(line, start)] = (length, TYPES[type_],
                              {m for j, m in enumerate(MODIFIERS) if mods & (1 << j)})
    return out


async def test_words_are_classified(client: LanguageClient) -> None:
    # the emoji counts two UTF-16 units (the protocol's default encoding here)
    text = GPU_V1.read_text().replace("      local float[p] l_a;",
                                      "      /* 😀 */ local float[p] l_a;")
    uri = open_document(client, GPU_V1, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    legend = SERVER_CAPABILITIES[id(client)].semantic_tokens_provider
    assert legend is not None
    answer = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri)))
    assert answer is not None
    tokens = _decode(list(answer.data))

    def at(needle: str, occurrence: int = 0, offset: int = 0) -> tuple[int, str, set[str]]:
        p = position_of(text, needle, occurrence, offset)
        line = text.split("\n")[p.line]
        units = len(line[:p.character].encode("utf-16-le")) // 2
        return tokens[(p.line, units)]

    assert at("// change")[1] == "comment"
    assert at("gpu void") == (3, "namespace", set())
    assert at("void matmul") == (4, "type", {"defaultLibrary"})
    assert at("matmul(") == (6, "function", {"declaration"})
    assert at("n, int m") == (1, "parameter", {"declaration"})
    assert at("dev float[n, m] c") == (3, "modifier", set())
    assert at("foreach (int bi") == (7, "keyword", set())
    assert at("256")[1] == "number"
    assert at("threads)") == (7, "namespace", set())
    assert at("local float[p]") == (5, "modifier", set())  # after the emoji
    assert at("l_a;") == (3, "variable", {"declaration"})
    assert at("l_a[k]") == (3, "variable", set())
    assert at("NR_THREADS_M - 1") == (12, "variable", {"readonly"})
    assert at("nrLoads; l++") == (7, "variable", set())
    await close_document(client, uri)


async def _tokens(client: LanguageClient, uri: str
                  ) -> dict[tuple[int, int], tuple[int, str, set[str]]]:
    answer = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri)))
    assert answer is not None
    return _decode(list(answer.data))


async def test_words_keep_their_colours_while_the_text_does_not_parse(
        client: LanguageClient) -> None:
    text = HOPPER_V2.read_text()
    uri = open_document(client, HOPPER_V2, text)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    parsed = await _tokens(client, uri)
    typing = text.replace("  int nrPhases =", "  int half = (n + ;\n  int nrPhases =")
    client.diagnostics.pop(uri, None)
    replace_text(client, uri, typing)
    assert errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    broken = await _tokens(client, uri)
    assert len(broken) >= len(parsed)  # the new line's words too
    use = position_of(typing, "(p + TILE_K")
    assert broken[(use.line, use.character + 1)] == (1, "parameter", set())
    assert broken[(use.line, use.character + 5)] == (6, "variable", {"readonly"})
    blocks = position_of(typing, "nrBlocksN blocks", offset=10)
    assert broken[(blocks.line, blocks.character)] == (6, "namespace", set())
    await close_document(client, uri)


# ---------------------------------------------------------------------- formatting
# Formatting: only layout changes, comments are never lost.


GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"


async def _format(client: LanguageClient, uri: str) -> list[lsp.TextEdit]:
    answer = await client.text_document_formatting_async(lsp.DocumentFormattingParams(
        lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(2, True)))
    return list(answer or [])


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character),
                    reverse=True):
        a = starts[e.range.start.line] + e.range.start.character
        b = starts[e.range.end.line] + e.range.end.character
        text = text[:a] + e.new_text + text[b:]
    return text


async def test_a_squeezed_function_is_laid_out_and_comments_stay(
        client: LanguageClient) -> None:
    original = PERFECT.read_text()
    body = original[original.index("perfect void"):]
    squeezed = original.replace(body, re.sub(r"\s+", " ", body).strip() + "\n")
    uri = open_document(client, PERFECT, squeezed)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    edits = await _format(client, uri)
    assert len(edits) == 1
    formatted = _apply(squeezed, edits)
    assert formatted.splitlines()[:2] == original.splitlines()[:2]  # the comment header
    assert re.sub(r"\s+", "", formatted) == re.sub(r"\s+", "", squeezed)  # only layout
    assert len(formatted.splitlines()) > len(squeezed.splitlines())
    client.diagnostics.pop(uri, None)
    replace_text(client, uri, formatted)
    await wait_for(client, uri, lambda ds: True)  # published after the new check
    assert await _format(client, uri) == []  # formatted text stays as it is
    await close_document(client, uri)


async def test_a_function_with_comments_inside_is_left_alone(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    squeezed = text.replace("  int nrBlocksM =", "int    nrBlocksM =")
    uri = open_document(client, GPU_V1, squeezed)
    assert not errors(await wait_for(client, uri, lambda ds: True))
    assert await _format(client, uri) == []
    await close_document(client, uri)


async def test_a_file_with_errors_is_not_formatted(client: LanguageClient) -> None:
    broken = PERFECT.read_text().replace("float sum = 0.0;", "float sum = ;")
    uri = open_document(client, PERFECT, broken)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    assert await _format(client, uri) == []
    await close_document(client, uri)
