"""A headless Neovim with the configuration docs/editor.md gives for Neovim 0.7 (Debian's
version; later versions run it too): it starts `mcl lsp`, and a kernel with an error
gets the diagnostic of `mcl check`, at its line and column."""

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
local out = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, { lnum = d.lnum, col = d.col, message = d.message })
end
vim.fn.writefile({ vim.fn.json_encode(out) }, result)
vim.cmd("qa!")
"""


def documented_configuration() -> str:
    """The Lua block of the section "Neovim 0.7" of docs/editor.md."""
    text = (ROOT / "docs" / "editor.md").read_text()
    section = text[text.index("## Neovim 0.7"):]
    return re.search(r"```lua\n(.*?)```", section, re.S).group(1)  # type: ignore[union-attr]


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
    script.write_text(WAIT_AND_REPORT % int(TIMEOUT_S * 1000))
    result = tmp_path / "diagnostics.json"
    subprocess.run(
        [NVIM, "--headless", "-u", str(tmp_path / "init.lua"), "-c",
         f"lua loadfile('{script}')('{kernel}', '{result}')"],
        cwd=tmp_path, timeout=TIMEOUT_S + 30, check=False,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    diagnostics = json.loads(result.read_text())
    (error,) = [d for d in diagnostics if "summ" in d["message"]]
    where = position_of(text, "summ")
    assert (error["lnum"], error["col"]) == (where.line, where.character)
