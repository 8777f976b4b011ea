"""`mcl lsp` on `.hdl` files: hover resolves names, definitions jump across files,
symbols list the blocks; an edited description reaches the kernels that use it."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from mcl.lsp.tokens import TYPES

from .conftest import (
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

HWDESCS = ROOT / "hwdescs"
GPU = HWDESCS / "gpu.hdl"


async def test_hover_resolves_names_of_a_description(client: LanguageClient) -> None:
    text = GPU.read_text()
    uri = open_document(client, GPU)
    await wait_for(client, uri, lambda ds: True)
    group = await hover_text(client, uri, position_of(text, "threads {"))
    assert group.startswith("**par_group** `threads`") and "at most 1,024 units" in group
    reference = await hover_text(client, uri, position_of(text, "accelerator.mem", offset=12))
    assert "reference `accelerator.mem`" in reference and "capacity = 4 GB" in reference
    parent = await hover_text(client, uri, position_of(text, "accelerator;"))
    assert parent.startswith("**hardware description** `accelerator`")
    await close_document(client, uri)


async def test_definitions_jump_to_the_parent_and_to_referenced_blocks(
        client: LanguageClient) -> None:
    text = GPU.read_text()
    accelerator = HWDESCS / "accelerator.hdl"
    parent_text = accelerator.read_text()
    uri = open_document(client, GPU)
    await wait_for(client, uri, lambda ds: True)
    parent = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position_of(text, "accelerator;")))
    assert isinstance(parent, lsp.Location) and parent.uri == accelerator.as_uri()
    assert parent.range.start.line == position_of(parent_text, "hardware_description").line
    memory = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position_of(text, "accelerator.mem", offset=12)))
    assert isinstance(memory, lsp.Location) and memory.uri == accelerator.as_uri()
    assert memory.range.start.line == position_of(parent_text, "memory mem").line
    await close_document(client, uri)


async def test_symbols_of_a_description_are_its_blocks(client: LanguageClient) -> None:
    uri = open_document(client, GPU)
    await wait_for(client, uri, lambda ds: True)
    symbols = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(
        lsp.TextDocumentIdentifier(uri)))
    assert symbols is not None
    (gpu,) = symbols
    assert isinstance(gpu, lsp.DocumentSymbol) and gpu.name == "gpu"
    top = {s.name: s.detail for s in gpu.children or []}
    assert top["hierarchy"] == "parallelism" and top["on_chip"] == "memory"
    (hierarchy,) = [s for s in gpu.children or [] if s.name == "hierarchy"]
    assert [s.name for s in hierarchy.children or []] == ["dev", "blocks"]
    await close_document(client, uri)


async def test_an_edited_description_reaches_an_open_kernel(client: LanguageClient,
                                                            tmp_path) -> None:
    """A kernel whose description is open and edited is checked against the edited
    text: a par_group renamed in the buffer makes the kernel's foreach wrong."""
    hdl = tmp_path / "mygpu.hdl"
    hdl_text = GPU.read_text().replace("hardware_description gpu;",
                                       "hardware_description mygpu;").replace(
        "device gpu {", "device mygpu {")
    hdl.write_text(hdl_text)
    kernel = tmp_path / "k.mcpl"
    kernel.write_text("import mygpu;\nmygpu void k(int n, int m, dev float[n, m] a) {\n"
                      "  foreach (int i in n blocks) {\n"
                      "    foreach (int j in m threads) {\n      a[i, j] = 0.0;\n    }\n"
                      "  }\n}\n")
    client.set_configuration({"mcl": {"feedback": False, "debounceMs": 50,
                                      "hwdPath": [str(tmp_path)]}})
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    kernel_uri = open_document(client, kernel)
    assert not errors(await wait_for(client, kernel_uri, lambda ds: True))
    hdl_uri = open_document(client, hdl)
    await wait_for(client, hdl_uri, lambda ds: not errors(ds))
    replace_text(client, hdl_uri, hdl_text.replace("par_group blocks", "par_group groups"))
    (error,) = errors(await wait_for(client, kernel_uri, lambda ds: bool(errors(ds))))
    assert "blocks" in error.message
    await close_document(client, hdl_uri)
    await close_document(client, kernel_uri)
    client.set_configuration({"mcl": {"feedback": False, "debounceMs": 50}})


HOPPER = HWDESCS / "hopper.hdl"
NVIDIA = HWDESCS / "nvidia.hdl"


async def _definition(client: LanguageClient, uri: str, position: lsp.Position
                      ) -> lsp.Location:
    answer = await client.text_document_definition_async(lsp.DefinitionParams(
        lsp.TextDocumentIdentifier(uri), position))
    assert isinstance(answer, lsp.Location), answer
    return answer


