"""Go to definition, document symbols and code actions of `mcl lsp`."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    close_document,
    errors,
    hover_text,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
BLACKSCHOLES = KERNELS / "blackscholes" / "perfect.mcpl"
GPU_HDL = ROOT / "hwdescs" / "gpu.hdl"


async def _definition(client: LanguageClient, uri: str, position: lsp.Position
                      ) -> lsp.Location:
    answer = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position))
    assert isinstance(answer, lsp.Location), answer
    return answer


async def test_definitions_of_a_description_and_its_par_group(client: LanguageClient
                                                             ) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
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
    text = BLACKSCHOLES.read_text()
    uri = open_document(client, BLACKSCHOLES)
    await wait_for(client, uri, lambda ds: True)
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
