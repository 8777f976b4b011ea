"""Hover of `mcl lsp` on declarations, calls and memory spaces (the hover on uses of
variables, accesses and foreach statements is in test_feedback.py)."""

from __future__ import annotations

import pytest
from pytest_lsp import LanguageClient

from .conftest import (
    KERNELS,
    close_document,
    hover_text,
    make_client_fixture,
    open_document,
    position_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")
client = make_client_fixture({"feedback": False})

GPU_V1 = KERNELS / "matmul" / "gpu_v1.mcpl"
BLACKSCHOLES = KERNELS / "blackscholes" / "perfect.mcpl"


async def test_hover_on_declarations(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
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
    text = BLACKSCHOLES.read_text()
    uri = open_document(client, BLACKSCHOLES)
    await wait_for(client, uri, lambda ds: True)
    own = await hover_text(client, uri, position_of(text, "cnd(d1)"))
    assert "perfect float cnd(float d)" in own
    builtin = await hover_text(client, uri, position_of(text, "sqrt(t[i])"))
    assert "float sqrt(number x)" in builtin and "built-in" in builtin
    await close_document(client, uri)


async def test_hover_on_memory_spaces(client: LanguageClient) -> None:
    text = GPU_V1.read_text()
    uri = open_document(client, GPU_V1)
    await wait_for(client, uri, lambda ds: True)
    for where in ("local float[p] l_a", "local);"):
        value = await hover_text(client, uri, position_of(text, where))
        assert value.startswith("**memory space** `local` of `gpu`"), value
        assert "shared by the units of `threads`" in value
    await close_document(client, uri)