async def test_hierarchy_paths_and_connects_resolve(client: LanguageClient) -> None:
    text, nvidia = HOPPER.read_text(), NVIDIA.read_text()
    uri = open_document(client, HOPPER)
    await wait_for(client, uri, lambda ds: True)
    path = "nvidia.hierarchy.blocks.block.threads.thread"
    # the part under the cursor picks the place: the unit at the end, a group inside
    thread = await _definition(client, uri, position_of(text, path, offset=len(path) - 2))
    assert thread.uri == NVIDIA.as_uri()
    assert thread.range.start.line == position_of(nvidia, "par_unit thread").line
    threads = await _definition(client, uri, position_of(text, path, offset=32))
    assert threads.range.start.line == position_of(nvidia, "par_group threads").line
    # connects(mem, smps.smp[*]): the blocks of this description
    connects = "connects(mem, smps.smp[*])"
    mem = await _definition(client, uri, position_of(text, connects, offset=10))
    assert (mem.uri, mem.range.start.line) == (HOPPER.as_uri(),
                                              position_of(text, "memory mem").line)
    smp = await _definition(client, uri, position_of(text, connects, offset=20))
    assert smp.range.start.line == position_of(text, "execution_unit smp").line
    # space(shared): the memory space in the hierarchy
    shared = await _definition(client, uri, position_of(text, "space(shared)", offset=7))
    assert shared.range.start.line == position_of(text, "memory_space shared").line
    await close_document(client, uri)


async def test_a_description_folds_its_blocks(client: LanguageClient) -> None:
    text = HOPPER.read_text()
    uri = open_document(client, HOPPER)
    await wait_for(client, uri, lambda ds: True)
    ranges = await client.text_document_folding_range_async(lsp.FoldingRangeParams(
        lsp.TextDocumentIdentifier(uri)))
    folds = {(r.start_line, r.end_line) for r in ranges or []}
    hierarchy = position_of(text, "parallelism hierarchy {").line
    lines = text.split("\n")
    end = next(i for i in range(hierarchy, len(lines)) if lines[i] == "}")
    assert (hierarchy, end) in folds
    assert (0, position_of(text, "hardware_description").line - 1) in folds  # the header
    await close_document(client, uri)


def _decode(data: list[int]) -> dict[tuple[int, int], str]:
    out, line, start = {}, 0, 0
    for i in range(0, len(data), 5):
        delta_line, delta_start, _, type_, _ = data[i:i + 5]
        line += delta_line
        start = start + delta_start if delta_line == 0 else delta_start
        out[(line, start)] = TYPES[type_]
    return out


async def test_a_description_is_coloured_and_completed(client: LanguageClient) -> None:
    text = HOPPER.read_text()
    uri = open_document(client, HOPPER)
    await wait_for(client, uri, lambda ds: True)
    answer = await client.text_document_semantic_tokens_full_async(
        lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(uri)))
    assert answer is not None
    tokens = _decode(list(answer.data))

    def at(needle: str, offset: int = 0) -> str:
        p = position_of(text, needle, offset=offset)
        return tokens[(p.line, p.character)]

    assert at("// hopper")[:7] == "comment"
    assert at("par_group blocks") == "keyword"
    assert at("par_group blocks", offset=10) == "namespace"
    assert at("max_nr_units = 2147483647") == "property"
    assert at("2147483647") == "number"
    assert at("nvidia.hierarchy.blocks.block.threads.thread", offset=17) == "namespace"
    assert at("connects(mem") == "property"
    assert at("80 GB", offset=3) == "type"
    # completion: the words of descriptions, and after a dot the hierarchy's members
    labels = {i.label: i for i in await _completions(client, uri, position_of(text, "  mem;"))}
    assert labels["par_group"].kind == lsp.CompletionItemKind.Keyword
    assert labels["nvidia"].kind == lsp.CompletionItemKind.Module
    assert labels["capacity"].kind == lsp.CompletionItemKind.Property
    dotted = "nvidia.hierarchy.blocks.block."
    typed = text.replace("  mem;\n", f"  {dotted}\n  mem;\n", 1)
    replace_text(client, uri, typed)
    after = position_of(typed, dotted, offset=len(dotted))
    members = {i.label for i in await _completions(client, uri, after)}
    assert members == {"threads", "shared"}
    await close_document(client, uri)


async def _completions(client: LanguageClient, uri: str, position: lsp.Position
                       ) -> list[lsp.CompletionItem]:
    answer = await client.text_document_completion_async(lsp.CompletionParams(
        lsp.TextDocumentIdentifier(uri), position))
    return answer.items if isinstance(answer, lsp.CompletionList) else list(answer or [])
