"""Diagnostics of `mcl lsp`: the same as `mcl check` / `mcl hwd show`, at their ranges."""

from __future__ import annotations

import pytest
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    ROOT,
    close_document,
    errors,
    has_feedback,
    make_client_fixture,
    open_document,
    position_of,
    replace_text,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

MATMUL = KERNELS / "matmul" / "perfect.mcpl"


async def test_a_broken_kernel_has_the_check_s_error_at_its_range(
        client: LanguageClient) -> None:
    text = MATMUL.read_text().replace("c[i, j] = sum;", "c[i, j] = summ;")
    uri = open_document(client, MATMUL, text)
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert error.code == "mcpl-unknown-name" and "summ" in error.message
    start = position_of(text, "summ")
    assert error.range.start == start
    assert error.range.end == lsp.Position(start.line, start.character + 4)
    # The hint travels as related information, at the same place.
    assert error.related_information and "did you mean 'sum'" in \
        error.related_information[0].message
    await close_document(client, uri)


async def test_an_edit_that_fixes_the_error_clears_it(client: LanguageClient) -> None:
    text = MATMUL.read_text()
    uri = open_document(client, MATMUL, text.replace("float sum = 0.0;", "float sum = 0.0"))
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert error.code == "mcpl-syntax"
    replace_text(client, uri, text)
    assert list(await wait_for(client, uri, lambda ds: not errors(ds))) == []
    await close_document(client, uri)


async def test_a_syntax_error_in_a_description(client: LanguageClient, tmp_path) -> None:
    good = (ROOT / "hwdescs" / "gpu.hdl").read_text()
    broken = good.replace("par_group", "par_grop", 1)
    (tmp_path / "gpu.hdl").write_text(good)  # the editor's buffer differs from the disk
    uri = open_document(client, tmp_path / "gpu.hdl", broken)
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert error.code == "hdl-syntax"
    assert error.range.start.line == position_of(broken, "par_grop").line
    replace_text(client, uri, good)
    await wait_for(client, uri, lambda ds: not errors(ds))
    await close_document(client, uri)


async def test_a_description_with_a_wrong_reference(client: LanguageClient, tmp_path) -> None:
    text = (ROOT / "hwdescs" / "gpu.hdl").read_text()
    assert "specializes accelerator" in text
    broken = text.replace("specializes accelerator", "specializes acelerator")
    (tmp_path / "gpu.hdl").write_text(text)
    uri = open_document(client, tmp_path / "gpu.hdl", broken)
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert "acelerator" in error.message
    assert error.range.start == position_of(broken, "acelerator")
    await close_document(client, uri)


async def test_no_feedback_when_it_is_switched_off(client: LanguageClient) -> None:
    uri = open_document(client, MATMUL)
    assert list(await wait_for(client, uri, lambda ds: True)) == []
    assert not has_feedback(client.diagnostics[uri])
    await close_document(client, uri)


async def test_an_incremental_edit_is_applied_before_the_check(client: LanguageClient
                                                               ) -> None:
    """Editors send the changed range only (incremental sync): the fix of one word."""
    text = MATMUL.read_text().replace("c[i, j] = sum;", "c[i, j] = summ;")
    uri = open_document(client, MATMUL, text)
    await wait_for(client, uri, lambda ds: bool(errors(ds)))
    start = position_of(text, "summ")
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [lsp.TextDocumentContentChangePartial(
            range=lsp.Range(start, lsp.Position(start.line, start.character + 4)),
            text="sum")]))
    assert list(await wait_for(client, uri, lambda ds: not errors(ds))) == []
    await close_document(client, uri)


async def test_an_error_in_an_imported_module_stands_on_the_import_line(
        client: LanguageClient, tmp_path) -> None:
    (tmp_path / "lib").mkdir()
    library = "module shapes;\nexport area;\n\nperfect float area(float w) {\n  return w * ;\n}\n"
    (tmp_path / "lib" / "shapes.mcpl").write_text(library)
    text = ("// a kernel\nimport perfect;\nimport lib.shapes;\n\n"
            "perfect void k(int n, float[n] a) {\n"
            "  foreach (int i in n threads) { a[i] = area(a[i]); }\n}\n")
    (tmp_path / "main.mcpl").write_text(text)
    uri = open_document(client, tmp_path / "main.mcpl")
    (error,) = errors(await wait_for(client, uri, lambda ds: bool(errors(ds))))
    assert error.code == "mcpl-syntax"
    line = position_of(text, "import lib.shapes;")
    assert error.range.start == line
    assert error.range.end == lsp.Position(line.line, len("import lib.shapes;"))
    assert error.related_information is not None
    real = error.related_information[0].location
    assert real.uri == (tmp_path / "lib" / "shapes.mcpl").resolve().as_uri()
    assert real.range.start == position_of(library, ";\n}")
    await close_document(client, uri)
