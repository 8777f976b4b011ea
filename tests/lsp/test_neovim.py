"""A headless Neovim with the configuration docs/editor.md gives for Neovim 0.7 (Debian's
version; later versions run it too): it starts `mcl lsp`, a kernel with an error gets
the diagnostic of `mcl check` at its line and column, completion is enabled and answers,
and the `init_options` values reach the server. The configurations for later versions
are checked to be valid Lua (the Neovim here may not have what they call)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import KERNELS, ROOT, TIMEOUT_S, position_of

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="Neovim is not installed (Debian: apt-get install neovim)")

WAIT_AND_REPORT = """
local kernel, result = ...
vim.cmd("edit " .. kernel)
vim.wait(%d, function() return #vim.diagnostic.get(0) > 0 end, 50)
local out = { diagnostics = {}, omnifunc = vim.bo.omnifunc, completion = {}, hints = {} }
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, message = d.message })
end
local document = vim.lsp.util.make_text_document_params()
local asked = vim.lsp.buf_request_sync(0, "textDocument/completion", {
  textDocument = document, position = { line = %d, character = %d } }, 10000)
for _, answer in pairs(asked or {}) do
  local items = answer.result and (answer.result.items or answer.result) or {}
  for _, item in ipairs(items) do table.insert(out.completion, item.label) end
end
local hinted = vim.lsp.buf_request_sync(0, "textDocument/inlayHint", {
  textDocument = document, range = { start = { line = 0, character = 0 },
  ["end"] = { line = vim.api.nvim_buf_line_count(0), character = 0 } } }, 10000)
for _, answer in pairs(hinted or {}) do
  for _, hint in ipairs(answer.result or {}) do table.insert(out.hints, hint.label) end
end
vim.fn.writefile({ vim.fn.json_encode(out) }, result)
vim.cmd("qa!")
"""


def lua_blocks() -> dict[str, str]:
    """The Lua block of each Neovim section of docs/editor.md, by its title."""
    text = (ROOT / "docs" / "editor.md").read_text()
    out = {}
    for section in re.split(r"\n## ", text)[1:]:
        title = section.split("\n", 1)[0]
        found = re.search(r"```lua\n(.*?)```", section, re.S)
        if title.startswith("Neovim") and found:
            out[title] = found.group(1)
    return out


def documented_configuration() -> str:
    """The Lua block of the section "Neovim 0.7" of docs/editor.md."""
    return next(lua for title, lua in lua_blocks().items() if title.startswith("Neovim 0.7"))


def test_every_neovim_configuration_is_valid_lua(tmp_path: Path) -> None:
    """The configurations for later versions call what 0.7 lacks; they still compile."""
    blocks = lua_blocks()
    assert len(blocks) == 3, list(blocks)
    for title, lua in blocks.items():
        (tmp_path / "config.lua").write_text(lua)
        checked = subprocess.run(
            [NVIM, "--headless", "--clean", "-c",
             f"lua local f, e = loadfile('{tmp_path / 'config.lua'}'); "
             "io.stdout:write(e or 'ok'); vim.cmd('qa!')"],
            capture_output=True, text=True, timeout=60, check=False,
            stdin=subprocess.DEVNULL)
        assert checked.stdout.strip() == "ok", (title, checked.stdout, checked.stderr)
        assert "omnifunc" in lua, title  # each enables completion


def test_neovim_shows_the_diagnostic_of_a_broken_kernel(tmp_path: Path) -> None:
    config = documented_configuration()
    server = ", ".join(json.dumps(a) for a in (sys.executable, "-m", "mcl", "lsp"))
    assert '{ "mcl", "lsp" }' in config
    (tmp_path / "init.lua").write_text(config.replace('{ "mcl", "lsp" }', "{ " + server + " }"))
    text = (KERNELS / "matmul" / "perfect.mcpl").read_text().replace(
        "c[i, j] = sum;", "c[i, j] = summ;")
    kernel = tmp_path / "broken.mcpl"
    kernel.write_text(text)
    script = tmp_path / "report.lua"
    inside = position_of(text, "sum += ")
    script.write_text(WAIT_AND_REPORT % (int(TIMEOUT_S * 1000), inside.line,
                                         inside.character))
    result = tmp_path / "diagnostics.json"
    subprocess.run(
        [NVIM, "--headless", "-u", str(tmp_path / "init.lua"), "-c",
         f"lua loadfile('{script}')('{kernel}', '{result}')"],
        cwd=tmp_path, timeout=TIMEOUT_S + 30, check=False,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report = json.loads(result.read_text())
    (error,) = [d for d in report["diagnostics"] if "summ" in d["message"]]
    where = position_of(text, "summ")
    assert (error["lnum"], error["col"]) == (where.line, where.character)
    # completion is on, and answers through Neovim's client
    assert report["omnifunc"] == "v:lua.vim.lsp.omnifunc"
    assert {"sum", "n", "foreach"} <= set(report["completion"])
    # the init_options values reached the server: `int n` shows its value
    assert "= 2,048" in report["hints"]
